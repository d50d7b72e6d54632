"""One prepared call, one run path: every front end's call runs through the same
executor methods, with the same checks, figures and error boundary."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import (
    AfterRunError,
    CommandHandle,
    CommandHandleError,
    CommandResult,
    Executor,
    PathArgumentError,
    Policy,
    PolicyError,
    Toolbox,
    utcp,
)
from command_handle.call import PlanResult, PreparedCall
from command_handle.form import escape
from command_handle.toolbox import AuditEvent

from .processes import PY, probe_handle, report


def template(*commands: str, **fields: Any) -> dict[str, Any]:
    return {
        "call_template_type": "cli",
        "commands": [{"command": command} for command in commands],
        **fields,
    }


# -- one prepared call -------------------------------------------------------------


def test_every_front_end_prepares_the_same_type(tmp_path: Path) -> None:
    handle = probe_handle().prepare({"words": ["a"]})
    plan = utcp.prepare(template("echo UTCP_ARG_m_UTCP_END"), {"m": "x"})
    legacy = utcp.prepare(
        {"provider_type": "cli", "name": "old", "command_name": "/bin/echo"}, {"v": "1"}
    )
    assert [type(p) for p in (handle, plan, legacy)] == [PreparedCall] * 3
    assert [p.kind for p in (handle, plan, legacy)] == ["command", "plan", "one-step"]
    executor = Executor()
    assert isinstance(executor.run_sync(handle), CommandResult)
    assert executor.run_sync(plan).output == "x"
    legacy_result = executor.run_sync(legacy)
    assert isinstance(legacy_result, PlanResult) and legacy_result.output == "--v 1"


def test_a_call_prepared_under_another_policy_is_refused_and_nothing_runs() -> None:
    """A strict executor does not run what a lenient policy checked."""
    lenient = utcp.prepare(template("id"), policy=Policy())
    strict = Executor(Policy(allowed_commands=frozenset({"/bin/echo"})))
    with pytest.raises(PolicyError, match="different Policy"):
        strict.run_sync(lenient)
    with pytest.raises(PolicyError, match="different Policy"):
        trio.run(strict.run, lenient)
    with pytest.raises(PolicyError):
        strict.describe(lenient)
    assert strict.spawned == 0
    # An equal policy, a different object, is the same policy.
    same = Executor(Policy(allowed_commands=frozenset({"/bin/echo"})))
    prepared = utcp.prepare(template("/bin/echo hi"), policy=same.policy)
    assert strict.run_sync(prepared).output == "hi"


def test_paths_are_checked_again_after_the_wait_for_a_slot(tmp_path: Path) -> None:
    """With one slot, a link swapped to a secret while the call waited is refused."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("public\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("CANARY-5f1e\n")
    link = workspace / "file"
    link.symlink_to(workspace / "notes.txt")
    policy = Policy(workspace=str(workspace), max_concurrency=1)
    executor = Executor(policy)
    reader = CommandHandle.load(
        {
            "name": "read",
            "handle": "command",
            "command": "/bin/cat",
            "arguments": ["--", "{{file}}"],
            "directory": str(workspace),
            "paths": {"file": {"within": "workspace"}},
            "parameters": {"type": "object", "properties": {"file": {"type": "string"}}},
        }
    )
    holder = CommandHandle.load(
        {
            "name": "hold",
            "handle": "command",
            "command": PY,
            "arguments": ["-c", "import time; time.sleep(0.6)"],
        }
    )
    prepared = reader.prepare({"file": "file"}, policy)  # checked now: inside
    outcome: dict[str, Any] = {}

    def second() -> None:
        try:
            outcome["result"] = executor.run_sync(prepared)
        except PathArgumentError as exc:
            outcome["refused"] = exc

    first = threading.Thread(target=executor.call_sync, args=(holder,))
    first.start()
    time.sleep(0.2)  # the holder has the slot
    waiter = threading.Thread(target=second)
    waiter.start()
    time.sleep(0.1)
    link.unlink()
    link.symlink_to(secret)  # swapped while the call waits
    first.join()
    waiter.join()
    assert "result" not in outcome, outcome["result"].stdout
    assert outcome["refused"].pointer == "/file"


