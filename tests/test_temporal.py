"""Tool calls as Temporal activities, against a real dev server and real
``command-handle worker`` processes (docs/temporal.md).

Who ran a call is read from the tool itself (it prints the WORKER_NAME its
worker passes on with --inherit-env); what is left running, from the process
table; what Temporal recorded, from the workflow history fetched with the
client.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio")

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError

from command_handle.form import escape
from command_handle.temporal import (
    DEFAULT_MAX_PAYLOAD,
    ToolCall,
    ToolCallWorkflow,
    encoded_size,
    fit_result,
)
from tests.processes import alive, wait_dead
from tests.temporal_server import WorkerProcess

PY = "/usr/bin/python3"

WHOSE = "import os, sys, time; time.sleep(float(sys.argv[1])); print(os.environ['WORKER_NAME'])"
HOLD = """
import os, subprocess, sys, time
child = subprocess.Popen(["/bin/sleep", sys.argv[2]])
with open(sys.argv[1], "a") as marker:
    marker.write(f"{os.environ.get('WORKER_NAME', '')} {os.getpid()} {child.pid}\\n")
print("holding", os.getpid(), child.pid, flush=True)
time.sleep(float(sys.argv[2]))
child.wait()
print("done", flush=True)
"""
SECRET = """
import os, sys, time
key = os.environ["API_KEY"]
print("the key is", key, flush=True)
time.sleep(float(sys.argv[1]))
print("the key was", key, file=sys.stderr, flush=True)
sys.exit(3)
"""
BIG = "import sys; sys.stdout.write('START' + 'x' * 3_000_000 + 'END\\n')"
NOWHERE = ("--temporal-address", "127.0.0.1:1", "--task-queue", "nowhere")
CANARY = "sk-canary-" + uuid.uuid4().hex


def _handle(name: str, code: str, *argv: Any, **fields: Any) -> dict[str, Any]:
    properties = {
        item["$"]: {"type": "string"} for item in argv if isinstance(item, dict) and "$" in item
    }
    document: dict[str, Any] = {
        "name": name,
        "description": f"test tool {name}",
        "handler": "command",
        "command": PY,
        "arguments": ["-I", "-c", escape(code), *argv],
        "parameters": {"type": "object", "properties": properties},
    }
    document.update(fields)
    return document


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("temporal-tools")
    documents = [
        _handle("whose", WHOSE, {"$": "seconds"}),
        _handle("hold", HOLD, {"$": "marker"}, {"$": "seconds"}),
        _handle(
            "secret",
            SECRET,
            {"$": "seconds"},
            security={"scheme": "apiKey", "name": "canary-api"},
            environment={"API_KEY": {"$credential": "value"}},
        ),
        _handle("big", BIG),
    ]
    for document in documents:
        (folder / f"{document['name']}.json").write_text(json.dumps(document))
    return str(folder)


@pytest.fixture
def queue() -> str:
    return f"tools-{uuid.uuid4().hex[:12]}"


class Workers:
    """Worker processes of one test, stopped (and checked) at its end."""

    def __init__(self, address: str, tools: str, queue: str, logs: Path) -> None:
        self.address, self.tools, self.queue, self.logs = address, tools, queue, logs
        self.started: list[WorkerProcess] = []

    def start(
        self, name: str, *extra: str, environment: dict[str, str] | None = None
    ) -> WorkerProcess:
        worker = WorkerProcess(
            self.address,
            self.queue,
            [self.tools],
            self.logs / f"worker-{name}.log",
            extra=["--inherit-env", "WORKER_NAME", "--heartbeat-timeout", "3", *extra],
            environment={"WORKER_NAME": name, **(environment or {})},
        )
        self.started.append(worker)
        return worker


@pytest.fixture
def workers(temporal_address: str, tools: str, queue: str, tmp_path: Path) -> Iterator[Workers]:
    made = Workers(temporal_address, tools, queue, tmp_path)
    yield made
    for worker in made.started:
        worker.stop(signal.SIGKILL if worker.process.poll() is None else 0)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def _start(client: Client, queue: str, call: ToolCall) -> WorkflowHandle[Any, Any]:
    return await client.start_workflow(
        ToolCallWorkflow.run, call, id=f"call-{uuid.uuid4().hex}", task_queue=queue
    )


def _marker_lines(path: Path, count: int = 1, seconds: float = 30.0) -> list[list[str]]:
    """The marker file's lines (worker name, tool pid, child pid), once there are ``count``."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            lines = [line.split() for line in path.read_text().splitlines() if line.strip()]
            if len(lines) >= count and all(len(line) == 3 for line in lines):
                return lines
        time.sleep(0.05)
    raise AssertionError(f"the tool did not start within {seconds} s")


