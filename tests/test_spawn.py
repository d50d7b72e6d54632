"""What a child starts with, whichever launch path this machine uses
(glibc's posix_spawn, or subprocess where its extensions are missing)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import os
import threading
import time
from pathlib import Path

import anyio
import pytest
import trio

from command_handle import CommandHandle, Executor, Policy
from command_handle.executor import _posix_spawn, _spawn

from .conftest import Run
from .processes import probe_handle, report


def _status(run: Run) -> dict[str, str]:
    handle = CommandHandle.load(
        {
            "name": "status",
            "handle": "command",
            "command": "grep",
            "arguments": ["-E", "^(SigIgn|SigBlk|NoNewPrivs):", "/proc/self/status"],
        }
    )
    lines = str(run(Executor(), handle).stdout).splitlines()
    return dict(line.split(":\t") for line in lines)


def test_the_child_starts_with_default_signals_and_none_blocked(run: Run) -> None:
    """Python ignores SIGPIPE, and glibc's posix_spawn would leave its internal
    signals as the spawning thread has them: the child gets neither."""
    status = _status(run)
    assert int(status["SigIgn"], 16) == 0, status
    assert int(status["SigBlk"], 16) == 0, status
    assert status["NoNewPrivs"] == "1"


def test_no_descriptor_of_ours_reaches_the_child(run: Run) -> None:
    leaky = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(leaky, True)  # not close-on-exec: only closefrom keeps it out
    try:
        handle = CommandHandle.load(
            {"name": "fds", "handle": "command", "command": "ls", "arguments": ["/proc/self/fd"]}
        )
        fds = sorted(int(fd) for fd in str(run(Executor(), handle).stdout).split())
    finally:
        os.close(leaky)
    # 0, 1, 2, and the directory ls has open while it lists.
    assert fds[:3] == [0, 1, 2] and len(fds) == 4, fds


def test_this_machine_uses_the_fast_launch() -> None:
    """Debian's glibc has posix_spawn's chdir and closefrom extensions."""
    assert _posix_spawn.available()


def test_an_idle_spawner_thread_ends_and_a_new_one_starts_on_demand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sandbox profile used once must not leave its threads behind for good."""
    monkeypatch.setattr(_spawn, "_IDLE_SECONDS", 0.1)
    spawner = _spawn.Spawner(lambda: None)
    assert spawner.call(lambda: 1) == 1
    deadline = time.monotonic() + 5
    while spawner._threads and time.monotonic() < deadline:
        time.sleep(0.02)
    assert spawner._threads == 0
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(spawner.call(lambda: 2))) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert results == [2] * 8