# -- the figures -----------------------------------------------------------------


def test_a_template_s_own_timeout_is_the_one_reported() -> None:
    source = template(f"{PY} -c 'import time; time.sleep(5)'", timeout=1000)
    executor = Executor(Policy(timeout=60))
    prepared = utcp.prepare(source, policy=executor.policy)
    assert prepared.timeout == 1
    assert executor.describe(prepared)["limits"]["timeout"] == 1
    with pytest.raises(TimeoutError, match="its 1 s timeout"):
        utcp.call_sync(source, executor=executor)
    legacy = {
        "provider_type": "cli",
        "name": "old",
        "command_name": "/bin/echo",
        "timeout": 2000,
    }
    assert executor.describe(utcp.prepare(legacy, policy=executor.policy))["limits"]["timeout"] == 2


def test_a_0x_provider_runs_in_the_policy_s_workspace(tmp_path: Path) -> None:
    provider = {"provider_type": "cli", "name": "where", "command_name": "/bin/pwd"}
    result = utcp.run_sync(provider, policy=Policy(workspace=str(tmp_path)))
    assert result.output == str(tmp_path)


# -- sync and async have the same features ------------------------------------------


def test_a_sync_run_streams_its_output_as_it_arrives() -> None:
    code = "import time\nfor i in range(3):\n    print(i, flush=True); time.sleep(0.2)\n"
    handle = CommandHandle.load(
        {"name": "slow", "handle": "command", "command": PY, "arguments": ["-c", code]}
    )
    executor = Executor()
    seen: list[tuple[float, str, bytes]] = []
    started = time.monotonic()
    result = executor.run_sync(
        executor.prepare(handle),
        lambda stream, data: seen.append((time.monotonic() - started, stream, data)),
    )
    assert result.stdout == "0\n1\n2\n"
    assert b"".join(data for _, _, data in seen) == b"0\n1\n2\n"
    assert seen[0][0] < 0.3  # the first line came before the program ended
    plan_chunks: list[bytes] = []
    plan = utcp.prepare(template("echo one && echo two"))
    executor.run_sync(plan, lambda stream, data: plan_chunks.append(data))
    assert b"".join(plan_chunks) == b"one\ntwo\n"


def test_a_prepared_call_streams_as_events() -> None:
    async def main() -> list[str]:
        executor = Executor()
        kinds = []
        async with executor.stream(utcp.prepare(template("echo hi"))) as events:
            async for event in events:
                kinds.append(event.kind)
                if event.kind == "exit":
                    assert isinstance(event.result, PlanResult)
                    assert event.result.output == "hi"
        return kinds

    assert trio.run(main) == ["stdout", "exit"]


# -- one boundary for errors ----------------------------------------------------------


def _toolbox(tmp_path: Path, document: dict[str, Any], **kwargs: Any) -> Toolbox:
    (tmp_path / "tool.json").write_text(json.dumps(document))
    return Toolbox.load(tmp_path / "tool.json", **kwargs)


def test_a_plan_refused_at_run_time_is_an_error_result(tmp_path: Path) -> None:
    """A later step's data that begins like an option: the steps before it ran,
    and the model gets an is_error result, never an exception."""
    document = {
        "name": "chain",
        "call_template_type": "cli",
        "commands": [
            {"command": "printf %s -rf"},
            {"command": "ls $CMD_0_OUTPUT"},
        ],
    }
    with pytest.raises(AfterRunError):
        utcp.run_sync(document)
    events: list[AuditEvent] = []
    toolbox = _toolbox(tmp_path, document, events=events.append)
    for result in (
        toolbox.call_sync("chain", {}),
        trio.run(toolbox.call, "chain", {}),
        asyncio.run(toolbox.call("chain", {})),
    ):
        assert result.is_error
        assert "was stopped before one of its commands" in result.content
        assert "commands before it ran" in result.content
        assert isinstance(result.result, PlanResult)
    refused = [e for e in events if e.kind == "refused"]
    assert len(refused) == 3 and all(e.details["after_run"] for e in refused)