def _payload_texts(history_json: str) -> list[bytes]:
    """Every payload's data in a history's JSON form, decoded."""
    found: list[bytes] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("data"), str) and "metadata" in value:
                found.append(base64.b64decode(value["data"]))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(history_json))
    return found


# -- no server needed -------------------------------------------------------------


def test_a_result_over_the_payload_limit_is_cut_by_head_and_tail_and_says_so() -> None:
    body = "START" + "x" * 2_000_000 + "END"
    result = {"is_error": False, "content": body[:60_000], "structured": {"stdout": body}}
    fitted = fit_result(result, 100_000)
    assert encoded_size(fitted) <= 100_000
    assert fitted["structured"]["stdout"].startswith("START")
    assert fitted["structured"]["stdout"].endswith("END")
    assert "bytes omitted" in fitted["structured"]["stdout"]
    assert "cut to fit" in fitted["content"]
    small = {"is_error": False, "content": "ok", "structured": None}
    assert fit_result(small) is small
    many = {"is_error": False, "content": "x" * 500, "structured": list(range(200_000))}
    fitted = fit_result(many, 50_000)
    assert encoded_size(fitted) <= 50_000 and fitted["structured"] is None
    assert "did not fit" in fitted["content"]


def test_the_call_options_come_from_the_workers_toolbox() -> None:
    from command_handle import CommandHandle, Policy, Toolbox
    from command_handle.temporal import ToolActivities, ToolCallOptions
    from command_handle.toolbox import Tool

    def tool(name: str, **fields: Any) -> Tool:
        document = {"name": name, "handler": "command", "command": "/bin/true", **fields}
        return Tool.from_handle(CommandHandle.load(document))

    toolbox = Toolbox(
        [
            tool("quick", timeout=5, annotations={"idempotentHint": True}),
            tool("slow", timeout=500),
            tool("plain"),
        ],
        policy=Policy(timeout=120, kill_grace=3),
    )
    activities = ToolActivities(toolbox, heartbeat_timeout=7)
    options = {name: run(activities.tool_options(name)) for name in ("quick", "slow", "plain", "?")}
    assert options["quick"] == ToolCallOptions(5, 3, idempotent=True, heartbeat_timeout_s=7)
    assert options["slow"] == ToolCallOptions(120, 3, idempotent=False, heartbeat_timeout_s=7)
    assert options["plain"] == options["?"] == options["slow"]


def test_the_worker_command_refuses_an_unreachable_server(tools: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "command_handle", "worker", tools, *NOWHERE],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "cannot serve on 127.0.0.1:1" in done.stderr


# -- against the dev server --------------------------------------------------------


def test_forty_calls_spread_across_two_workers(workers: Workers, queue: str) -> None:
    workers.start("alpha")
    workers.start("beta")

    async def scenario() -> list[dict[str, Any]]:
        client = await Client.connect(workers.address)
        return await asyncio.gather(
            *(
                client.execute_workflow(
                    ToolCallWorkflow.run,
                    ToolCall("whose", {"seconds": "0.3"}),
                    id=f"call-{uuid.uuid4().hex}",
                    task_queue=queue,
                )
                for _ in range(40)
            )
        )

    results = run(scenario())
    assert all(not result["is_error"] for result in results), results
    names = [result["content"] for result in results]
    assert set(names) == {"alpha", "beta"}, names


