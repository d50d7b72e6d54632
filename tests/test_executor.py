"""The executor with real processes: nothing here is mocked."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import signal
import stat
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import (
    ArgumentsError,
    CommandError,
    CommandHandle,
    DirectoryError,
    EnvironmentVariableError,
    Executor,
    HandleError,
    OptionArgumentError,
    Policy,
)

from .conftest import Run
from .processes import (
    PROBE,
    PY,
    ROOT,
    alive,
    concurrency_probe,
    probe_handle,
    python_handle,
    report,
)


def test_parent_secret_never_reaches_the_child(monkeypatch: pytest.MonkeyPatch, run: Run) -> None:
    monkeypatch.setenv("CH_TEST_SECRET", "hunter2")
    executor = Executor()
    assert report(run(executor, probe_handle(), {"words": []}))["env"] == {}
    given = probe_handle(environment={"ONLY": "this"})
    assert report(run(executor, given, {}))["env"] == {"ONLY": "this"}
    inheriting = Executor(Policy(inherit_environment=("CH_TEST_SECRET", "CH_NOT_SET")))
    assert report(run(inheriting, probe_handle(), {}))["env"] == {"CH_TEST_SECRET": "hunter2"}


def test_refused_calls_spawn_nothing(tmp_path: Path, run: Run) -> None:
    executor = Executor()
    typed = probe_handle(parameters={"type": "object", "properties": {"n": {"type": "integer"}}})
    refusals: list[tuple[CommandHandle, dict[str, Any], type[HandleError]]] = [
        (typed, {"n": "x"}, ArgumentsError),
        (probe_handle(directory=str(tmp_path / "missing")), {}, DirectoryError),
        (probe_handle(command="no-such-program-here"), {}, CommandError),
        (probe_handle(environment={"LD_PRELOAD": "x"}), {}, EnvironmentVariableError),
        (
            probe_handle(arguments={"$encode": "args", "rm": {"$args": [{"$": "p"}]}}),
            {"p": "-rf"},
            OptionArgumentError,
        ),
    ]
    for handle, args, error in refusals:
        with pytest.raises(error) as info:
            run(executor, handle, args)
        assert info.value.pointer, info.value
    assert executor.spawned == 0
    with pytest.raises(OptionArgumentError) as refused:
        run(executor, refusals[-1][0], refusals[-1][1])
    assert refused.value.parameter == "p" and refused.value.pointer == "/p"
    assert str(refused.value).startswith("`p` must not start with '-'")


# A handle that builds a shell line from two words its schema keeps to [a-z]:
# with Python's $, "hi\n" passed ^[a-z]+$ and the second word ran as a command.
SHELL_LINE = {
    "name": "greet",
    "handle": "command",
    "command": "sh",
    "arguments": ["-c", "echo {{word}} {{other}}"],
    "parameters": {
        "type": "object",
        "properties": {
            "word": {"type": "string", "pattern": "^[a-z]+$"},
            "other": {"type": "string", "pattern": "^[a-z]+$"},
            "count": {"type": "string", "pattern": "^\\d+$"},
        },
        "required": ["word", "other"],
    },
}


def test_patterns_are_ecma_262_regular_expressions(run: Run) -> None:
    """JSON Schema patterns are ECMA-262: $ is the end of the text, \\d is 0-9."""
    executor = Executor()
    handle = CommandHandle.load(SHELL_LINE)
    for args, name in (
        ({"word": "hi\n", "other": "pwd"}, "/word"),  # a newline before the end
        ({"word": "hi", "other": "pwd", "count": "\u0661\u0662\u0663"}, "/count"),  # ١٢٣
        ({"word": "hi", "other": "pwd", "count": "12\n"}, "/count"),
    ):
        with pytest.raises(ArgumentsError) as refused:
            run(executor, handle, args)
        assert [v.pointer for v in refused.value.violations] == [name]
        assert refused.value.violations[0].keyword == "pattern"
    assert executor.spawned == 0
    ran = run(executor, handle, {"word": "hi", "other": "pwd", "count": "123"})
    assert ran.stdout == "hi pwd\n" and executor.spawned == 1


def test_every_argument_violation_is_reported() -> None:
    handle = probe_handle(
        parameters={
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "b": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["c"],
        }
    )
    with pytest.raises(ArgumentsError) as info:
        handle.render({"a": "x", "b": ["ok", 2]})
    pointers = sorted(v.pointer for v in info.value.violations)
    assert pointers == ["", "/a", "/b/1"]


def test_command_checks(tmp_path: Path, run: Run) -> None:
    script = tmp_path / "tool.sh"
    script.write_text('#!/bin/sh\necho from-script "$@"\n')
    policy = Policy()
    with pytest.raises(CommandError, match="not executable"):
        probe_handle(command="./tool.sh", directory=str(tmp_path), arguments=[]).render({}, policy)
    script.chmod(0o755)
    relative = CommandHandle.load(
        {
            "name": "s",
            "handle": "command",
            "command": "./tool.sh",
            "directory": str(tmp_path),
            "arguments": ["x"],
        }
    )
    result = run(Executor(), relative)
    assert result.stdout == "from-script x\n"
    assert result.argv[0] == str(script)
    # A bare name is looked up in the policy's search path, absolute entries only.
    bare = CommandHandle.load({"name": "s", "handle": "command", "command": "tool.sh"})
    assert bare.render({}, Policy(search_path=(str(tmp_path),))).argv[0] == str(script)
    with pytest.raises(CommandError, match="not found"):
        bare.render({}, Policy(search_path=(os.path.relpath(tmp_path),)))
    # The allowlist.
    with pytest.raises(CommandError, match="does not allow"):
        relative.render({}, Policy(allowed_commands=frozenset({"/bin/ls"})))
    by_name = Policy(allowed_commands=frozenset({"tool.sh"}), match_command_names=True)
    assert relative.render({}, by_name).argv[0] == str(script)


def test_setuid_executables_need_the_policy(tmp_path: Path, run: Run) -> None:
    copy = tmp_path / "true-copy"
    shutil.copy(shutil.which("true") or "/bin/true", copy)
    copy.chmod(0o755 | stat.S_ISUID)
    if not os.stat(copy).st_mode & stat.S_ISUID:
        pytest.skip("this filesystem drops the set-user-ID bit")
    handle = CommandHandle.load({"name": "t", "handle": "command", "command": str(copy)})
    with pytest.raises(CommandError, match="set-user-ID"):
        handle.render({})
    assert run(Executor(Policy(allow_setuid=True)), handle).exit_code == 0


def test_timeout_kills_the_whole_process_tree(run: Run) -> None:
    code = (
        "import subprocess, sys, time\n"
        "kids = [subprocess.Popen(['sleep', '300']) for _ in range(3)]\n"
        "print(' '.join(str(k.pid) for k in kids), flush=True)\n"
        "time.sleep(300)\n"
    )
    started = time.monotonic()
    result = run(Executor(), python_handle(code, timeout=1.0))
    assert result.timed_out and result.signal == signal.SIGTERM
    assert time.monotonic() - started < 10
    pids = [int(p) for p in str(result.stdout).split()]
    assert len(pids) == 3
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in pids)


def test_sigterm_ignoring_child_gets_sigkill_after_grace(run: Run) -> None:
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(300)\n"
    )
    result = run(Executor(Policy(kill_grace=0.5)), python_handle(code, timeout=0.5))
    assert result.timed_out and result.signal == signal.SIGKILL


def test_descendants_left_behind_are_killed_when_the_child_exits(run: Run) -> None:
    code = "import subprocess\np = subprocess.Popen(['sleep', '300'])\nprint(p.pid, flush=True)\n"
    result = run(Executor(), python_handle(code))
    assert result.exit_code == 0 and not result.timed_out
    pid = int(str(result.stdout))
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_a_gibibyte_of_output_stays_within_the_cap(run: Run) -> None:
    handle = CommandHandle.load(
        {
            "name": "zeros",
            "handle": "command",
            "command": "head",
            "arguments": ["-c", str(1 << 30), "/dev/zero"],
            "max_output": 1 << 20,
        }
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run(Executor(), handle)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert result.exit_code == 0
    assert result.stdout_truncated and not result.stderr_truncated
    assert len(str(result.stdout)) == 1 << 20
    assert grown_kib < 64 * 1024  # far below the 1 GiB that went through the pipe


def test_invalid_utf8_is_replaced_and_reported(run: Run) -> None:
    result = run(
        Executor(), python_handle("import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe end')")
    )
    assert result.stdout == "ok \ufffd\ufffd end" and result.stdout_replaced
    binary = run(
        Executor(),
        python_handle(
            "import sys; sys.stdout.buffer.write(b'\\x00\\xff')", io={"encoding": "binary"}
        ),
    )
    assert binary.stdout == b"\x00\xff" and binary.to_json()["stdout"] == "AP8="
    latin = run(
        Executor(),
        python_handle(
            "import sys; sys.stdout.buffer.write(b'caf\\xe9')", io={"encoding": "latin-1"}
        ),
    )
    assert latin.stdout == "café" and not latin.stdout_replaced


def test_a_child_that_never_reads_a_large_stdin_does_not_deadlock(run: Run) -> None:
    handle = CommandHandle.load(
        {
            "name": "t",
            "handle": "command",
            "command": "true",
            "io": {"stdin": {"$": "big"}},
            "parameters": {"type": "object"},
        }
    )
    result = run(Executor(), handle, {"big": "x" * (8 << 20)})
    assert result.exit_code == 0 and not result.timed_out
    echo = probe_handle(io={"stdin": {"$": "big"}})
    assert len(report(run(Executor(), echo, {"big": "y" * (4 << 20)}))["stdin"]) == 4 << 20


def test_heavy_output_on_both_streams_at_once(run: Run) -> None:
    code = (
        "import sys\n"
        "for _ in range(2000):\n"
        "    sys.stdout.write('o' * 1000); sys.stderr.write('e' * 1000)\n"
    )
    result = run(Executor(), python_handle(code, timeout=30))
    assert result.exit_code == 0
    assert len(str(result.stdout)) == len(str(result.stderr)) == 2_000_000


def test_signals_are_results(run: Run) -> None:
    killed = run(
        Executor(), python_handle("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    )
    assert (
        killed.exit_code is None
        and killed.signal == signal.SIGKILL
        and killed.signal_name == "SIGKILL"
    )
    failed = run(Executor(), python_handle("import sys; sys.exit(7)"))
    assert failed.exit_code == 7 and failed.signal is None and not failed.ok


def test_stream_modes(tmp_path: Path, run: Run) -> None:
    quiet = run(
        Executor(), python_handle("print('x')", io={"stdout": "ignore", "stderr": "ignore"})
    )
    assert quiet.stdout is None and quiet.stderr is None and quiet.exit_code == 0


def test_concurrent_calls_with_different_directories(tmp_path: Path) -> None:
    directories = []
    for index in range(8):
        directory = tmp_path / f"d{index}"
        directory.mkdir()
        directories.append(str(directory))
    handle = probe_handle(directory={"$": "dir"})
    executor = Executor(Policy(max_concurrency=4))
    results: dict[str, str] = {}

    async def main() -> None:
        async def one(directory: str) -> None:
            results[directory] = report(await executor.call(handle, {"dir": directory}))["cwd"]

        async with trio.open_nursery() as nursery:
            for directory in directories:
                nursery.start_soon(one, directory)

    cwd = os.getcwd()
    trio.run(main)
    assert results == {d: d for d in directories}
    assert os.getcwd() == cwd


def test_trio_cancellation_kills_the_tree() -> None:
    code = (
        "import subprocess, time\n"
        "p = subprocess.Popen(['sleep', '300'])\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    handle = python_handle(code)
    executor = Executor()
    seen: list[int] = []

    async def main() -> None:
        with trio.move_on_after(1.5):
            async with executor.stream(handle) as events:
                async for event in events:
                    if event.kind == "stdout":
                        seen.append(int(event.data))

    started = time.monotonic()
    trio.run(main)
    assert time.monotonic() - started < 10
    assert len(seen) == 1
    deadline = time.monotonic() + 5
    while alive(seen[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(seen[0])


def test_streaming_yields_chunks_then_the_exit() -> None:
    code = (
        "import sys, time\n"
        "for i in range(3):\n"
        "    print(i, flush=True); time.sleep(0.05)\n"
        "sys.stderr.write('done')\n"
    )
    events: list[Any] = []

    async def main() -> None:
        async with Executor().stream(python_handle(code)) as stream:
            async for event in stream:
                events.append(event)

    trio.run(main)
    assert b"".join(e.data for e in events if e.kind == "stdout") == b"0\n1\n2\n"
    assert events[-1].kind == "exit" and events[-1].result.exit_code == 0
    assert events[-1].result.stderr == "done"


def test_asyncio_entry_point() -> None:
    executor = Executor()
    sleeper = CommandHandle.load(
        {"name": "s", "handle": "command", "command": "sleep", "arguments": ["300"]}
    )

    async def main() -> tuple[list[Any], float]:
        results = await asyncio.gather(
            *(executor.call_asyncio(probe_handle(), {"words": [str(i)]}) for i in range(4))
        )
        task = asyncio.create_task(executor.call_asyncio(sleeper))
        await asyncio.sleep(0.5)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return list(results), time.monotonic() - started

    results, cancel_time = asyncio.run(main())
    assert [report(r)["argv"] for r in results] == [["0"], ["1"], ["2"], ["3"]]
    assert cancel_time < 5


def test_result_template_shapes_the_view() -> None:
    handle = python_handle(
        "print('hello')",
        result={
            "$if": "exit_code == 0",
            "$then": {"said": {"$": "stdout"}},
            "$else": {"failed": True},
        },
    )
    result = Executor().call_sync(handle)
    assert result.view == {"said": "hello\n"}
    assert result.to_json()["stdout"] == "hello\n"


def test_render_spawns_nothing_and_shows_the_invocation(tmp_path: Path) -> None:
    handle = probe_handle(
        directory=str(tmp_path), environment={"A": 1}, io={"stdin": "in"}, timeout=5
    )
    invocation = handle.render({"words": ["a b"]}, Policy(timeout=2))
    assert invocation.argv == (PY, PROBE, "a b")
    assert invocation.env == {"A": "1"} and invocation.cwd == str(tmp_path)
    assert invocation.stdin == b"in" and invocation.timeout == 2


def test_yaml_and_json_handles_load() -> None:
    yaml_handle = CommandHandle.load(ROOT / "fixtures" / "handles" / "sort-lines.yaml")
    result = Executor().call_sync(yaml_handle, {"text": "b\na\nc\n", "reverse": True})
    assert result.stdout == "c\nb\na\n"
    schema = CommandHandle.model_json_schema()
    assert "command" in schema["required"] and "name" in schema["properties"]


def test_executor_bounds_concurrent_children(tmp_path: Path) -> None:
    handle = concurrency_probe(tmp_path, hold=0.3)
    executor = Executor(Policy(max_concurrency=2))
    seen: list[int] = []

    async def main() -> None:
        async def one() -> None:
            seen.append(int(str((await executor.call(handle)).stdout)))

        async with trio.open_nursery() as nursery:
            for _ in range(6):
                nursery.start_soon(one)

    trio.run(main)
    assert len(seen) == 6 and max(seen) <= 2


def test_cli_shows_elapsed_time_only_on_a_terminal(tmp_path: Path) -> None:
    import pty
    import subprocess

    handle = tmp_path / "slow.json"
    handle.write_text(
        json.dumps({"name": "slow", "handle": "command", "command": "sleep", "arguments": ["1.6"]})
    )
    command = [PY, "-m", "command_handle", "run", str(handle), "--raw"]
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            command, stderr=follower, stdout=subprocess.DEVNULL, timeout=60, check=True, cwd=ROOT
        )
        os.set_blocking(leader, False)
        shown = os.read(leader, 65536).decode(errors="replace")
    finally:
        os.close(leader)
        os.close(follower)
    assert "slow:" in shown and " s" in shown
    piped = subprocess.run(
        command, capture_output=True, text=True, timeout=60, check=True, cwd=ROOT
    )
    assert piped.stderr == ""


def test_a_setsid_escapee_is_the_documented_limit(tmp_path: Path) -> None:
    """docs/security.md, Known limits: a descendant that double-forks and calls
    setsid leaves the process group. The call still returns after the grace
    period (its pipes are abandoned), and the escapee is not killed."""
    pidfile = tmp_path / "escapee"
    code = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "        time.sleep(30)\n"  # holds the stdout pipe
        "    os._exit(0)\n"
        "os.wait()\n"
        "while not os.path.exists(" + repr(str(pidfile)) + "): time.sleep(0.01)\n"
        "print('parent done')\n"
    )
    executor = Executor(Policy(kill_grace=0.3))
    started = time.monotonic()
    result = executor.call_sync(python_handle(code), {})
    assert time.monotonic() - started < 10
    assert result.exit_code == 0 and result.stdout == "parent done\n"
    escapee = int(pidfile.read_text())
    try:
        os.kill(escapee, 0)  # still alive: outside the group, as documented
    finally:
        os.kill(escapee, signal.SIGKILL)