def test_a_bare_template_s_advertised_schema_is_enforced(tmp_path: Path) -> None:
    toolbox = _toolbox(tmp_path, {"name": "say", **template("echo UTCP_ARG_m_UTCP_END")})
    schema = toolbox.describe("mcp")[0]["inputSchema"]
    assert schema["properties"] == {"m": {"type": "string"}}
    extra = toolbox.call_sync("say", {"m": "hi", "other": "x"})
    assert extra.is_error and "other" in extra.content
    wrong_type = toolbox.call_sync("say", {"m": 5})
    assert wrong_type.is_error and "`m`" in wrong_type.content
    assert toolbox.executor.spawned == 0
    assert toolbox.call_sync("say", {"m": "hi"}).content == "hi"


def test_an_async_events_sink_is_awaited(tmp_path: Path) -> None:
    seen: list[str] = []

    async def sink(event: AuditEvent) -> None:
        await asyncio.sleep(0) if _in_asyncio() else await trio.sleep(0)
        seen.append(event.kind)

    toolbox = _toolbox(tmp_path, {"name": "say", **template("/bin/echo hi")}, events=sink)
    assert seen == ["loaded"]
    seen.clear()
    trio.run(toolbox.call, "say", {})
    assert seen == ["spawned", "exited"]
    seen.clear()
    asyncio.run(toolbox.call("say", {}))
    assert seen == ["spawned", "exited"]
    seen.clear()
    toolbox.call_sync("say", {})
    assert seen == ["spawned", "exited"]


def _in_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


# -- redaction before every cut -------------------------------------------------------

SECRET = "sk-live-0123456789abcdefghijklmnopqrstuv"


def _echo_secret_tool(tmp_path: Path, code: str) -> Toolbox:
    document = {
        "name": "leak",
        "handle": "command",
        "command": PY,
        "arguments": ["-c", code],
        "environment": {"TOKEN": {"$credential": "token"}},
    }
    return _toolbox(
        tmp_path,
        document,
        credentials=lambda principal, handle: {"scheme": "bearer", "token": SECRET},
    )


@pytest.mark.parametrize("offset", [-25, -10, -3, 0, 5])
def test_a_secret_across_the_content_cut_shows_no_part(tmp_path: Path, offset: int) -> None:
    """The model's text is cut to max_content around its middle: a credential
    that straddles the cut shows none of its characters."""
    budget = 200
    pad = budget // 2 + offset
    code = f"import os; print('a' * {pad} + os.environ['TOKEN'] + 'b' * 400)"
    toolbox = _echo_secret_tool(tmp_path, code)
    toolbox.max_content = budget
    result = toolbox.call_sync("leak", {})
    assert not result.is_error, result.content
    for size in range(6, len(SECRET) + 1):
        assert SECRET[:size] not in result.content
        assert SECRET[-size:] not in result.content


@pytest.mark.parametrize("offset", [-20, -5, 0])
def test_a_secret_across_the_executor_s_cap_shows_no_part(tmp_path: Path, offset: int) -> None:
    """The executor keeps max_output bytes (and a tail) without knowing secrets:
    the model's text redacts the part of a secret each piece holds."""
    cap = 4096
    code = f"import os; print('a' * ({cap} + {offset}) + os.environ['TOKEN'] + 'b' * 200, end='')"
    toolbox = _echo_secret_tool(tmp_path, code)
    toolbox_policy = Policy(max_output=cap)
    toolbox = Toolbox(list(toolbox), policy=toolbox_policy, credentials=toolbox._credentials)
    result = toolbox.call_sync("leak", {})
    assert isinstance(result.result, CommandResult) and result.result.stdout_truncated
    for size in range(6, len(SECRET) + 1):
        assert SECRET[:size] not in result.content
        assert SECRET[-size:] not in result.content