def test_a_worker_killed_mid_call_fails_the_call_once_and_the_other_takes_new_calls(
    workers: Workers, queue: str, tmp_path: Path
) -> None:
    first = workers.start("alpha")
    second = workers.start("beta")
    marker = tmp_path / "ran"

    async def scenario() -> tuple[dict[str, Any], list[list[str]], dict[str, Any]]:
        client = await Client.connect(workers.address)
        handle = await _start(
            client, queue, ToolCall("hold", {"marker": str(marker), "seconds": "60"})
        )
        lines = await asyncio.to_thread(_marker_lines, marker)
        victim = first if lines[0][0] == "alpha" else second
        os.kill(victim.pid, signal.SIGKILL)
        lost = await handle.result()
        after = await client.execute_workflow(
            ToolCallWorkflow.run,
            ToolCall("whose", {"seconds": "0"}),
            id=f"call-{uuid.uuid4().hex}",
            task_queue=queue,
        )
        return lost, lines, after

    lost, lines, after = run(scenario())
    orphans = [int(pid) for pid in lines[0][1:]]
    try:
        assert lost["is_error"]
        assert "was lost" in lost["content"] and "not run again" in lost["content"]
        assert lost["structured"] == {"error": "lost", "timeout": "heartbeat"}
        assert len(marker.read_text().splitlines()) == 1  # never run a second time
        survivor = "beta" if lines[0][0] == "alpha" else "alpha"
        assert after == {"is_error": False, "content": survivor, "structured": after["structured"]}
    finally:
        # A worker killed with SIGKILL cannot stop its tool: the test does.
        for pid in orphans:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_cancelling_the_workflow_kills_the_tools_process_tree(
    workers: Workers, queue: str, tmp_path: Path
) -> None:
    workers.start("alpha")
    marker = tmp_path / "ran"

    async def scenario() -> tuple[list[int], BaseException | None, list[str]]:
        client = await Client.connect(workers.address)
        handle = await _start(
            client, queue, ToolCall("hold", {"marker": str(marker), "seconds": "300"})
        )
        lines = await asyncio.to_thread(_marker_lines, marker)
        pids = [int(pid) for pid in lines[0][1:]]
        assert all(alive(pid) for pid in pids)
        await handle.cancel()
        error: BaseException | None = None
        try:
            await handle.result()
        except WorkflowFailureError as exc:
            error = exc.cause
        history = await handle.fetch_history()
        kinds = [event.WhichOneof("attributes") for event in history.events]
        return pids, error, [kind or "" for kind in kinds]

    pids, error, kinds = run(scenario())
    assert isinstance(error, CancelledError)
    # The cancel waited for the activity to be cancelled on the worker, which
    # killed the tool and its child before reporting.
    assert "activity_task_canceled_event_attributes" in kinds
    assert wait_dead(pids, 10) == []


def test_a_credential_never_enters_the_history_nor_the_heartbeats(
    workers: Workers, queue: str
) -> None:
    workers.start(
        "alpha", "--credential", "canary-api=CANARY_KEY", environment={"CANARY_KEY": CANARY}
    )

    async def scenario() -> tuple[dict[str, Any], list[Any], list[str], list[bytes]]:
        client = await Client.connect(workers.address)
        finished = await _start(
            client, queue, ToolCall("secret", {"seconds": "4"}, principal="alice")
        )
        cancelled = await _start(client, queue, ToolCall("secret", {"seconds": "300"}))
        described = await _start(client, queue, ToolCall("secret", {}, require_approval=True))
        beats: list[Any] = []
        for _ in range(200):  # the running calls' progress, as Temporal shows it
            for handle in (finished, cancelled):
                description = await handle.describe()
                for pending in description.raw_description.pending_activities:
                    if pending.HasField("heartbeat_details"):
                        beats += await client.data_converter.decode(
                            pending.heartbeat_details.payloads
                        )
            if any("[credential]" in beat.get("line", "") for beat in beats):
                break
            await asyncio.sleep(0.1)
        result = await finished.result()
        await cancelled.cancel()
        with pytest.raises(WorkflowFailureError):
            await cancelled.result()
        plan = None
        while plan is None:  # the plan, with the credential masked, is in the history too
            plan = await described.query(ToolCallWorkflow.plan)
            await asyncio.sleep(0.05)
        assert plan["plan"]["environment"]["API_KEY"] == "********"
        await described.signal(ToolCallWorkflow.deny)
        await described.result()
        handles = (finished, cancelled, described)
        histories = [(await handle.fetch_history()) for handle in handles]
        texts = [history.to_json() for history in histories]
        raw = [event.SerializeToString() for history in histories for event in history.events]
        payloads = [data for text in texts for data in _payload_texts(text)]
        return result, beats, texts, raw + payloads

    result, beats, texts, blobs = run(scenario())
    assert result["is_error"] and "exit code 3" in result["content"]
    assert "the key is [credential]" in result["content"]
    assert any(beat["line"] == "the key is [credential]" for beat in beats), beats
    encoded = base64.b64encode(CANARY.encode()).decode()
    for text in texts:
        assert CANARY not in text and encoded not in text
    assert len(blobs) > 10
    for blob in blobs:
        assert CANARY.encode() not in blob
    assert all(CANARY not in json.dumps(beat) for beat in beats)


