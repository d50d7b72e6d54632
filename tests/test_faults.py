"""Faults with real processes: a child that misbehaves, a world that changes
between the checks and the launch, a host out of descriptors, and a caller
that cancels at every stage. Each failure must be a clear error or a result,
and the executor must stay usable afterwards, with nothing left behind."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import (
    AfterRunError,
    CommandError,
    CommandHandle,
    DirectoryError,
    Executor,
    LaunchError,
    Policy,
    utcp,
)
from command_handle.form import escape

from .processes import (
    PY,
    children,
    descriptors_exhausted,
    open_fds,
    probe_handle,
    python_handle,
    report,
    unprivileged,
    wait_dead,
)

# A child that starts a grandchild in its group, records the grandchild's pid
# in the file named by its first argument, then talks and waits forever.
FAMILY = (
    "import subprocess, sys, time\n"
    "kid = subprocess.Popen(['sleep', '300'])\n"
    "open(sys.argv[1], 'w').write(str(kid.pid))\n"
    "while True:\n"
    "    print('tick', flush=True)\n"
    "    time.sleep(0.01)\n"
)


def family_handle(**fields: Any) -> CommandHandle:
    document: dict[str, Any] = {
        "name": "family",
        "handle": "command",
        "command": PY,
        "arguments": ["-c", escape(FAMILY), {"$": "pidfile"}],
        "parameters": {
            "type": "object",
            "properties": {"pidfile": {"type": "string"}},
            "required": ["pidfile"],
        },
    }
    document.update(fields)
    return CommandHandle.load(document)


def recorded_pids(directory: Path) -> list[int]:
    pids = []
    for path in directory.iterdir():
        text = path.read_text()
        if text:
            pids.append(int(text))
    return pids


@contextmanager
def nothing_left_behind() -> Iterator[None]:
    """Assert that the block leaves no child process and no descriptor open.

    Garbage of earlier tests is collected first: an object that owns a
    descriptor closes it when collected (a trio wake pipe dropped by a
    cancelled call, say), and a collection during the block would otherwise
    look like a descriptor closed by it."""
    gc.collect()
    fds = open_fds()
    before = {fd: _target(fd) for fd in fds}
    yield
    deadline = time.monotonic() + 5
    while children() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert children() == []
    after = open_fds()
    assert after == fds, {
        "left open": {fd: _target(fd) for fd in after - fds},
        "closed": {fd: before[fd] for fd in fds - after},
    }


def _target(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return "?"


# -- a child that misbehaves ------------------------------------------------------


def test_a_child_that_closes_stdout_early_and_keeps_running() -> None:
    code = (
        "import os, sys, time\n"
        "sys.stdout.write('before close'); sys.stdout.flush()\n"
        "os.close(1)\n"
        "time.sleep(0.5)\n"
        "sys.stderr.write('still running')\n"
        "sys.exit(3)\n"
    )
    with nothing_left_behind():
        started = time.monotonic()
        result = Executor().call_sync(python_handle(code))
    # The call waits for the exit, not for end-of-file on stdout.
    assert time.monotonic() - started >= 0.5
    assert result.exit_code == 3 and not result.timed_out
    assert result.stdout == "before close" and result.stderr == "still running"


def test_a_child_that_closes_both_streams_and_hangs_is_timed_out() -> None:
    code = "import os, time\nos.close(1); os.close(2)\ntime.sleep(300)\n"
    with nothing_left_behind():
        started = time.monotonic()
        result = Executor(Policy(kill_grace=0.5)).call_sync(python_handle(code, timeout=0.5))
    assert time.monotonic() - started < 10
    assert result.timed_out and result.signal == signal.SIGTERM
    assert result.stdout == "" and result.stderr == ""


def test_a_child_that_exits_before_reading_stdin(tmp_path: Path) -> None:
    """The child exits at once while 16 MiB wait to be written to its stdin."""
    handle = python_handle("import sys; sys.exit(5)", io={"stdin": {"$": "data"}})
    with nothing_left_behind():
        result = Executor().call_sync(handle, {"data": "z" * (16 << 20)})
    assert result.exit_code == 5 and not result.timed_out


def test_a_child_killed_by_a_signal_while_writing_both_streams() -> None:
    code = (
        "import os, signal, sys\n"
        "for i in range(200):\n"
        "    sys.stdout.write('o' * 4096); sys.stderr.write('e' * 4096)\n"
        "sys.stdout.flush(); sys.stderr.flush()\n"
        "os.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    with nothing_left_behind():
        result = Executor().call_sync(python_handle(code))
    assert result.exit_code is None and result.signal_name == "SIGSEGV"
    assert len(str(result.stdout)) == len(str(result.stderr)) == 200 * 4096


def test_binary_and_invalid_utf8_in_a_plan_step_are_kept_as_bytes() -> None:
    template = {
        "call_template_type": "cli",
        "commands": [
            {"command": f"{PY} -c 'import sys; sys.stdout.buffer.write(b\"\\xff\\x00ok\")'"}
        ],
    }
    result = trio.run(utcp.run, template)
    assert result.steps[0].output == b"\xff\x00ok"
    assert result.steps[0].status == 0


# -- the world changes between the checks and the launch ---------------------------


def _program(directory: Path) -> Path:
    path = directory / "prog"
    path.write_text("#!/bin/sh\necho ran\n")
    path.chmod(0o755)
    return path


def test_the_directory_is_removed_after_the_checks(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    executor = Executor()
    invocation = probe_handle(directory=str(work)).render({"words": []}, executor.policy)
    work.rmdir()
    with nothing_left_behind(), pytest.raises(LaunchError) as caught:
        trio.run(executor.run, invocation)
    assert caught.value.pointer == "/directory"
    assert "the directory could not be entered at launch" in str(caught.value)
    assert str(work) not in str(caught.value)  # a directory may come from the model
    assert "ENOENT" in str(caught.value) and "changed after it was checked" in str(caught.value)
    work.mkdir()  # the same invocation works again once the directory is back
    assert report(trio.run(executor.run, invocation))["cwd"] == str(work)


def test_the_executable_is_removed_after_the_checks(tmp_path: Path) -> None:
    """The program's checks run again once the call has its slot, just before the
    launch (red-team finding 6), so a change since the render is refused there."""
    program = _program(tmp_path)
    handle = CommandHandle.load({"name": "p", "handle": "command", "command": str(program)})
    executor = Executor()
    invocation = handle.render(None, executor.policy)
    program.unlink()
    with nothing_left_behind(), pytest.raises(CommandError) as caught:
        trio.run(executor.run, invocation)
    assert caught.value.pointer == "/command"
    assert "the command does not exist" in str(caught.value)
    assert executor.spawned == 0
    _program(tmp_path)
    assert trio.run(executor.run, invocation).stdout == "ran\n"


def test_the_executable_loses_its_execute_bit_after_the_checks(tmp_path: Path) -> None:
    program = _program(tmp_path)
    handle = CommandHandle.load({"name": "p", "handle": "command", "command": str(program)})
    executor = Executor()
    invocation = handle.render(None, executor.policy)
    program.chmod(0o644)  # even root cannot execute a file with no execute bit
    with nothing_left_behind(), pytest.raises(CommandError) as caught:
        trio.run(executor.run, invocation)  # the check repeated before the launch
    assert caught.value.pointer == "/command" and "not executable" in str(caught.value)
    assert executor.spawned == 0
    # The checks catch it on the next call, before anything is launched.
    with pytest.raises(CommandError, match="is not executable by this user"):
        executor.call_sync(handle)
    program.chmod(0o755)
    assert executor.call_sync(handle).stdout == "ran\n"


def test_the_executable_is_replaced_by_something_that_cannot_run(tmp_path: Path) -> None:
    program = _program(tmp_path)
    handle = CommandHandle.load({"name": "p", "handle": "command", "command": str(program)})
    executor = Executor()
    invocation = handle.render(None, executor.policy)
    program.write_bytes(b"\x7fELF\x00garbage")
    with pytest.raises(LaunchError) as caught:
        trio.run(executor.run, invocation)
    assert "ENOEXEC" in str(caught.value) and caught.value.pointer == "/command"


def test_a_plan_program_that_cannot_start_leaves_no_descriptor(tmp_path: Path) -> None:
    """A launch refused by the system (ENOEXEC) is bash's status 126; the pipe
    made for the step's output was left open on every such step."""
    program = tmp_path / "garbage"
    program.write_bytes(b"\x7fELF\x00garbage")
    program.chmod(0o755)
    source = {"call_template_type": "cli", "commands": [{"command": f"{program}; echo $?"}]}
    utcp.run_sync({"call_template_type": "cli", "commands": [{"command": "true"}]})  # warm
    with nothing_left_behind():
        for _ in range(3):
            result = utcp.run_sync(source)
    assert result.output.endswith("Exec format error (ENOEXEC)\n126")


