"""The executor's contracts on every path: trio, asyncio and plain threads.

Behavioural tests that apply to a single call are parametrized over the three
paths in test_executor.py (the ``run`` fixture); these are the ones that need
each path's own way of cancelling, streaming or sharing an Executor.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import trio

from command_handle import (
    AfterRunError,
    CommandError,
    CommandHandle,
    CommandHandleError,
    CommandResult,
    Event,
    Executor,
    HandleLoadError,
    Policy,
    TemplateEvaluationError,
    utcp,
)

from .conftest import Run
from .processes import (
    concurrency_probe,
    python_handle,
    python_handle_with_argv,
    wait_dead,
)

SPAWNS_A_GRANDCHILD = (
    "import subprocess, time\n"
    "p = subprocess.Popen(['sleep', '300'])\n"
    "print(p.pid, flush=True)\n"
    "time.sleep(300)\n"
)


class Interrupted(Exception):
    """Raised in the main thread by a signal handler: how a thread is interrupted."""


@contextmanager
def alarm_after(seconds: float) -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _grandchild_of(handle_output: list[int]) -> int:
    assert len(handle_output) == 1, handle_output
    return handle_output[0]


@pytest.mark.parametrize("backend", ["sync", "trio", "asyncio"])
def test_cancelling_a_call_kills_the_child_and_its_descendants(
    backend: str, tmp_path: Path
) -> None:
    """The grandchild's pid is written to a file, since a cancelled call has no result."""
    pidfile = tmp_path / "pid"
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen(['sleep', '300'])\n"
        "open(sys.argv[1], 'w').write(str(p.pid))\n"
        "time.sleep(300)\n"
    )
    handle = python_handle_with_argv(code, str(pidfile))
    executor = Executor()
    started = time.monotonic()
    if backend == "sync":
        with alarm_after(1.0), pytest.raises(Interrupted):
            executor.call_sync(handle)
    elif backend == "trio":

        async def trio_main() -> bool:
            with trio.move_on_after(1.0) as scope:
                await executor.call(handle)
            return scope.cancelled_caught

        assert trio.run(trio_main)
    else:

        async def asyncio_main() -> None:
            task = asyncio.create_task(executor.call(handle))
            await asyncio.sleep(1.0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(asyncio_main())
    assert time.monotonic() - started < 10
    grandchild = int(pidfile.read_text())
    assert wait_dead([grandchild]) == []


def _stream(backend: str, executor: Executor, handle: CommandHandle) -> list[Event]:
    events: list[Event] = []

    async def main() -> None:
        async with executor.stream(handle) as stream:
            async for event in stream:
                events.append(event)

    if backend == "trio":
        trio.run(main)
    else:
        asyncio.run(main())
    return events


def test_streaming_gives_the_same_events_under_trio_and_asyncio() -> None:
    code = (
        "import sys, time\n"
        "for i in range(3):\n"
        "    print(i, flush=True); time.sleep(0.05)\n"
        "sys.stderr.write('done')\n"
    )
    handle = python_handle(code)
    seen = {}
    for backend in ("trio", "asyncio"):
        events = _stream(backend, Executor(), handle)
        final = events[-1].result
        assert events[-1].kind == "exit" and isinstance(final, CommandResult)
        assert final.exit_code == 0 and final.stderr == "done"
        out = b"".join(e.data for e in events if e.kind == "stdout")
        err = b"".join(e.data for e in events if e.kind == "stderr")
        seen[backend] = (out, err, [e.kind for e in events][-1])
    assert seen["trio"] == seen["asyncio"] == (b"0\n1\n2\n", b"done", "exit")


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_leaving_a_stream_early_kills_the_child_and_raises_no_group(backend: str) -> None:
    executor = Executor()
    handle = python_handle(SPAWNS_A_GRANDCHILD)
    seen: list[int] = []

    async def main() -> None:
        async with executor.stream(handle) as events:
            async for event in events:
                seen.append(int(event.data))
                raise ValueError("the consumer failed")

    with pytest.raises(ValueError, match="the consumer failed"):
        trio.run(main) if backend == "trio" else asyncio.run(main())
    assert wait_dead([_grandchild_of(seen)]) == []


# The program prints "-x"; the args encoding refuses a token from the data that
# starts with "-", so this result template fails after the program ran.
FAILS_AFTER_THE_RUN = {"$encode": "args", "echo": {"$args": [{"$": "stdout"}]}}


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_a_failed_result_template_in_a_stream_is_raised_to_the_consumer(backend: str) -> None:
    bad = python_handle("print('-x')", result=FAILS_AFTER_THE_RUN)
    events: list[Event] = []

    async def main() -> None:
        async with Executor().stream(bad) as stream:
            async for event in stream:
                events.append(event)

    with pytest.raises(AfterRunError) as caught:
        trio.run(main) if backend == "trio" else asyncio.run(main())
    assert caught.value.result.stdout == "-x\n"  # type: ignore[attr-defined]
    assert [e.kind for e in events] == ["stdout"]


def test_one_executor_shared_by_threads_trio_and_asyncio_keeps_its_limit(tmp_path: Path) -> None:
    """max_concurrency=1 across 8 threads, an asyncio loop and a trio run at once:
    every child sees itself alone in the directory, and every call finishes."""
    handle = concurrency_probe(tmp_path, hold=0.02)
    executor = Executor(Policy(max_concurrency=1))
    seen: list[int] = []
    lock = threading.Lock()

    def record(result: Any) -> None:
        with lock:
            seen.append(int(str(result.stdout)))

    def sync_caller() -> None:
        for _ in range(2):
            record(executor.call_sync(handle))

    def asyncio_caller() -> None:
        async def main() -> None:
            for result in await asyncio.gather(*(executor.call(handle) for _ in range(4))):
                record(result)

        asyncio.run(main())

    def trio_caller() -> None:
        async def main() -> None:
            async def one() -> None:
                record(await executor.call(handle))

            async with trio.open_nursery() as nursery:
                for _ in range(4):
                    nursery.start_soon(one)

        trio.run(main)

    threads = [threading.Thread(target=sync_caller) for _ in range(8)]
    threads += [threading.Thread(target=asyncio_caller), threading.Thread(target=trio_caller)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert len(seen) == 24 and set(seen) == {1}
    assert executor.spawned == 24


def test_a_cancelled_waiter_passes_its_slot_on() -> None:
    executor = Executor(Policy(max_concurrency=1))
    sleeper = python_handle("import time; time.sleep(0.5)")
    quick = python_handle("print('ok')")

    async def main() -> list[str]:
        first = asyncio.create_task(executor.call(sleeper))
        await asyncio.sleep(0.1)
        waiting = asyncio.create_task(executor.call(quick))
        await asyncio.sleep(0.1)
        waiting.cancel()  # gives up while waiting for the slot
        await first
        after = await asyncio.wait_for(executor.call(quick), 10)
        return [str(after.stdout)]

    assert asyncio.run(main()) == ["ok\n"]


def test_output_cut_inside_a_character_is_not_reported_as_replaced(run: Run) -> None:
    handle = python_handle(
        "import sys; sys.stdout.write('é' * 10)", max_output=7
    )  # 'é' is two bytes: the cap falls inside the fourth
    result = run(Executor(), handle)
    assert result.stdout_truncated and not result.stdout_replaced
    assert result.stdout == "ééé"


def test_without_a_result_template_the_view_does_not_repeat_the_result(run: Run) -> None:
    result = run(Executor(), python_handle("print('hi')"))
    assert result.view is None
    shaped = run(Executor(), python_handle("print('hi')", result={"$": "stdout"}))
    assert shaped.view == "hi\n"


def test_a_result_template_that_fails_after_the_run_carries_the_result(run: Run) -> None:
    with pytest.raises(AfterRunError) as caught:
        run(Executor(), python_handle("print('-x')", result=FAILS_AFTER_THE_RUN))
    assert caught.value.result.stdout == "-x\n"  # type: ignore[attr-defined]
    assert isinstance(caught.value.error, TemplateEvaluationError)
    assert caught.value.pointer.startswith("/result")


def test_a_plan_is_checked_whole_before_its_first_step(tmp_path: Path) -> None:
    """``touch f; chsh --help`` used to run touch, then refuse chsh."""
    setuid = tmp_path / "setuid-true"
    shutil.copy("/bin/true", setuid)
    setuid.chmod(0o4755)
    canary = tmp_path / "canary"
    for command in (
        f"touch {canary}; {setuid} --help",
        f"touch {canary}",
    ):
        template = {"call_template_type": "cli", "commands": [{"command": command}]}
        if command.endswith("--help"):
            executor = Executor()
            with pytest.raises(CommandError) as caught:
                utcp.run_sync(template, executor=executor)
            assert caught.value.pointer == "/commands/0/command"
            assert executor.spawned == 0 and not canary.exists()
    allowlisted = Executor(Policy(allowed_commands=frozenset({"/usr/bin/touch"})))
    template = {
        "call_template_type": "cli",
        "commands": [{"command": f"touch {canary}"}, {"command": "ls /"}],
    }
    with pytest.raises(CommandError, match="does not allow"):
        utcp.run_sync(template, executor=allowlisted)
    assert allowlisted.spawned == 0 and not canary.exists()


# -- the Policy checks itself --------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("allow_environment", "NODE_*", TypeError),
        ("inherit_environment", "HOME", TypeError),
        ("search_path", "/usr/bin", TypeError),
        ("allowed_commands", "grep", TypeError),
        ("inherit_environment", ["HOME", 3], TypeError),
        ("allow_setuid", 1, TypeError),
        ("timeout", 0, ValueError),
        ("timeout", -1.0, ValueError),
        ("timeout", float("inf"), ValueError),
        ("timeout", "10", TypeError),
        ("kill_grace", 0, ValueError),
        ("max_output", 0, ValueError),
        ("max_output", 1.5, TypeError),
        ("max_concurrency", 0, ValueError),
        ("max_concurrency", True, TypeError),
    ],
)
def test_a_policy_refuses_values_of_the_wrong_kind(field: str, value: object, error: type) -> None:
    with pytest.raises(error) as caught:
        Policy(**{field: value})  # type: ignore[arg-type]
    assert isinstance(caught.value, CommandHandleError)
    assert field in str(caught.value)