def test_approval_by_signal_runs_the_plan_with_the_right_hash_and_nothing_with_a_wrong_one(
    workers: Workers, queue: str, tmp_path: Path
) -> None:
    workers.start("alpha")

    async def approve(client: Client, marker: Path, wrong: bool) -> tuple[dict[str, Any], str]:
        call = ToolCall("hold", {"marker": str(marker), "seconds": "0"}, require_approval=True)
        handle = await _start(client, queue, call)
        for _ in range(300):
            shown = await handle.query(ToolCallWorkflow.plan)
            if shown is not None:
                break
            await asyncio.sleep(0.05)
        assert shown is not None and shown["plan"]["argv"][-2:] == [str(marker), "0"]
        digest: str = shown["plan_hash"]
        assert not marker.exists()  # nothing runs before the approval
        given = ("0" if digest[0] != "0" else "1") + digest[1:] if wrong else digest
        await handle.signal(ToolCallWorkflow.approve, given)
        return await handle.result(), digest

    async def scenario() -> tuple[Any, Any]:
        client = await Client.connect(workers.address)
        right = await approve(client, tmp_path / "right", wrong=False)
        wrong = await approve(client, tmp_path / "wrong", wrong=True)
        return right, wrong

    (right, _), (wrong, _) = run(scenario())
    assert not right["is_error"] and "done" in right["content"]
    assert (tmp_path / "right").exists()
    assert wrong["is_error"] and "was not run" in wrong["content"]
    assert not (tmp_path / "wrong").exists()


def test_a_denied_call_runs_nothing(workers: Workers, queue: str, tmp_path: Path) -> None:
    workers.start("alpha")
    marker = tmp_path / "ran"

    async def scenario() -> dict[str, Any]:
        client = await Client.connect(workers.address)
        call = ToolCall("hold", {"marker": str(marker), "seconds": "0"}, require_approval=True)
        handle = await _start(client, queue, call)
        await handle.signal(ToolCallWorkflow.deny, "not today")
        result: dict[str, Any] = await handle.result()
        return result

    result = run(scenario())
    assert (
        result["is_error"] and "declined" in result["content"] and "not today" in result["content"]
    )
    assert not marker.exists()


def test_output_beyond_the_payload_limit_is_cut_and_the_call_succeeds(
    workers: Workers, queue: str
) -> None:
    workers.start("alpha")

    async def scenario() -> dict[str, Any]:
        client = await Client.connect(workers.address)
        result: dict[str, Any] = await client.execute_workflow(
            ToolCallWorkflow.run,
            ToolCall("big"),
            id=f"call-{uuid.uuid4().hex}",
            task_queue=queue,
        )
        return result

    result = run(scenario())
    assert not result["is_error"]
    assert encoded_size(result) <= DEFAULT_MAX_PAYLOAD
    assert "cut to fit" in result["content"]
    stdout = result["structured"]["stdout"]
    assert stdout.startswith("START") and stdout.rstrip().endswith("END")
    assert "bytes omitted" in stdout
    assert result["structured"]["stdout_bytes"] == 3_000_009