def _permission_scenario() -> dict[str, Any]:
    base = tempfile.mkdtemp()
    work = os.path.join(base, "work")
    os.mkdir(work)
    executor = Executor()
    handle = CommandHandle.load(
        {"name": "t", "handle": "command", "command": "true", "directory": work}
    )
    invocation = handle.render(None, executor.policy)
    os.chmod(work, 0)
    out: dict[str, Any] = {}
    try:
        trio.run(executor.run, invocation)
    except LaunchError as exc:
        out["launch"] = [type(exc).__name__, exc.pointer, str(exc)]
    try:
        executor.call_sync(handle)
    except DirectoryError as exc:
        out["check"] = [type(exc).__name__, exc.pointer, str(exc)]
    os.chmod(work, 0o755)
    out["after"] = executor.call_sync(handle).exit_code
    locked = os.path.join(base, "locked")
    os.mkdir(locked)
    shutil.copy("/bin/true", os.path.join(locked, "true"))
    os.chmod(locked, 0)
    policy = Policy(search_path=(locked, "/usr/bin", "/bin"))
    bare = CommandHandle.load({"name": "t", "handle": "command", "command": "true"})
    out["path"] = Executor(policy).call_sync(bare).argv[0]
    os.chmod(locked, 0o755)
    shutil.rmtree(base)
    return out