def test_a_policy_takes_any_sequence_of_names() -> None:
    names: Any = ["NODE_*"]  # any iterable of names, not only the declared tuple
    commands: Any = {"grep"}
    policy = Policy(
        allow_environment=names, allowed_commands=commands, match_command_names=True, timeout=5
    )
    assert policy.allow_environment == ("NODE_*",)
    assert policy.allowed_commands == frozenset({"grep"})
    assert policy.timeout == 5.0
    # The bug this guards against: a str iterated by character allowed every name.
    assert policy.refuses_variable("LD_PRELOAD") and policy.refuses_variable("BASH_ENV")
    assert not policy.refuses_variable("NODE_OPTIONS")


# -- one error contract ---------------------------------------------------------------


def test_every_error_the_library_raises_has_one_root() -> None:
    import command_handle
    from command_handle import args, form

    for module in (command_handle, form, args, utcp):
        for name in dir(module):
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                assert issubclass(value, CommandHandleError), f"{module.__name__}.{name}"


def test_a_missing_manual_tool_is_a_key_error_of_the_library() -> None:
    manual = utcp.load(Path(__file__).parent.parent / "fixtures" / "utcp" / "cli-manual.json")
    with pytest.raises(KeyError) as caught:
        manual.tool("no-such-tool")  # type: ignore[union-attr]
    assert isinstance(caught.value, CommandHandleError)