def test_a_long_progress_line_is_redacted_before_it_is_cut(tmp_path: Path) -> None:
    """on_output gets the last 4096 characters of a long line: a secret that
    straddles that cut shows no part."""
    lines: list[str] = []

    async def collect(stream: str, line: str) -> None:
        lines.append(line)

    for offset in (-30, -10, 0):
        keep = 4096 - 10 + offset  # where the cut falls inside the secret
        code = f"import os; print(os.environ['TOKEN'] + 'x' * {keep})"
        toolbox = _echo_secret_tool(tmp_path, code)
        trio.run(partial(toolbox.call, "leak", {}, on_output=collect))
    assert lines
    for line in lines:
        for size in range(6, len(SECRET) + 1):
            assert SECRET[:size] not in line and SECRET[-size:] not in line


def test_nothing_is_left_running_by_the_prepared_paths() -> None:
    executor = Executor()
    pid_seen: list[int] = []
    prepared = probe_handle().prepare({"words": ["x"]})
    result = executor.run_sync(prepared, on_started=lambda pid, program: pid_seen.append(pid))
    assert report(result)["argv"] == ["x"]
    assert (pid_seen and not os.path.exists(f"/proc/{pid_seen[0]}/stat")) or _zombie_free(pid_seen)


def _zombie_free(pids: list[int]) -> bool:
    from .processes import alive

    return not any(alive(pid) for pid in pids)


def _leaks(text: str) -> list[str]:
    """The parts of SECRET (six characters or more) that ``text`` shows."""
    return [
        part
        for size in range(6, len(SECRET) + 1)
        for part in (SECRET[:size], SECRET[-size:])
        if part in text
    ]


def _cut_tool(tmp_path: Path, code: str, **fields: Any) -> Toolbox:
    """The leak tool under a policy whose max_output is 4096 bytes."""
    document = {
        "name": "leak",
        "handle": "command",
        "command": PY,
        "arguments": ["-c", escape(code)],
        "environment": {"TOKEN": {"$credential": "token"}},
        **fields,
    }
    (tmp_path / "tool.json").write_text(json.dumps(document))
    return Toolbox.load(
        tmp_path / "tool.json",
        policy=Policy(max_output=4096),
        credentials=lambda principal, handle: {"scheme": "bearer", "token": SECRET},
    )


@pytest.mark.parametrize("offset", [-20, -8])
def test_the_structured_view_redacts_a_secret_cut_by_the_executor_s_cap(
    tmp_path: Path, offset: int
) -> None:
    """The default structured value holds the head the executor kept: a secret
    cut at its end shows no part there either."""
    code = f"import os; print('a' * (4096 + {offset}) + os.environ['TOKEN'] + 'b' * 200, end='')"
    result = _cut_tool(tmp_path, code).call_sync("leak", {})
    assert isinstance(result.result, CommandResult) and result.result.stdout_truncated
    assert SECRET[:-offset] in str(result.result.stdout)  # the application's view: as written
    assert _leaks(json.dumps(result.structured)) == []


@pytest.mark.parametrize(
    ("template", "pad"),
    [
        ({"out": {"$": "stdout"}}, 4086),  # the head the executor cut, as it is
        ({"$use": {"$": "stdout"}, "$encode": "base64"}, 100),  # the whole secret, encoded
        ({"$use": {"$": "stdout"}, "$encode": "base64"}, 4086),
    ],
)
def test_a_result_template_reads_output_already_redacted(
    tmp_path: Path, template: dict[str, Any], pad: int
) -> None:
    """The template gets the run with the credential redacted, cut edges
    included: what it builds from the output (even an encoding of it) holds no
    part of the secret."""
    code = f"import os; print('a' * {pad} + os.environ['TOKEN'] + 'b' * 200, end='')"
    result = _cut_tool(tmp_path, code, result=template).call_sync("leak", {})
    assert not result.is_error, result.content
    shown = json.dumps(result.structured) + result.content
    if "$encode" in template:
        shown = base64.b64decode(str(result.structured)).decode("utf-8", "replace")
    assert shown and _leaks(shown) == []