def test_the_directory_loses_permission_and_a_path_entry_is_unreadable() -> None:
    out = unprivileged(_permission_scenario)
    name, pointer, message = out["launch"]
    assert (name, pointer) == ("LaunchError", "/directory")
    assert "could not be entered at launch" in message and "EACCES" in message
    name, pointer, message = out["check"]
    assert (name, pointer) == ("DirectoryError", "/directory") and "not searchable" in message
    assert out["after"] == 0
    # The unreadable entry (which holds a 'true') is skipped, as execvp skips it.
    assert out["path"] in ("/usr/bin/true", "/bin/true")


def test_search_path_entries_that_cannot_be_searched_are_skipped(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "missing")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _program(bin_dir)
    entries = (str(not_a_directory), str(dangling), str(loop), "x" * 5000, str(bin_dir))
    policy = Policy(search_path=entries)
    handle = CommandHandle.load({"name": "p", "handle": "command", "command": "prog"})
    assert Executor(policy).call_sync(handle).stdout == "ran\n"
    missing = CommandHandle.load({"name": "p", "handle": "command", "command": "absent"})
    with pytest.raises(CommandError, match="was not found in the search path"):
        Executor(policy).call_sync(missing)
    # A UTCP plan's lookup skips the same entries.
    template = {"call_template_type": "cli", "commands": [{"command": "prog"}]}
    result = trio.run(partial(utcp.run, template, policy=policy))
    assert result.steps[0].output == b"ran\n"


# -- the host runs out of descriptors -----------------------------------------------


def test_running_out_of_descriptors_is_a_clear_error_and_the_executor_recovers() -> None:
    executor = Executor()
    handle = probe_handle(io={"stdin": {"$": "text"}})
    template = {"call_template_type": "cli", "commands": [{"command": f"{PY} -c pass | cat"}]}
    plan = utcp.translate(template)

    async def main() -> dict[str, Any]:
        refusals: list[LaunchError] = []
        gc.collect()  # earlier garbage: see nothing_left_behind
        fds = open_fds()
        with descriptors_exhausted():
            for attempt in (
                lambda: executor.call(handle, {"words": [], "text": "x"}),
                lambda: executor.run(utcp.prepare_plan(plan, {}, policy=executor.policy)),
            ):
                with pytest.raises(LaunchError) as caught:
                    await attempt()
                refusals.append(caught.value)
        assert open_fds() == fds  # the failed launches kept nothing open
        for refusal in refusals:
            assert "ran out of resources" in str(refusal) and "EMFILE" in str(refusal)
            assert refusal.pointer == "/command"
        # Usable afterwards, for both kinds of call.
        piped = await executor.run(utcp.prepare_plan(plan, {}, policy=executor.policy))
        assert piped.steps[0].status == 0
        return report(await executor.call(handle, {"words": ["again"], "text": "y"}))

    with nothing_left_behind():
        seen = trio.run(main)
    assert seen["argv"] == ["again"] and seen["stdin"] == "y"


# -- cancellation at every stage -----------------------------------------------------


def test_cancelled_during_evaluation_spawns_nothing() -> None:
    """The deadline passes while a large template is evaluated: the cancellation
    arrives at the first checkpoint after it, before the launch."""
    handle = CommandHandle.load(
        {
            "name": "big",
            "handle": "command",
            "command": "true",
            "arguments": {"$each": "$.items[*]", "$as": "x", "$value": "item-{{x}}"},
            "parameters": {"type": "object"},
        }
    )
    executor = Executor()
    items = list(range(50_000))

    async def main() -> bool:
        with trio.move_on_after(0.001) as scope:
            await executor.call(handle, {"items": items})
        return scope.cancelled_caught

    with nothing_left_behind():
        assert trio.run(main)
    assert executor.spawned == 0


