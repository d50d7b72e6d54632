"""Programs that outlive their call: started by a tool with a ``session``, then
read, written and stopped through the Toolbox and the Executor.

Every check is on real processes: a dev server reached over TCP, a Python
REPL on a pseudo-terminal, scripts that start grandchildren; leftovers are
looked for in the process table (``/proc``), not in our own bookkeeping.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import CommandHandle, Policy, Toolbox
from command_handle.call import Terminal
from command_handle.errors import HandleLoadError, ProcessError
from command_handle.executor import Executor
from command_handle.form import escape
from command_handle.toolbox import AuditEvent, Tool, ToolResult

from .processes import PY, ROOT, concurrency_probe

HANDLES = ROOT / "fixtures" / "handles"
CANARY = "canary-process-7f3b9e21c4"

# Starts a grandchild (its command line carries the tag), prints both pids,
# then echoes each line of its input until end-of-file.
FAMILY = (
    "import subprocess, sys\n"
    "tag = sys.argv[1]\n"
    "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', tag])\n"
    "print('family', grandchild.pid, flush=True)\n"
    "for line in sys.stdin:\n"
    "    print('echo', line.strip(), flush=True)\n"
    "print('input closed', flush=True)\n"
)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def tagged(tag: str) -> list[int]:
    """Live processes whose command line holds ``tag`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                words = cmdline.read().split(b"\0")
        except OSError:
            continue
        if tag.encode() in words and alive(int(entry)):
            found.append(int(entry))
    return found


def none_left(tag: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not tagged(tag):
            return True
        time.sleep(0.05)
    return False


def running(tag: str, count: int, within: float = 5.0) -> bool:
    """Whether ``count`` processes tagged ``tag`` run (a grandchild takes a moment)."""
    deadline = time.monotonic() + within
    while len(tagged(tag)) < count:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def session_tool(name: str, code: str, session: dict[str, Any], **fields: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "name": name,
        "handle": "command",
        "command": PY,
        "arguments": {"$use": ["-c", escape(code), {"$": "tag"}]},
        "parameters": {
            "type": "object",
            "properties": {"tag": {"type": "string"}},
            "required": ["tag"],
        },
        "session": session,
    }
    document.update(fields)
    return document


def toolbox_of(*documents: dict[str, Any], **options: Any) -> Toolbox:
    tools = [Tool.from_handle(CommandHandle.load(document)) for document in documents]
    return Toolbox(tools, **options)


def data(result: ToolResult) -> dict[str, Any]:
    """A result's structured value, which is an object for every tool here."""
    assert isinstance(result.structured, dict)
    return result.structured


def unique(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{time.monotonic_ns()}"


@pytest.fixture
def family() -> Iterator[Toolbox]:
    toolbox = toolbox_of(session_tool("family", FAMILY, {"ready": "^family", "yield_after": 10}))
    yield toolbox
    toolbox.close()


# -- the handle field ------------------------------------------------------------------


def test_session_field_is_checked_where_it_is_wrong() -> None:
    base = {"name": "x", "handle": "command", "command": "true"}
    with pytest.raises(HandleLoadError) as bad_regex:
        CommandHandle.load({**base, "session": {"ready": "("}})
    assert bad_regex.value.pointer == "/session/ready"
    with pytest.raises(HandleLoadError) as unknown:
        CommandHandle.load({**base, "session": {"yield": 3}})
    assert "unknown field 'yield'" in str(unknown.value)
    with pytest.raises(HandleLoadError) as negative:
        CommandHandle.load({**base, "session": {"yield_after": 0}})
    assert negative.value.pointer == "/session/yield_after"


def test_tools_without_session_have_no_process_tools() -> None:
    plain = Toolbox.load(HANDLES / "word-count.json")
    assert [tool["name"] for tool in plain.describe("mcp")] == ["word-count"]
    with_session = Toolbox.load(HANDLES / "word-count.json", HANDLES / "python-repl.json")
    for format in ("mcp", "openai", "openai-strict", "anthropic", "tool-handle"):
        names = [
            tool.get("name") or tool["function"]["name"] for tool in with_session.describe(format)
        ]
        assert names[-4:] == ["process_read", "process_write", "process_stop", "process_list"]


def test_a_tool_named_like_a_process_tool_is_refused() -> None:
    clash = {"name": "process_read", "handle": "command", "command": "true"}
    with pytest.raises(Exception, match="built-in"):
        toolbox_of(session_tool("family", FAMILY, {}), clash)


# -- a dev server ------------------------------------------------------------------------


def test_dev_server_started_reached_read_and_stopped(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("hello from the dev server")
    port = free_port()
    fetch = {
        "name": "fetch",
        "handle": "command",
        "command": PY,
        "arguments": {
            "$use": [
                "-c",
                "import sys, urllib.request\n"
                "print(urllib.request.urlopen(sys.argv[1]).read().decode())",
                {"$": "url"},
            ]
        },
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
    }
    events: list[AuditEvent] = []
    toolbox = toolbox_of(
        json.loads((HANDLES / "dev-server.json").read_text()), fetch, events=events.append
    )
    try:
        started = toolbox.call_sync("dev_server", {"port": port, "directory": str(tmp_path)}, "ann")
        assert not started.is_error, started.content
        assert data(started)["running"] is True
        process_id = data(started)["process_id"]
        assert f"still running, as process `{process_id}`" in started.content
        assert "Serving HTTP on 127.0.0.1" in started.content
        fetched = toolbox.call_sync("fetch", {"url": f"http://127.0.0.1:{port}/index.html"}, "ann")
        assert "hello from the dev server" in fetched.content
        log = toolbox.call_sync(
            "process_read", {"process_id": process_id, "wait_seconds": 5}, principal="ann"
        )
        assert '"GET /index.html HTTP/1.1" 200' in log.content, log.content
        assert data(log)["running"] is True
        stopped = toolbox.call_sync("process_stop", {"process_id": process_id}, principal="ann")
        assert "has ended: it was stopped" in stopped.content
        assert data(stopped)["running"] is False
        with pytest.raises(OSError):  # nothing listens any more
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        kinds = [event.kind for event in events if event.details.get("process_id") == process_id]
        assert kinds == ["process_started", "process_ended"]
    finally:
        toolbox.close()


# -- a REPL and prompts --------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["sync", "trio", "asyncio"])
def test_repl_on_a_terminal_answers(backend: str) -> None:
    toolbox = Toolbox.load(HANDLES / "python-repl.json", terminal=Terminal("dumb", 30, 100))

    async def session() -> list[str]:
        started = await toolbox.call("python_repl", {})
        process_id = data(started)["process_id"]
        await toolbox.write_process(process_id, "1+1\n")
        answer = await toolbox.read_process(process_id, wait=5)
        await toolbox.write_process(
            process_id, "import os, shutil; print(os.environ['TERM'], shutil.get_terminal_size())\n"
        )
        terminal = await toolbox.read_process(process_id, wait=5)
        await toolbox.stop_process(process_id)
        return [started.content, answer.content, terminal.content]

    try:
        if backend == "sync":
            started = toolbox.call_sync("python_repl", {})
            process_id = data(started)["process_id"]
            toolbox.write_process_sync(process_id, "1+1\n")
            answer = toolbox.read_process_sync(process_id, wait=5)
            assert data(answer)["waiting_for_input"] is True
            texts = [started.content, answer.content]
        elif backend == "trio":
            texts = trio.run(session)
        else:
            texts = asyncio.run(session())
        assert texts[0].rstrip().endswith(">>>")
        assert "1+1\n2\n>>>" in texts[1], texts[1]
        if backend != "sync":
            assert "dumb os.terminal_size(columns=100, lines=30)" in texts[2]
    finally:
        toolbox.close()


def test_a_prompt_is_answered_and_secret_input_stays_out_of_events() -> None:
    prompt = (
        "import getpass, sys\n"
        "name = input('Name? ')\n"
        "secret = getpass.getpass('Password: ')\n"
        "print('hello', name, len(secret), flush=True)\n"
    )
    events: list[AuditEvent] = []
    toolbox = toolbox_of(
        session_tool("login", prompt, {"terminal": True, "secret_input": True, "yield_after": 2}),
        session_tool("ask", prompt.replace("getpass.getpass", "input"), {"yield_after": 2}),
        events=events.append,
    )
    try:
        for tool in ("login", "ask"):
            started = toolbox.call_sync(tool, {"tag": "x"})
            process_id = data(started)["process_id"]
            if tool == "login":  # the terminal shows the prompt, and that it waits
                assert "Name?" in started.content and "waiting for input" in started.content
            toolbox.write_process_sync(process_id, "ann\n")
            toolbox.read_process_sync(process_id, wait=2)
            toolbox.write_process_sync(process_id, f"{CANARY}\n")
            final = toolbox.read_process_sync(process_id, wait=5)
            if data(final)["running"]:
                final = toolbox.read_process_sync(process_id, wait=5)
            assert f"hello ann {len(CANARY)}" in final.content
            if tool == "login":  # a terminal does not echo a password
                assert CANARY not in final.content
        writes = [event for event in events if event.kind == "process_write"]
        assert len(writes) == 4
        assert all("input" not in event.details for event in writes if event.tool == "login")
        assert [event.details["input"] for event in writes if event.tool == "ask"] == [
            "ann\n",
            f"{CANARY}\n",
        ]
    finally:
        toolbox.close()


def test_input_closed_and_ended_are_clear(family: Toolbox) -> None:
    tag = unique("closed")
    started = family.call_sync("family", {"tag": tag})
    process_id = data(started)["process_id"]
    closed = family.write_process_sync(process_id, "last\n", end_input=True)
    assert "closed its input" in closed.content
    again = family.write_process_sync(process_id, "more\n")
    assert again.is_error and "input of process" in again.content and "is closed" in again.content
    output = family.read_process_sync(process_id, wait=5)
    assert "echo last" in output.content
    family.stop_process_sync(process_id)
    ended = family.call_sync("family", {"tag": tag})
    family.stop_process_sync(data(ended)["process_id"])
    late = family.write_process_sync(data(ended)["process_id"], "x")
    assert late.is_error and "There is no process" in late.content  # read and forgotten
    assert none_left(tag)


# -- owners and limits ----------------------------------------------------------------------


def test_foreign_and_unknown_ids_get_the_same_answer(family: Toolbox) -> None:
    tag = unique("owner")
    mine = data(family.call_sync("family", {"tag": tag}, principal="ann"))["process_id"]
    for name, extra in (
        ("process_read", {}),
        ("process_write", {"input": "x\n"}),
        ("process_stop", {}),
    ):
        foreign = family.call_sync(name, {"process_id": mine, **extra}, principal="bob")
        unknown = family.call_sync(name, {"process_id": "p-000000000000", **extra}, "bob")
        assert foreign.is_error and unknown.is_error
        assert foreign.content == unknown.content.replace("p-000000000000", mine)
    listed = family.call_sync("process_list", {}, principal="bob")
    assert listed.structured == {"processes": []}
    assert data(family.call_sync("process_list", {}, principal="ann"))["processes"][0]["running"]
    # bob's attempts did nothing: ann's process still runs, and read nothing of bob's
    assert tagged(tag)
    assert family.close("bob") == 0 and tagged(tag)
    assert family.close("ann") == 1
    assert none_left(tag)


def test_limits_per_owner_and_in_total_start_nothing() -> None:
    policy = Policy(max_sessions=2, max_sessions_per_owner=1)
    toolbox = toolbox_of(session_tool("family", FAMILY, {"ready": "^family"}), policy=policy)
    tag = unique("limit")
    try:
        assert not toolbox.call_sync("family", {"tag": tag + "-a"}, principal="ann").is_error
        spawned = toolbox.executor.spawned
        refused = toolbox.call_sync("family", {"tag": tag + "-b"}, principal="ann")
        assert refused.is_error and "max_sessions_per_owner" in refused.content
        assert "Nothing was started" in refused.content
        assert not toolbox.call_sync("family", {"tag": tag + "-c"}, principal="bob").is_error
        total = toolbox.call_sync("family", {"tag": tag + "-d"}, principal="cy")
        assert total.is_error and "(max_sessions)" in total.content
        assert toolbox.executor.spawned == spawned + 1
        assert not tagged(tag + "-b") and not tagged(tag + "-d")
    finally:
        toolbox.close()
    assert none_left(tag + "-a") and none_left(tag + "-c")


def test_a_toolbox_under_another_policy_shares_limits_and_processes(tmp_path: Path) -> None:
    """One Toolbox per client workspace (``with_policy``) is one set of limits
    and one set of processes: a process started under one workspace is read
    and stopped under another, and the limits count them all."""
    policy = Policy(max_sessions=2, max_sessions_per_owner=1)
    toolbox = toolbox_of(session_tool("family", FAMILY, {"ready": "^family"}), policy=policy)
    first = toolbox.with_policy(
        Policy(max_sessions=2, max_sessions_per_owner=1, workspace=str(tmp_path))
    )
    second = toolbox.with_policy(Policy(max_sessions=2, max_sessions_per_owner=1, workspace="/"))
    tag = unique("shared")
    try:
        started = first.call_sync("family", {"tag": tag + "-a"}, principal="ann")
        process_id = data(started)["process_id"]
        for box in (toolbox, second):
            refused = box.call_sync("family", {"tag": tag + "-b"}, principal="ann")
            assert refused.is_error and "max_sessions_per_owner" in refused.content
        assert not second.call_sync("family", {"tag": tag + "-c"}, principal="bob").is_error
        total = toolbox.call_sync("family", {"tag": tag + "-d"}, principal="cy")
        assert total.is_error and "(max_sessions)" in total.content
        assert not tagged(tag + "-b") and not tagged(tag + "-d")
        listed = data(second.processes("ann"))["processes"]
        assert [row["process_id"] for row in listed] == [process_id]
        foreign = second.read_process_sync(process_id, principal="bob")
        assert foreign.is_error and "There is no process" in foreign.content
        second.write_process_sync(process_id, "hello\n", principal="ann")
        assert "echo hello" in second.read_process_sync(process_id, "ann", wait=5).content
        assert running(tag + "-a", 2)
        assert toolbox.close() == 2  # the first Toolbox's closes every workspace's
        assert none_left(tag + "-a") and none_left(tag + "-c")
    finally:
        toolbox.close()


def test_an_executor_under_another_policy_shares_the_concurrency_slots(tmp_path: Path) -> None:
    executor = Executor(Policy(max_concurrency=1))
    other = executor.with_policy(Policy(max_concurrency=1, workspace=str(tmp_path)))
    handle = concurrency_probe(tmp_path / "running", 0.5)
    (tmp_path / "running").mkdir()

    async def main() -> list[str]:
        outputs: list[str] = []

        async def one(runner: Executor) -> None:
            outputs.append(str((await runner.call(handle)).stdout).strip())

        async with trio.open_nursery() as nursery:
            for runner in (executor, other, executor, other):
                nursery.start_soon(one, runner)
        return outputs

    assert trio.run(main) == ["1", "1", "1", "1"]


def test_idle_and_lifetime_stop_the_process_and_its_group() -> None:
    tag = unique("idle")
    idle = toolbox_of(
        session_tool("family", FAMILY, {"ready": "^family"}), policy=Policy(session_idle=0.5)
    )
    lifetime = toolbox_of(session_tool("family", FAMILY, {"ready": "^family", "max_lifetime": 0.5}))
    try:
        a = data(idle.call_sync("family", {"tag": tag}))["process_id"]
        b = data(lifetime.call_sync("family", {"tag": tag}))["process_id"]
        assert none_left(tag, within=10)
        # Gone from the process table; its supervisor records the end just after:
        # a read that waits returns as soon as it has.
        assert "nobody read or wrote it for 0.5 s" in idle.read_process_sync(a, wait=10).content
        assert "maximum lifetime of 0.5 s" in lifetime.read_process_sync(b, wait=10).content
    finally:
        idle.close()
        lifetime.close()


def test_a_program_that_ends_within_yield_after_is_a_plain_result() -> None:
    quick = {
        "name": "quick",
        "handle": "command",
        "command": PY,
        "arguments": ["-c", "print('done')"],
        "session": {"yield_after": 10},
    }
    toolbox = toolbox_of(quick)
    result = toolbox.call_sync("quick", {})
    assert result.content == "done"
    assert data(result)["exit_code"] == 0 and "process_id" not in data(result)
    assert toolbox.processes().structured == {"processes": []}


# -- output: bounded, redacted ----------------------------------------------------------------


def test_output_kept_between_reads_is_bounded_head_and_tail() -> None:
    flood = (
        "import sys, time\n"
        "sys.stdout.write('HEAD' + 'x' * 5_000_000 + 'TAIL\\n'); sys.stdout.flush()\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    toolbox = toolbox_of(
        session_tool("flood", flood, {"ready": "ready"}), policy=Policy(session_output=4096)
    )
    try:
        started = toolbox.call_sync("flood", {"tag": "x"})
        structured = data(started)
        assert structured["stdout"].startswith("HEAD")
        assert structured["stdout"].rstrip().endswith("ready")
        assert structured["stdout_dropped"] > 4_990_000
        assert "bytes omitted" in started.content
        process = toolbox.executor.process(structured["process_id"])
        assert process is not None
        window = process._windows["stdout"]  # what is held: at most the limit, twice
        assert len(window.buffer) + len(window.tail) <= 2 * 4096
    finally:
        toolbox.close()


def test_credentials_are_redacted_from_every_read_even_across_reads() -> None:
    leak = (
        "import os, sys, time\n"
        "key = os.environ['API_KEY']\n"
        "print('key', key, flush=True)\n"
        "for line in sys.stdin:\n"
        "    sys.stdout.write(key[:12]); sys.stdout.flush(); time.sleep(0.5)\n"
        "    print(key[12:], flush=True)\n"
    )
    tool = session_tool(
        "leak",
        leak,
        {"yield_after": 2, "ready": "^key"},
        security={"scheme": "apiKey", "name": "vault"},
        environment={"API_KEY": {"$credential": "value"}},
    )
    events: list[AuditEvent] = []
    toolbox = toolbox_of(
        tool, credentials=lambda principal, handle: {"value": CANARY}, events=events.append
    )
    try:
        started = toolbox.call_sync("leak", {"tag": "x"})
        process_id = data(started)["process_id"]
        shown = [started.content, json.dumps(started.structured)]
        toolbox.write_process_sync(process_id, f"go {CANARY}\n")
        time.sleep(0.2)
        first = toolbox.read_process_sync(process_id)  # the key's first half only
        second = toolbox.read_process_sync(process_id, wait=3)
        stopped = toolbox.stop_process_sync(process_id)
        for result in (first, second, stopped):
            shown += [result.content, json.dumps(result.structured)]
        shown += [json.dumps(event.to_json()) for event in events]
        for text in shown:
            assert CANARY not in text
            assert CANARY[:12] not in text and CANARY[12:] not in text
        assert "[credential]" in started.content
    finally:
        toolbox.close()


# -- cleanup: close, async close, and the interpreter's exit -----------------------------------


@pytest.mark.parametrize("backend", ["sync", "trio", "asyncio"])
def test_close_ends_every_process_and_what_it_started(backend: str) -> None:
    tag = unique(f"close-{backend}")
    toolbox = toolbox_of(session_tool("family", FAMILY, {"ready": "^family"}))

    async def start_and_close() -> None:
        async with toolbox:
            for owner in ("ann", "bob"):
                started = await toolbox.call("family", {"tag": tag}, principal=owner)
                assert data(started)["running"]
            assert running(tag, 4)  # two children, two grandchildren

    if backend == "sync":
        with toolbox:
            for owner in ("ann", "bob"):
                toolbox.call_sync("family", {"tag": tag}, principal=owner)
            assert running(tag, 4)
    elif backend == "trio":
        trio.run(start_and_close)
    else:
        asyncio.run(start_and_close())
    assert none_left(tag)


def test_the_interpreters_exit_ends_every_process(tmp_path: Path) -> None:
    tag = unique("exit")
    script = tmp_path / "app.py"
    tool = session_tool("family", FAMILY, {"ready": "^family"})
    script.write_text(
        "import json, sys\n"
        "from command_handle import CommandHandle, Toolbox\n"
        "from command_handle.toolbox import Tool\n"
        f"tool = Tool.from_handle(CommandHandle.load(json.loads({json.dumps(tool)!r})))\n"
        "toolbox = Toolbox([tool])\n"
        f"print(toolbox.call_sync('family', {{'tag': {tag!r}}}).structured['running'])\n"
    )
    import subprocess

    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert ran.stdout.strip() == "True", ran.stderr
    assert none_left(tag, within=1)


# -- the executor's process object -----------------------------------------------------------


def test_executor_process_read_write_wait_stop_under_each_backend() -> None:
    executor = Executor()
    echo = CommandHandle.load(
        {
            "name": "cat",
            "handle": "command",
            "command": "cat",
            "io": {"stdin": "first\n"},
        }
    )
    process = executor.start_sync(executor.prepare(echo), owner="app")
    assert process.read_sync(wait=5).stdout == "first\n"
    process.write_sync("second\n")
    assert process.read_sync(wait=5).stdout == "second\n"

    async def drive() -> Any:
        await process.write("third\n", close=True)
        result = await process.wait(10)
        return result

    result = trio.run(drive)
    assert result is not None and result.exit_code == 0 and result.stdout == "third\n"
    assert not process.running and process.ended_by == "exit"
    with pytest.raises(ProcessError, match="has ended"):
        process.write_sync("late")

    async def asyncio_stop() -> Any:
        running = await executor.start(executor.prepare(echo), owner="app")
        output = await running.stop()
        return running, output

    _, output = asyncio.run(asyncio_stop())
    assert output.ended_by == "stop" and output.signal == 15
    assert executor.processes(owner="app")  # ended, kept until forgotten
    assert executor.processes(owner="someone else") == []


def test_a_plan_cannot_be_started() -> None:
    from command_handle import utcp

    executor = Executor()
    tool = utcp.load(
        {
            "name": "two",
            "tool_call_template": {
                "call_template_type": "cli",
                "commands": [{"command": "echo a"}, {"command": "echo b"}],
            },
        }
    )
    prepared = utcp.prepare(tool, {}, policy=executor.policy)
    with pytest.raises(Exception, match="only a single command"):
        executor.start_sync(prepared)


def test_a_sandboxed_process_stays_confined_for_its_whole_life(tmp_path: Path) -> None:
    """Read-only: a file the program tries to write long after its start is refused;
    its TMPDIR is writable, and removed once it ends."""
    writer = (
        "import os, sys\n"
        "print('tmp', os.environ['TMPDIR'], flush=True)\n"
        "for line in sys.stdin:\n"
        "    path = line.strip()\n"
        "    try:\n"
        "        open(path, 'w').write('x'); print('wrote', path, flush=True)\n"
        "    except OSError as exc:\n"
        "        print('refused', exc.errno, flush=True)\n"
    )
    toolbox = toolbox_of(
        session_tool("writer", writer, {"ready": "^tmp"}), policy=Policy(sandbox="read-only")
    )
    try:
        started = toolbox.call_sync("writer", {"tag": "x"})
        process_id = data(started)["process_id"]
        tmpdir = data(started)["stdout"].split()[1]
        time.sleep(0.5)
        toolbox.write_process_sync(process_id, f"{tmp_path / 'outside'}\n{tmpdir}/inside\n")
        output = toolbox.read_process_sync(process_id, wait=5).content
        if "inside" not in output:
            output += toolbox.read_process_sync(process_id, wait=5).content
        assert "refused 13" in output and f"wrote {tmpdir}/inside" in output
        assert not (tmp_path / "outside").exists()
        toolbox.stop_process_sync(process_id)
        assert not os.path.exists(tmpdir)
    finally:
        toolbox.close()


def test_under_bubblewrap_a_process_outlives_the_spawner_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """bwrap dies with the thread that started it (``--die-with-parent``); shared
    spawner threads end when idle, so a process keeps a thread of its own."""
    from command_handle.executor import _bubblewrap, _executor, _spawn

    if _bubblewrap.available() is not None:
        pytest.skip("bubblewrap is not usable here")
    monkeypatch.setattr(_spawn, "_IDLE_SECONDS", 0.2)
    if os.environ.get("COMMAND_HANDLE_TEST_WITHOUT_KEEPER"):  # shows the failure it prevents
        monkeypatch.setattr(_executor, "KEEP_BWRAP_PARENT", False)
    tag = unique("bwrap")
    policy = Policy(sandbox="read-only", sandbox_backend="bubblewrap")
    toolbox = toolbox_of(session_tool("family", FAMILY, {"ready": "^family"}), policy=policy)
    try:
        process_id = data(toolbox.call_sync("family", {"tag": tag}))["process_id"]
        time.sleep(1.5)  # every shared spawner thread has ended by now
        assert data(toolbox.read_process_sync(process_id))["running"] is True
        echoed = toolbox.write_process_sync(process_id, "still here\n")
        assert not echoed.is_error
        assert "echo still here" in toolbox.read_process_sync(process_id, wait=5).content
    finally:
        toolbox.close()
    assert none_left(tag)


def test_command_line_call_says_that_the_process_it_started_is_stopped(tmp_path: Path) -> None:
    import subprocess

    tag = unique("cli-call")
    tool = tmp_path / "family.json"
    tool.write_text(json.dumps(session_tool("family", FAMILY, {"ready": "^family"})))
    done = subprocess.run(
        [PY, "-m", "command_handle", "call", str(tool), "--tool", "family",
         "--args", json.dumps({"tag": tag})],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    process_id = json.loads(done.stdout)["structured"]["process_id"]
    assert f"process {process_id} was stopped as the command exits" in done.stderr
    assert "command-handle mcp" in done.stderr
    assert none_left(tag)


@pytest.mark.parametrize("terminal", [False, True])
def test_output_is_plain_text_and_a_credential_split_by_escapes_is_redacted(
    terminal: bool,
) -> None:
    """Control sequences are orders to a terminal (a title, the clipboard by OSC
    52, a cleared screen) and can hide a credential from redaction: reads show
    the text without them, also when a read ends inside one."""
    code = (
        "import os, sys, time\n"
        "key = os.environ['API_KEY']\n"
        "out = sys.stdout\n"
        "out.write('color ' + key[:9] + '\\x1b[0m' + key[9:] + '\\n')\n"
        "out.write('title \\x1b]0;' + key + '\\x07osc52 ')\n"
        "out.write('\\x1b]52;c;aGVsbG8=\\x1b\\\\end\\x1b[2J\\n')\n"
        "out.write('bell\\x07 back\\x08space \\x9b31mc1\\n')\n"
        "out.write('ready\\n'); out.flush()\n"
        "sys.stdin.readline()\n"
        "out.write('cut \\x1b[3'); out.flush(); time.sleep(0.5)\n"
        "out.write('1mred\\x1b[0m ' + key[:5]); out.flush(); time.sleep(0.5)\n"
        "out.write('\\x1b[1m' + key[5:] + '\\n'); out.flush()\n"
        "time.sleep(30)\n"
    )
    tool = session_tool(
        "colors",
        code,
        {"ready": "ready", "terminal": terminal},
        security={"scheme": "apiKey", "name": "vault"},
        environment={"API_KEY": {"$credential": "value"}},
    )
    toolbox = toolbox_of(tool, credentials=lambda principal, handle: {"value": CANARY})
    try:
        started = toolbox.call_sync("colors", {"tag": "x"})
        process_id = data(started)["process_id"]
        toolbox.write_process_sync(process_id, "go\n")
        reads = [started]
        deadline = time.monotonic() + 10
        shown = data(started)["stdout"]
        while not ("cut" in shown and shown.endswith("\n")) and time.monotonic() < deadline:
            reads.append(toolbox.read_process_sync(process_id, wait=0.3))
            shown += data(reads[-1])["stdout"]
        assert len(reads) >= 3  # the line came in pieces, cut inside a sequence
        for text in [shown] + [read.content for read in reads]:
            assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
            assert CANARY[:9] not in text and CANARY[9:] not in text
        assert "color [credential]\ntitle osc52 end\nbell backspace c1\nready\n" in shown
        assert "cut red " in shown and "[credential]\n" in shown.split("cut red ", 1)[1]
    finally:
        toolbox.close()


def test_an_unfinished_sequence_is_held_for_the_next_read_but_not_for_long() -> None:
    from command_handle.toolbox._plain import MAX_PENDING, plain

    assert plain("text \x1b[3", more=True) == ("text ", "\x1b[3")
    assert plain("text \x1b[3", more=False) == ("text 3", "")  # it ended: nothing follows
    assert plain("title \x1b]0;name", more=True) == ("title ", "\x1b]0;name")
    assert plain("line\r", more=True, terminal=True) == ("line", "\r")
    assert plain("a\r\nb\rc", more=False, terminal=True) == ("a\nb\rc", "")
    endless = "\x1b]0;" + "x" * MAX_PENDING
    shown, pending = plain(endless, more=True)
    assert pending == "" and shown == endless[2:]  # shown as text rather than held back


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_many_waiting_reads_hold_no_threads_another_caller_needs(backend: str) -> None:
    """Waiting reads wait in their tasks: more of them than the worker threads
    anyio lends (40) leave another owner's write, which does use one, free to
    run while they wait."""
    toolbox = toolbox_of(session_tool("family", FAMILY, {"ready": "^family"}))
    tag = unique("waits")
    waiting = 48

    async def main() -> tuple[int, str]:
        quiet = data(await toolbox.call("family", {"tag": tag}, principal="ann"))["process_id"]
        other = data(await toolbox.call("family", {"tag": tag}, principal="bob"))["process_id"]
        finished: list[ToolResult] = []

        async def read() -> None:
            finished.append(await toolbox.read_process(quiet, "ann", wait=60))

        if backend == "trio":
            async with trio.open_nursery() as nursery:
                for _ in range(waiting):
                    nursery.start_soon(read)
                await trio.sleep(0.5)
                await toolbox.write_process(other, "hello\n", "bob")
                done_before = len(finished)
                answer = await toolbox.read_process(other, "bob", wait=10)
                await toolbox.stop_process(quiet, "ann")  # the waiting reads end with it
        else:
            async with asyncio.TaskGroup() as group:
                for _ in range(waiting):
                    group.create_task(read())
                await asyncio.sleep(0.5)
                await toolbox.write_process(other, "hello\n", "bob")
                done_before = len(finished)
                answer = await toolbox.read_process(other, "bob", wait=10)
                await toolbox.stop_process(quiet, "ann")
        assert len(finished) == waiting and all("has ended" in r.content for r in finished)
        return done_before, answer.content

    try:
        done_before, answer = trio.run(main) if backend == "trio" else asyncio.run(main())
        assert done_before == 0  # bob's write did not wait for ann's reads
        assert "echo hello" in answer
    finally:
        toolbox.close()
    assert none_left(tag)


def test_idle_does_not_count_while_a_start_or_a_read_waits() -> None:
    """``session_idle`` shorter than the start's wait for ``ready`` and than a
    read's wait: neither is cut short; idleness counts from the read's end."""
    slow = "import sys, time\ntime.sleep(1.5)\nprint('up', flush=True)\ntime.sleep(300)\n"
    toolbox = toolbox_of(
        session_tool("slow", slow, {"ready": "^up", "yield_after": 20}),
        policy=Policy(session_idle=0.5),
    )
    tag = unique("idle-wait")
    try:
        started = toolbox.call_sync("slow", {"tag": tag})
        assert "still running" in started.content and "up" in started.content
        process_id = data(started)["process_id"]
        for read in (
            toolbox.read_process_sync(process_id, wait=1.5),
            asyncio.run(toolbox.read_process(process_id, wait=1.5)),
        ):
            assert data(read)["running"], read.content
        assert none_left(tag, within=10)  # then, unread, it is idle
        assert "nobody read or wrote it for 0.5 s" in toolbox.read_process_sync(process_id).content
    finally:
        toolbox.close()