@pytest.mark.parametrize("cap", [None, 4096])
def test_binary_output_is_redacted_before_base64(tmp_path: Path, cap: int | None) -> None:
    """Issue 22 finding 13: with io.encoding "binary", stdout is bytes and the
    structured value carries it as base64; the credential's bytes are redacted
    before the encoding, also where the executor's cap cut them."""
    pad = 4086 if cap else 10
    code = (
        "import os, sys; sys.stdout.buffer.write(b'\\x00\\xff' + b'a' * "
        f"{pad} + os.environ['TOKEN'].encode() + b'\\x01' * 300)"
    )
    tool = _cut_tool(tmp_path, code, io={"encoding": "binary"})
    if cap is None:
        tool = Toolbox(list(tool), credentials=tool._credentials)
    result = tool.call_sync("leak", {})
    assert isinstance(result.result, CommandResult)
    assert isinstance(result.result.stdout, bytes)
    assert result.result.stdout_truncated is (cap is not None)
    assert isinstance(result.structured, dict)
    shown = base64.b64decode(result.structured["stdout"]).decode("latin-1")
    assert shown.startswith("\x00\xff") and _leaks(shown) == []
    assert _leaks(result.content) == []


def test_progress_lines_are_decoded_with_the_handle_s_encoding(tmp_path: Path) -> None:
    """on_output lines of a UTF-16 program are its text, so the credential in
    them is found and redacted (read as UTF-8, each character came with a NUL
    and no redaction matched)."""
    code = (
        "import os, sys; sys.stdout.buffer.write(('using ' + os.environ['TOKEN'] + "
        "'\\n').encode('utf-16-le'))"
    )
    tool = _cut_tool(tmp_path, code, io={"encoding": "utf-16-le"})
    lines: list[str] = []

    async def collect(stream: str, line: str) -> None:
        lines.append(line)

    result = trio.run(lambda: tool.call("leak", {}, on_output=collect))
    assert result.content == "using [credential]"
    assert lines == ["using [credential]"]


def test_an_invocation_checked_under_another_policy_is_refused(tmp_path: Path) -> None:
    """A bare Invocation carries the limits and environment rules of the Policy it
    was rendered under: a strict executor refuses one rendered under a lenient
    Policy, and one built by hand must carry the executor's limits."""
    canary = tmp_path / "ran"
    handle = CommandHandle.load(
        {"name": "t", "handle": "command", "command": "/usr/bin/touch", "arguments": [str(canary)]}
    )
    strict = Executor(Policy(timeout=1, max_output=100))
    lenient = handle.render({})  # the default Policy: 60 s, 10 MiB
    with pytest.raises(PolicyError, match="different Policy"):
        strict.run_sync(lenient)
    with pytest.raises(PolicyError):
        trio.run(strict.run, lenient)
    forged = dataclasses.replace(handle.prepare({}), policy=strict.policy)
    with pytest.raises(PolicyError, match="different Policy"):
        strict.run_sync(forged)
    by_hand = dataclasses.replace(lenient, policy=None)
    with pytest.raises(PolicyError, match="limits"):
        strict.run_sync(by_hand)
    assert not canary.exists() and strict.spawned == 0
    assert strict.run_sync(handle.render({}, strict.policy)).exit_code == 0
    assert canary.exists()


def test_a_multi_line_credential_never_reaches_a_progress_line(tmp_path: Path) -> None:
    """A PEM key spans lines; progress lines are redacted one at a time, so each
    line of such a secret is redacted on its own."""
    key = "\n".join(
        [
            "-----BEGIN PRIVATE KEY-----",
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
            "S2lsbGVyUXVlZW4xMjM0NTY3ODkwYWJj",
            "-----END PRIVATE KEY-----",
        ]
    )
    document = {
        "name": "leak",
        "handle": "command",
        "command": PY,
        "arguments": ["-c", "import os; print('key:', os.environ['KEY'])"],
        "environment": {"KEY": {"$credential": "token"}},
    }
    toolbox = _toolbox(
        tmp_path, document, credentials=lambda principal, handle: {"scheme": "x", "token": key}
    )
    lines: list[str] = []

    async def collect(stream: str, line: str) -> None:
        lines.append(line)

    result = trio.run(partial(toolbox.call, "leak", {}, on_output=collect))
    assert "MIIEvQ" not in result.content
    assert lines
    for line in lines:
        for part in key.split("\n"):
            assert part not in line, line