def test_cancelled_while_waiting_for_a_slot_spawns_nothing(tmp_path: Path) -> None:
    executor = Executor(Policy(max_concurrency=1))
    busy = python_handle("import time; time.sleep(0.6)")
    waiting = probe_handle()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(executor.call, busy)
            await trio.sleep(0.1)
            with trio.move_on_after(0.1) as scope:
                await executor.call(waiting, {"words": []})
            assert scope.cancelled_caught

    with nothing_left_behind():
        trio.run(main)
    assert executor.spawned == 1  # only the busy call ran


def test_cancellation_at_any_moment_leaves_nothing_behind(tmp_path: Path) -> None:
    """Deadlines from 0 to 100 ms fall before, during and after the launch, and
    while the output streams; every grandchild dies and no descriptor stays."""
    executor = Executor(Policy(kill_grace=0.5))
    handle = family_handle(io={"stdin": {"$": "pidfile"}})

    async def main() -> int:
        cancelled = 0
        for index in range(50):
            pidfile = tmp_path / f"pid-{index}"
            pidfile.write_text("")
            with trio.move_on_after(index * 0.002) as scope:
                await executor.call(handle, {"pidfile": str(pidfile)})
            cancelled += scope.cancelled_caught
        return cancelled

    with nothing_left_behind():
        cancelled = trio.run(main)
    assert cancelled == 50
    pids = recorded_pids(tmp_path)
    assert pids, "no deadline fell after a grandchild started"
    assert wait_dead(pids) == []


def test_cancelled_while_feeding_stdin(tmp_path: Path) -> None:
    """The child reads its 32 MiB stdin slowly; the caller gives up part way."""
    code = "import sys, time\nwhile sys.stdin.buffer.read(65536):\n    time.sleep(0.01)\n"
    handle = python_handle(code, io={"stdin": {"$": "data"}})
    executor = Executor()

    async def main() -> bool:
        with trio.move_on_after(0.3) as scope:
            await executor.call(handle, {"data": "d" * (32 << 20)})
        return scope.cancelled_caught

    with nothing_left_behind():
        assert trio.run(main)


def test_asyncio_cancellation_while_streaming_kills_the_grandchildren(tmp_path: Path) -> None:
    executor = Executor()
    pidfile = tmp_path / "pid"

    async def main() -> None:
        task = asyncio.ensure_future(
            executor.call_asyncio(family_handle(), {"pidfile": str(pidfile)})
        )
        while not pidfile.exists() or not pidfile.read_text():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with nothing_left_behind():
        asyncio.run(main())
    assert wait_dead([int(pidfile.read_text())]) == []


def test_cancelling_a_plan_mid_pipeline_kills_every_element(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    template = {
        "call_template_type": "cli",
        "commands": [{"command": f"{PY} -c {escape_shell(FAMILY)} {pidfile} | cat | cat"}],
    }
    plan = utcp.translate(template)
    executor = Executor()

    async def main() -> bool:
        with trio.move_on_after(5) as scope:
            async with trio.open_nursery() as nursery:
                prepared = utcp.prepare_plan(plan, {}, policy=executor.policy)
                nursery.start_soon(executor.run, prepared)
                while not pidfile.exists() or not pidfile.read_text():
                    await trio.sleep(0.01)
                nursery.cancel_scope.cancel()
        return not scope.cancelled_caught

    with nothing_left_behind():
        assert trio.run(main)
    assert wait_dead([int(pidfile.read_text())]) == []


def escape_shell(text: str) -> str:
    """``text`` as one single-quoted shell word."""
    return "'" + text.replace("'", "'\\''") + "'"


def test_a_refusal_inside_a_running_pipeline_reaches_the_caller_unwrapped(tmp_path: Path) -> None:
    """The program is computed at run time, so only the launch can refuse it; the
    pipeline's other programs have started, so the refusal carries what ran."""
    setuid = tmp_path / "setuid-true"
    shutil.copy("/bin/true", setuid)
    setuid.chmod(0o4755)
    template = {
        "call_template_type": "cli",
        "commands": [
            {"command": "cat /dev/null"},  # a program surely ran before the refusal
            {"command": f"P={setuid}; echo x | cat | $P | cat"},
        ],
    }
    with nothing_left_behind(), pytest.raises(AfterRunError) as caught:
        trio.run(utcp.run, template)
    assert isinstance(caught.value.error, CommandError)
    assert "set-user-ID" in str(caught.value)
    assert caught.value.pointer == "/commands/1/command"
    assert isinstance(caught.value.result, utcp.PlanResult)