def test_every_idle_spawner_thread_is_woken_when_callers_need_it() -> None:
    """Idle threads wait on a pipe; each caller that finds one idle claims it.
    Four launches that can only finish together (a barrier) must run on four
    threads at once, both when the threads are started and when they are
    woken from idle; and no launch is lost when many callers race."""
    spawner = _spawn.Spawner(lambda: None, size=4)
    for _ in range(2):  # the threads start, then idle threads are woken
        barrier = threading.Barrier(4, timeout=10)
        results: list[int] = []

        def together(barrier: threading.Barrier = barrier, results: list[int] = results) -> None:
            results.append(spawner.call(barrier.wait))

        threads = [threading.Thread(target=together) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
        assert sorted(results) == [0, 1, 2, 3]
        deadline = time.monotonic() + 5
        while spawner._idle < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert (spawner._threads, spawner._idle) == (4, 4)
    counted: list[int] = []

    def many(offset: int) -> None:
        counted.extend(spawner.call(functools.partial(int, n)) for n in range(offset, offset + 50))

    async def many_trio(offset: int) -> None:
        for n in range(offset, offset + 50):
            counted.append(await spawner.call_async(functools.partial(int, n)))

    threads = [threading.Thread(target=many, args=(index * 50,)) for index in range(12)]
    threads += [
        threading.Thread(target=trio.run, args=(many_trio, index * 50)) for index in range(12, 16)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(counted) == list(range(800))


def test_a_spawner_that_is_gone_leaves_no_descriptor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipe idle threads wait on lives as long as its spawner: once the
    threads have ended and nothing holds the spawner, both ends are closed."""
    monkeypatch.setattr(_spawn, "_IDLE_SECONDS", 0.1)
    before = set(os.listdir("/proc/self/fd"))
    spawner = _spawn.Spawner(lambda: None)
    assert spawner.call(lambda: 3) == 3
    deadline = time.monotonic() + 5
    while spawner._threads and time.monotonic() < deadline:
        time.sleep(0.02)
    assert spawner._threads == 0
    del spawner
    gc.collect()
    assert set(os.listdir("/proc/self/fd")) <= before


def test_a_forked_process_gets_spawner_threads_of_its_own(tmp_path: Path) -> None:
    """Threads do not survive fork: a forked child of the application that calls
    the executor (also with a sandbox profile the parent already used) starts
    its own spawner threads instead of waiting for the parent's."""
    policy = Policy(sandbox="read-only")
    handle = CommandHandle.load(
        {"name": "t", "handle": "command", "command": "/bin/echo", "arguments": ["ok"]}
    )
    assert Executor(policy).call_sync(handle).stdout == "ok\n"  # the parent's threads exist
    assert Executor().call_sync(handle).stdout == "ok\n"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - reports through its exit status
        code = 1
        try:
            sandboxed = Executor(policy).call_sync(handle).stdout == "ok\n"
            plain = Executor().call_sync(handle).stdout == "ok\n"
            code = 0 if sandboxed and plain else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    raise AssertionError("the forked child hung waiting for its parent's spawner threads")


def test_a_spawner_thread_reuses_file_actions_only_for_the_same_launch(tmp_path: Path) -> None:
    """Sequential calls get the same pipe numbers, so a spawner thread keeps its
    last file actions; calls that alternate directories and streams must each
    get their own: the directory, stdin, and where the output goes."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    executor = Executor()
    with_stdin = probe_handle(directory=str(first), io={"stdin": {"$": "text"}})
    without = probe_handle(directory=str(second), io={"stderr": "ignore"})
    for index in range(6):
        seen = report(executor.call_sync(with_stdin, {"words": [str(index)], "text": "in"}))
        assert (seen["cwd"], seen["stdin"], seen["argv"]) == (str(first), "in", [str(index)])
        seen = report(executor.call_sync(without, {"words": [str(index)]}))
        assert (seen["cwd"], seen["stdin"], seen["argv"]) == (str(second), None, [str(index)])


@pytest.mark.parametrize("deadline", ["anyio-asyncio", "asyncio.timeout", "trio"])
def test_a_deadline_that_falls_during_a_spawner_call_is_the_deadline_s(deadline: str) -> None:
    """A spawner call is shielded (a launch cannot be taken back): the caller gets
    its value, and the deadline lands at the next await as that deadline's own
    cancellation, so its scope catches it. Re-delivering it as a new request left
    asyncio counting one cancellation too many: a plan's timeout that fell
    during a launch escaped ``move_on_after`` as a bare CancelledError."""
    spawner = _spawn.Spawner(lambda: None)

    def slow() -> str:
        time.sleep(0.3)
        return "done"

    async def with_anyio() -> tuple[bool, str]:
        value = ""
        with anyio.move_on_after(0.05) as scope:
            value = await spawner.call_async(slow)
            await anyio.sleep(5)  # the deadline lands here
        return scope.cancelled_caught, value

    async def with_asyncio_timeout() -> tuple[bool, str]:
        value = ""
        try:
            async with asyncio.timeout(0.05):
                value = await spawner.call_async(slow)
                await asyncio.sleep(5)
        except TimeoutError:
            return True, value
        return False, value

    started = time.monotonic()
    if deadline == "anyio-asyncio":
        caught, value = asyncio.run(with_anyio())
    elif deadline == "asyncio.timeout":
        caught, value = asyncio.run(with_asyncio_timeout())
    else:
        caught, value = trio.run(with_anyio)
    assert (caught, value) == (True, "done")
    assert time.monotonic() - started < 2


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_child_may_run_on_every_cpu_after_its_spawner_thread_was_moved() -> None:
    """A blocking caller moves the idle spawner threads onto its own CPU before
    waking one; the woken thread takes back all its CPUs before it launches, so
    the child (which inherits them) is not tied to the caller's CPU. The
    spawner's threads are started by a caller pinned to one CPU, which they
    must not inherit either: children get the main thread's CPUs. Checked in
    the child itself, from callers on each CPU in turn."""
    from command_handle.executor._process import run_invocation_sync

    from .processes import python_handle

    everything = sorted(os.sched_getaffinity(0))
    invocation = python_handle("import os; print(sorted(os.sched_getaffinity(0)))").render()
    spawner = _spawn.Spawner(_spawn.set_no_new_privs)  # no thread yet
    seen: list[str] = []

    def calls_from(cpu: int) -> None:
        os.sched_setaffinity(0, {cpu})  # this caller thread only
        for _ in range(5):
            seen.append(str(run_invocation_sync(invocation, None, spawner).stdout))

    for cpu in everything:
        caller = threading.Thread(target=calls_from, args=(cpu,))
        caller.start()
        caller.join(60)
    assert seen == [f"{everything}\n"] * (5 * len(everything))


@pytest.mark.parametrize("library", ["trio", "asyncio"])
def test_an_async_callers_child_may_run_on_every_cpu_too(library: str) -> None:
    """An async caller moves the idle spawner threads onto its loop's CPU as a
    blocking one does; the children still get every CPU of the main thread.
    Each loop runs in a thread pinned to one CPU, on each CPU in turn."""
    from command_handle.executor._process import run_invocation

    from .processes import python_handle

    everything = sorted(os.sched_getaffinity(0))
    invocation = python_handle("import os; print(sorted(os.sched_getaffinity(0)))").render()
    spawner = _spawn.Spawner(_spawn.set_no_new_privs)  # no thread yet
    seen: list[str] = []

    async def calls() -> None:
        for _ in range(5):
            seen.append(str((await run_invocation(invocation, confined=spawner)).stdout))

    def loop_on(cpu: int) -> None:
        os.sched_setaffinity(0, {cpu})  # this loop's thread only
        if library == "trio":
            trio.run(calls)
        else:
            asyncio.run(calls())

    for cpu in everything:
        caller = threading.Thread(target=loop_on, args=(cpu,))
        caller.start()
        caller.join(60)
    assert seen == [f"{everything}\n"] * (5 * len(everything))


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_restriction_of_every_thread_holds_after_a_move() -> None:
    """``taskset -a`` restricts every thread of a running process, the idle
    spawner threads too. A blocking caller's move, and the restore that follows
    it, must not give them back the CPUs they started with: the children stay
    on the CPUs the process was left."""
    from command_handle.executor._process import run_invocation_sync

    from .processes import python_handle

    everything = os.sched_getaffinity(0)
    first = min(everything)
    invocation = python_handle("import os; print(sorted(os.sched_getaffinity(0)))").render()
    spawner = _spawn.Spawner(_spawn.set_no_new_privs)  # no thread yet
    seen: list[str] = []

    def call() -> None:
        seen.append(str(run_invocation_sync(invocation, None, spawner).stdout))

    def on_every_thread(cpus: set[int]) -> None:  # what taskset -a does
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(ProcessLookupError):  # a thread that has ended
                os.sched_setaffinity(int(tid), cpus)

    caller = threading.Thread(target=call)
    caller.start()
    caller.join(60)
    deadline = time.monotonic() + 10
    while not spawner._sleepers and time.monotonic() < deadline:  # its thread is idle
        time.sleep(0.01)
    on_every_thread({first})
    try:
        for _ in range(3):
            caller = threading.Thread(target=call)
            caller.start()
            caller.join(60)
    finally:
        on_every_thread(everything)
    assert seen[1:] == [f"[{first}]\n"] * 3


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_children_follow_the_main_threads_cpus_without_a_move() -> None:
    """A spawner thread gives its children the main thread's CPUs as they are
    at each launch: changed after the thread started, they reach the children
    of an async caller too (which moves nothing), not only of a blocking one."""
    from command_handle.executor._process import run_invocation, run_invocation_sync

    from .processes import python_handle

    everything = os.sched_getaffinity(0)
    first = min(everything)
    invocation = python_handle("import os; print(sorted(os.sched_getaffinity(0)))").render()
    spawner = _spawn.Spawner(_spawn.set_no_new_privs)
    assert run_invocation_sync(invocation, None, spawner).stdout == f"{sorted(everything)}\n"

    async def from_trio() -> list[str]:
        return [str((await run_invocation(invocation, confined=spawner)).stdout) for _ in range(3)]

    os.sched_setaffinity(0, {first})  # the main thread's (this test runs in it)
    try:
        narrowed = trio.run(from_trio)
    finally:
        os.sched_setaffinity(0, everything)
    widened = trio.run(from_trio)
    assert narrowed == [f"[{first}]\n"] * 3
    assert widened == [f"{sorted(everything)}\n"] * 3


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_busy_spawner_thread_follows_the_main_threads_cpus() -> None:
    """A thread that takes the next launch from the queue without going idle
    (concurrent callers keep it busy) is never woken; the main thread's CPUs,
    changed while it was busy, must still reach the child it launches next."""
    from command_handle.executor._process import run_invocation_sync

    from .processes import python_handle

    everything = os.sched_getaffinity(0)
    first = min(everything)
    invocation = python_handle("import os; print(sorted(os.sched_getaffinity(0)))").render()
    spawner = _spawn.Spawner(_spawn.set_no_new_privs, size=1)
    running, release = threading.Event(), threading.Event()

    def hold() -> None:  # keeps the only thread busy until released
        running.set()
        release.wait(60)

    holder = threading.Thread(target=spawner.call, args=(hold,))
    holder.start()
    assert running.wait(60)
    seen: list[str] = []
    caller = threading.Thread(
        target=lambda: seen.append(str(run_invocation_sync(invocation, None, spawner).stdout))
    )
    caller.start()
    deadline = time.monotonic() + 10
    while spawner._jobs.empty() and time.monotonic() < deadline:  # the launch is queued
        time.sleep(0.01)
    os.sched_setaffinity(0, {first})  # the main thread's (this test runs in it)
    try:
        release.set()
        holder.join(60)
        caller.join(60)
    finally:
        os.sched_setaffinity(0, everything)
    assert seen == [f"[{first}]\n"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_spawner_threads_ending_while_callers_move_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Idle threads are moved by their native id, so a thread that has ended
    must never be among those a caller moves (a new thread could reuse its
    id). Threads end after a short idle time here while blocking and async
    callers on each CPU keep moving the idle ones: every thread moved is alive,
    every call runs, and every child gets every CPU."""
    from command_handle.executor._process import run_invocation, run_invocation_sync

    from .processes import python_handle

    monkeypatch.setattr(_spawn, "_IDLE_SECONDS", 0.003)
    everything = sorted(os.sched_getaffinity(0))
    invocation = python_handle("import os; print(sorted(os.sched_getaffinity(0)))").render()
    spawner = _spawn.Spawner(_spawn.set_no_new_privs)
    seen: list[str] = []
    ended: list[int] = []
    done = threading.Event()

    def watch() -> None:  # the sleepers a caller would move, as the kernel knows them
        while not done.is_set():
            with spawner._lock:
                ended.extend(
                    sleeper.tid
                    for sleeper in spawner._sleepers
                    if not os.path.exists(f"/proc/self/task/{sleeper.tid}")
                )
            time.sleep(0.0005)

    async def from_trio() -> None:
        for _ in range(10):
            seen.append(str((await run_invocation(invocation, confined=spawner)).stdout))
            await trio.sleep(0.004)

    def caller_on(cpu: int, kind: str) -> None:
        os.sched_setaffinity(0, {cpu})  # this caller's thread only
        if kind == "trio":
            trio.run(from_trio)
            return
        for _ in range(10):
            seen.append(str(run_invocation_sync(invocation, None, spawner).stdout))
            time.sleep(0.004)

    watcher = threading.Thread(target=watch)
    watcher.start()
    callers = [
        threading.Thread(target=caller_on, args=(cpu, kind))
        for cpu in everything
        for kind in ("trio", "blocking")
    ]
    try:
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(120)
    finally:
        done.set()
        watcher.join(10)
    assert ended == []
    assert seen == [f"{everything}\n"] * (10 * len(callers))