def test_sync_calls_work_from_inside_a_running_event_loop(tmp_path: Path) -> None:
    """Sync code called from a coroutine (a blocking helper, a legacy callback):
    a sync plan and an async hook run on a loop of their own, not refused."""
    toolbox = _toolbox(tmp_path, {"name": "say", **template("echo UTCP_ARG_m_UTCP_END")})
    executor = Executor()

    async def approve(request: Any) -> bool:
        return True

    approving = Toolbox(list(toolbox), approve=approve)

    async def main() -> list[object]:
        return [
            toolbox.call_sync("say", {"m": "a"}).content,
            approving.call_sync("say", {"m": "b"}).content,
            utcp.call_sync(template("echo c")),
            executor.run_sync(utcp.prepare(template("echo d"))).output,
        ]

    assert asyncio.run(main()) == ["a", "b", "c", "d"]
    assert trio.run(main) == ["a", "b", "c", "d"]


def test_a_consumer_s_error_in_a_pipeline_comes_out_as_itself() -> None:
    """An ``on_chunk`` that raises inside a pipeline: the caller gets its error,
    not an ExceptionGroup, as from a single command."""

    class Stop(Exception):
        pass

    def stop(stream: str, data: bytes) -> None:
        raise Stop

    async def stop_async(stream: str, data: bytes) -> None:
        raise Stop

    executor = Executor()
    prepared = utcp.prepare(template(f"{PY} -c 'print(1)' | cat"))
    with pytest.raises(Stop):
        executor.run_sync(prepared, stop)
    with pytest.raises(Stop):
        trio.run(executor.run, prepared, stop_async)


def test_small_parity_gaps_are_closed(tmp_path: Path) -> None:
    """``stream`` takes an Invocation as ``run`` does; ``call_sync`` streams
    lines as ``call`` does; two tools of one name are a CommandHandleError."""
    executor = Executor()

    async def kinds() -> list[str]:
        seen = []
        async with executor.stream(probe_handle().render({"words": ["x"]})) as events:
            async for event in events:
                seen.append(event.kind)
        return seen

    assert trio.run(kinds)[-1] == "exit"
    toolbox = _toolbox(tmp_path, {"name": "say", **template("echo one && echo two")})
    lines: list[tuple[str, str]] = []
    result = toolbox.call_sync("say", {}, on_output=lambda s, line: lines.append((s, line)))
    assert result.content == "one\ntwo" and lines == [("stdout", "one"), ("stdout", "two")]
    with pytest.raises(CommandHandleError, match="same name 'say'"):
        Toolbox([*toolbox, *toolbox])


def test_a_bare_0x_provider_takes_no_flag_names_from_the_model(tmp_path: Path) -> None:
    """Each 0.x argument becomes ``--name value``: with no declared inputs the model
    would choose the flags (``git log --output PATH`` wrote a file)."""
    target = tmp_path / "written"
    provider = {"provider_type": "cli", "name": "log", "command_name": "/bin/echo"}
    toolbox = _toolbox(tmp_path, provider)
    result = toolbox.call_sync(toolbox.names()[0], {"output": str(target)})
    assert result.is_error and "`output` is not a parameter" in result.content
    assert toolbox.executor.spawned == 0
    assert not toolbox.call_sync(toolbox.names()[0], {}).is_error


def test_a_prepared_call_s_repr_shows_no_environment_or_stdin() -> None:
    """A logged invocation or prepared call never carries a credential's value."""
    handle = CommandHandle.load(
        {
            "name": "x",
            "handle": "command",
            "command": "/bin/echo",
            "environment": {"TOKEN": {"$credential": "token"}},
            "io": {"stdin": {"$credential": "token"}},
        }
    )
    prepared = handle.prepare({}, credential={"scheme": "x", "token": SECRET})
    assert SECRET not in repr(prepared) and SECRET not in repr(prepared.invocation)


def test_read_only_with_writable_roots_is_a_policy_error(tmp_path: Path) -> None:
    """read-only writes only devices and TMPDIR (docs/sandbox.md); writable roots
    given with it used to be writable all the same."""
    with pytest.raises(PolicyError, match="workspace-write"):
        Policy(sandbox="read-only", writable_roots=(str(tmp_path),))