def test_sigterm_finishes_short_calls_cancels_long_ones_and_exits_0(
    workers: Workers, queue: str, tmp_path: Path
) -> None:
    worker = workers.start("alpha", "--shutdown-grace", "4")
    marker = tmp_path / "ran"

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], list[int], int]:
        client = await Client.connect(workers.address)
        short = await _start(client, queue, ToolCall("whose", {"seconds": "2"}))
        long = await _start(
            client, queue, ToolCall("hold", {"marker": str(marker), "seconds": "300"})
        )
        lines = await asyncio.to_thread(_marker_lines, marker)
        code = await asyncio.to_thread(worker.stop, signal.SIGTERM, 60)
        # The workflows finish on the next worker to poll the queue.
        await asyncio.to_thread(workers.start, "beta")
        finished: dict[str, Any] = await short.result()
        stopped: dict[str, Any] = await long.result()
        return finished, stopped, [int(pid) for pid in lines[0][1:]], code

    finished, stopped, pids, code = run(scenario())
    assert code == 0, worker.text()
    assert finished == {"is_error": False, "content": "alpha", "structured": finished["structured"]}
    assert stopped["is_error"] and "shut down before it finished" in stopped["content"]
    assert stopped["structured"]["error"] == "worker shut down"
    assert wait_dead([worker.pid, *pids], 10) == []
    text = worker.text()
    assert "worker stopped" in text
    assert "PyGILState" not in text and "Fatal Python error" not in text


def test_a_workflow_of_ones_own_runs_tool_calls_on_a_worker_of_ones_own(
    temporal_address: str, queue: str
) -> None:
    """tool_worker and ToolActivities in the application's process, hosting
    the application's workflow, which calls execute_tool_call."""
    from temporalio.worker import Worker

    from command_handle import Toolbox
    from command_handle.temporal import ToolActivities, tool_worker, workflow_runner
    from tests.temporal_workflows import CountThenList

    async def scenario() -> list[dict[str, Any]]:
        client = await Client.connect(temporal_address)
        activities = ToolActivities(Toolbox.load("fixtures/handles"))
        worker: Worker = tool_worker(
            client,
            queue,
            activities,
            workflows=[CountThenList],
            workflow_runner=workflow_runner(),
        )
        async with worker:
            results: list[dict[str, Any]] = await client.execute_workflow(
                CountThenList.run, "tools as data", id=f"own-{uuid.uuid4().hex}", task_queue=queue
            )
            return results

    counted, listed = run(scenario())
    assert counted["structured"] == {"counts": "      0       3      13\n"}
    assert not listed["is_error"] and "agents.md" in listed["content"]


@pytest.mark.parametrize(
    "address", ["nonsense", "127.0.0.1:http", "127.0.0.1:99999", "http://127.0.0.1:7233", ""]
)
def test_the_worker_command_refuses_an_address_that_is_not_host_and_port(
    tools: str, tmp_path: Path, address: str
) -> None:
    import subprocess
    import sys

    worker = [sys.executable, "-m", "command_handle", "worker"]
    done = subprocess.run(
        [*worker, tools, "--temporal-address", address, "--task-queue", "q"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "--temporal-address must be HOST:PORT" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_tool_whose_program_outlives_its_call_is_refused_and_leaves_nothing_running(
    temporal_address: str, queue: str, tmp_path: Path
) -> None:
    """A session tool's program would stay on one worker while the queue sends
    the next call anywhere: the worker refuses it, directly and for approval."""
    import socket
    import subprocess

    from tests.temporal_server import free_port

    port = free_port()
    worker = WorkerProcess(temporal_address, queue, ["fixtures/handles"], tmp_path / "worker.log")
    served = tmp_path / "served"
    served.mkdir()
    arguments = {"port": port, "directory": str(served)}

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        client = await Client.connect(temporal_address)
        direct: dict[str, Any] = await client.execute_workflow(
            ToolCallWorkflow.run,
            ToolCall("dev_server", arguments),
            id=f"call-{uuid.uuid4().hex}",
            task_queue=queue,
        )
        # A bounded wait: were the plan described, nothing would approve it.
        waiting = ToolCall("dev_server", arguments, require_approval=True, approval_timeout_s=20)
        approval = await _start(client, queue, waiting)
        described: dict[str, Any] = await approval.result()
        return direct, described

    try:
        direct, described = run(scenario())
    finally:
        code = worker.stop(signal.SIGTERM)
    for result in (direct, described):
        assert result["is_error"] and "keeps its program running" in result["content"], result
        assert "Nothing ran" in result["content"]
    assert direct["structured"] == {"error": "session"}
    assert code == 0, worker.text()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
    listed = subprocess.run(["pgrep", "-f", f"http.server.*{port}"], capture_output=True)
    assert listed.returncode == 1, listed.stdout