def test_a_timed_out_utcp_call_is_a_timeout_error_of_the_library() -> None:
    template = {"call_template_type": "cli", "commands": [{"command": "sleep 5"}]}
    with pytest.raises(TimeoutError) as caught:
        utcp.call_sync(template, policy=Policy(timeout=0.3, kill_grace=0.2))
    assert isinstance(caught.value, CommandHandleError)
    assert caught.value.result.timed_out  # type: ignore[attr-defined]


def test_the_constructor_and_model_copy_refuse_and_recompile_like_load() -> None:
    with pytest.raises(HandleLoadError, match="unknown field"):
        CommandHandle(name="x", handle="command", command="true", bogus=1)
    with pytest.raises(HandleLoadError, match="invalid Tool Form"):
        CommandHandle(name="x", handle="command", command={"$nope": 1})
    first = CommandHandle.load(
        {"name": "x", "handle": "command", "command": "/bin/echo", "arguments": ["one"]}
    )
    second = first.model_copy(update={"arguments": ["two"]})
    assert second.render().argv == ("/bin/echo", "two")
    assert first.render().argv == ("/bin/echo", "one")
    with pytest.raises(HandleLoadError):
        first.model_copy(update={"arguments": {"$nope": 1}})


def test_a_handle_file_is_compiled_once_while_it_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(
        '{"name": "x", "handle": "command", "command": "/bin/echo", "arguments": ["1"]}'
    )
    executor = Executor()
    assert executor._load(path) is executor._load(str(path))
    path.write_text(
        '{"name": "x", "handle": "command", "command": "/bin/echo", "arguments": ["22"]}'
    )
    assert executor.call_sync(path).stdout == "22\n"
    assert os.path.exists(path)


def test_refusals_never_quote_a_value_from_the_model(tmp_path: Path) -> None:
    """The charset refusal, a directory and a computed command from the arguments."""
    secret = "sk-SECRET-API-KEY"
    charset = CommandHandle.load(
        {
            "name": "c",
            "handle": "command",
            "command": "/bin/echo",
            "arguments": {"$encode": "args", "echo": {"$args": [{"$": "token"}]}},
        }
    )
    directory = CommandHandle.load(
        {"name": "d", "handle": "command", "command": "/bin/echo", "directory": {"$": "dir"}}
    )
    command = CommandHandle.load({"name": "p", "handle": "command", "command": {"$": "prog"}})
    cases: list[tuple[CommandHandle, dict[str, str]]] = [
        (charset, {"token": secret + "'x"}),
        (directory, {"dir": str(tmp_path / secret)}),
        (command, {"prog": secret}),
        (command, {"prog": str(tmp_path / secret)}),
    ]
    executor = Executor()
    for handle, args in cases:
        with pytest.raises(CommandHandleError) as caught:
            executor.call_sync(handle, args)
        assert secret not in str(caught.value), caught.value
        assert caught.value.pointer  # type: ignore[attr-defined]
    assert executor.spawned == 0
