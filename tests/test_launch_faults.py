"""A launch cannot be half done: whatever fails or interrupts a call around
its launch (Ctrl-C, running out of descriptors just after the spawn, a
callback that raises, an event loop that is gone, a sandbox that could not be
applied), the call ends with no child running and no descriptor left open,
and the error says what happened. Checked with the process table and
/proc/self/fd, never with our own bookkeeping."""

from __future__ import annotations

import asyncio
import errno
import gc
import os
import resource
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import CommandHandle, Executor, LaunchError, Policy, SandboxError, utcp
from command_handle.executor import _cgroup, _spawn
from command_handle.executor._interpreter import run_plan
from command_handle.executor._process import run_invocation, run_invocation_sync
from command_handle.form import escape
from command_handle.handle import Invocation

from .processes import (
    alive,
    children,
    descriptors_exhausted,
    in_a_fork,
    open_fds,
    python_handle,
    unprivileged,
    wait_dead,
)

# A child that says so on stdout, starts a grandchild in its group, records
# the grandchild's pid in the file named by its first argument, then sleeps.
SLEEPER = (
    "import subprocess, sys, time\n"
    "print('started', flush=True)\n"
    "kid = subprocess.Popen(['sleep', '300'])\n"
    "open(sys.argv[1], 'w').write(str(kid.pid))\n"
    "time.sleep(300)\n"
)
QUIET = {"stdout": "ignore", "stderr": "ignore"}


QUICK = Policy(kill_grace=0.2)  # the policy the sleeper is rendered, and run, under


def sleeper(pidfile: Path, **fields: Any) -> Invocation:
    handle = python_handle(SLEEPER, arguments=["-c", escape(SLEEPER), str(pidfile)], **fields)
    return handle.render(None, QUICK)


def left_over() -> list[int]:
    """Our children still there after a moment; they are killed and reaped, so
    a failing test leaves nothing to the next one."""
    deadline = time.monotonic() + 5
    while children() and time.monotonic() < deadline:
        time.sleep(0.02)
    found = children()
    for pid in found:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return found


@contextmanager
def nothing_left_behind() -> Iterator[None]:
    """Assert that the block leaves no child process and no descriptor open
    (what a failing block leaves is killed all the same). Earlier garbage is
    collected first: a collection during the block closes what it owned."""
    gc.collect()
    fds = open_fds()
    try:
        yield
    finally:
        found = left_over()
    assert found == []
    assert open_fds() == fds


def interrupt_main_thread_after(seconds: float, when: Callable[[], bool] = lambda: True) -> None:
    """Ctrl-C, as the terminal delivers it: SIGINT to the main thread, after
    ``seconds`` and once ``when()`` holds (checked for up to 30 s)."""
    assert threading.current_thread() is threading.main_thread()
    main = threading.main_thread().ident
    assert main is not None

    def interrupt() -> None:
        time.sleep(seconds)
        deadline = time.monotonic() + 30
        while not when() and time.monotonic() < deadline:
            time.sleep(0.01)
        signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()


@contextmanager
def spawner_busy(spawner: _spawn.Spawner) -> Iterator[threading.Event]:
    """Every thread ``spawner`` may have runs a job that waits for the yielded
    event, so a launch submitted meanwhile waits in the queue behind them."""
    gate = threading.Event()
    holders: list[threading.Thread] = []
    try:
        for _ in range(spawner._size):
            running = threading.Event()

            def hold(running: threading.Event = running) -> None:
                running.set()
                gate.wait(30)

            holder = threading.Thread(target=spawner.call, args=(hold,), daemon=True)
            holder.start()
            holders.append(holder)
            assert running.wait(5), "a holding job did not start"
        yield gate
    finally:
        gate.set()
        for holder in holders:
            holder.join(5)


def grandchild(pidfile: Path) -> int | None:
    text = pidfile.read_text() if pidfile.exists() else ""
    return int(text) if text else None


# -- 1. Ctrl-C ------------------------------------------------------------------------


def test_ctrl_c_while_the_launch_waits_for_a_spawner_thread(tmp_path: Path) -> None:
    """Ctrl-C arrives while the call waits for its launch (queued behind other
    launches). The child's pipe ends stay open until the launch is over, so a
    file the application opens next never receives the child's output; the
    child is killed and reaped before KeyboardInterrupt reaches the caller."""
    pidfile = tmp_path / "pid"
    invocation = sleeper(pidfile)
    mine = [tmp_path / f"mine-{index}" for index in range(6)]
    with nothing_left_behind(), spawner_busy(_spawn.spawner) as gate:
        opener = threading.Timer(0.6, gate.set)  # the queued launch then runs
        opener.start()
        interrupt_main_thread_after(0.2)
        with pytest.raises(KeyboardInterrupt):
            Executor(QUICK).run_sync(invocation)
        # The application goes on and opens files: any number the call used
        # may come back. None of them may become the child's stdout.
        files = [path.open("wb") for path in mine]
        opener.join()
        time.sleep(0.5)  # a child left running has printed by now
        for file in files:
            file.close()
        assert [path.read_bytes() for path in mine] == [b""] * len(mine)
    kid = grandchild(pidfile)
    assert kid is None or wait_dead([kid]) == []


def test_ctrl_c_while_a_sync_call_waits_for_its_child(tmp_path: Path) -> None:
    """Ctrl-C during the wait kills the child's whole group and reaps the child
    before KeyboardInterrupt reaches the caller."""
    pidfile = tmp_path / "pid"
    invocation = sleeper(pidfile)
    with nothing_left_behind():
        interrupt_main_thread_after(0.1, lambda: grandchild(pidfile) is not None)
        with pytest.raises(KeyboardInterrupt):
            Executor(QUICK).run_sync(invocation)
        assert children() == []  # reaped before the exception was raised
    kid = grandchild(pidfile)
    assert kid is not None
    assert wait_dead([kid], 1) == [], "the grandchild outlived the call"


# -- 2. the system refuses something right after the spawn ---------------------------


@pytest.mark.parametrize("free", [0, 1], ids=["pidfd", "epoll"])
def test_out_of_descriptors_right_after_the_spawn(tmp_path: Path, free: int) -> None:
    """With no descriptor to spare the child is started (it needs none of ours)
    but cannot be watched: no pidfd (``free=0``) or no epoll set (``free=1``).
    It is killed and reaped, and the error says it was started and killed
    rather than that nothing ran."""
    invocation = sleeper(tmp_path / "pid", io=QUIET)
    executor = Executor(QUICK)
    with (
        nothing_left_behind(),
        descriptors_exhausted(spare=free),
        pytest.raises(LaunchError) as caught,
    ):
        executor.run_sync(invocation)
    message = str(caught.value)
    assert "EMFILE" in message and "killed" in message, message
    assert "nothing ran" not in message, message
    assert executor.call_sync(python_handle("print('again')")).stdout == "again\n"


def _limit_refused_scenario() -> dict[str, Any]:
    """As an unprivileged user whose CPU limit is capped: a policy limit above
    the cap cannot be set on the child (prlimit: EPERM) once it runs."""
    resource.setrlimit(resource.RLIMIT_CPU, (1000, 1000))
    handle = CommandHandle.load(
        {"name": "s", "handle": "command", "command": "sleep", "arguments": ["300"]}
    )
    try:
        Executor(Policy(max_cpu_seconds=5000)).call_sync(handle)
        outcome = "ran"
    except LaunchError as exc:
        outcome = str(exc)
    return {"outcome": outcome, "left": left_over()}


def test_a_limit_the_kernel_refuses_after_the_spawn_kills_the_child() -> None:
    seen = unprivileged(_limit_refused_scenario)
    assert seen["left"] == [], "the child ran on without its limit, unsupervised"
    assert "killed" in seen["outcome"] and "EPERM" in seen["outcome"], seen
    assert "nothing ran" not in seen["outcome"], seen


# -- 3. a callback that raises ---------------------------------------------------------


class Refused(Exception):
    pass


def refuse(pid: int, program: str) -> None:
    raise Refused(pid)


@pytest.mark.parametrize("backend", ["sync", "trio", "asyncio"])
def test_an_on_started_callback_that_raises(tmp_path: Path, backend: str) -> None:
    """The child is killed and reaped, every descriptor closed, and the
    callback's exception reaches the caller."""
    pidfile = tmp_path / "pid"
    invocation = sleeper(pidfile, io={"stdin": "data"})
    executor = Executor(QUICK)
    with nothing_left_behind():
        with pytest.raises(Refused) as caught:
            if backend == "sync":
                executor.run_sync(invocation, on_started=refuse)
            elif backend == "trio":
                trio.run(lambda: executor.run(invocation, on_started=refuse))
            else:
                asyncio.run(executor.run(invocation, on_started=refuse))
        pid = caught.value.args[0]
        assert not alive(pid)


def test_an_on_started_callback_that_raises_in_a_plan(tmp_path: Path) -> None:
    """The same for a plan's step: its child is killed, its pipes closed."""
    plan = utcp.translate(
        {"call_template_type": "cli", "commands": [{"command": "sleep 300 | cat"}]}
    )
    started: list[int] = []

    def refuse_second(pid: int, program: str) -> None:
        started.append(pid)
        if len(started) == 2:
            raise Refused(pid)

    # The callback's exception reaches the caller (in the pipeline's group).
    with nothing_left_behind(), pytest.raises((Refused, BaseExceptionGroup)) as caught:
        executor = Executor()
        prepared = utcp.prepare_plan(plan, {}, policy=executor.policy)
        trio.run(lambda: executor.run(prepared, on_started=refuse_second))
    error = caught.value
    assert isinstance(error, Refused) or (
        isinstance(error, BaseExceptionGroup) and error.subgroup(Refused) is not None
    ), error
    assert len(started) == 2 and not any(alive(pid) for pid in started)


# -- 4. a caller that can no longer be woken ------------------------------------------


def test_a_spawner_thread_survives_a_caller_whose_loop_closed(tmp_path: Path) -> None:
    """An asyncio caller's loop closes while its launch waits in the queue: the
    spawner thread cannot wake it (RuntimeError from the closed loop). The
    thread kills and reaps the child nobody will supervise, and goes on: later
    launches through the same spawner run."""
    spawner = _spawn.Spawner(_spawn.set_no_new_privs, size=1)
    pidfile = tmp_path / "pid"
    with nothing_left_behind():
        loop = asyncio.new_event_loop()
        with spawner_busy(spawner):
            task = loop.create_task(run_invocation(sleeper(pidfile), confined=spawner))
            loop.run_until_complete(asyncio.sleep(0.1))  # the call now waits for its launch
            loop.close()
        # The holding job is done; the abandoned launch runs and cannot wake its caller.
        results: list[str] = []
        later = python_handle("print('later')").render()
        thread = threading.Thread(
            target=lambda: results.append(str(run_invocation_sync(later, confined=spawner).stdout)),
            daemon=True,
        )
        thread.start()
        thread.join(10)
        assert results == ["later\n"], "the spawner no longer launches"
        kid = grandchild(pidfile)
        assert kid is None or wait_dead([kid]) == []
        assert left_over() == [], "the abandoned launch's child runs unsupervised"
        del task  # its coroutine is closed: the call's own descriptors close
        gc.collect()


# -- 5. cgroup.kill --------------------------------------------------------------------


def test_the_cgroup_check_reports_a_hierarchy_without_cgroup_kill(tmp_path: Path) -> None:
    """A cgroup made under the base must have ``cgroup.kill``. A directory laid
    out like a cgroup root (it has ``cgroup.procs``) but whose new cgroups have
    no ``cgroup.kill`` is refused."""
    (tmp_path / "cgroup.procs").write_text("")
    why = _cgroup._check(str(tmp_path), "/")[1]
    assert "cgroup.kill" in why, why
    assert list(tmp_path.iterdir()) == [tmp_path / "cgroup.procs"]  # no probe left


def _v1_hierarchy() -> str | None:
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            if fields[2] == "cgroup" and "pids" in fields[3].split(","):
                return fields[1]
    return None


def test_the_cgroup_check_on_real_hierarchies() -> None:
    """The v2 root cgroup never has ``cgroup.kill`` itself, but the cgroups made
    under it do: accepted. A v1 hierarchy has ``cgroup.procs`` and no
    ``cgroup.kill``: refused."""
    if os.geteuid() != 0:
        pytest.skip("making cgroups needs root here")
    base, why = _cgroup._base()
    assert base is not None, why
    v1 = _v1_hierarchy()
    if v1 is None:
        pytest.skip("no cgroup v1 pids hierarchy mounted")
    before = set(os.listdir(v1))
    refused, why = _cgroup._check(v1, "/")
    assert refused is None and "cgroup.kill" in why, why
    assert set(os.listdir(v1)) == before


# -- 6. a sandbox that could not be applied -------------------------------------------


def test_a_sandbox_that_cannot_be_applied_is_a_sandbox_error(tmp_path: Path) -> None:
    """The spawner thread could not confine itself (Landlock or no_new_privs
    refused): every launch through it is refused with SandboxError, and
    nothing runs."""

    def setup() -> None:
        raise OSError(errno.EPERM, "landlock_restrict_self: Operation not permitted")

    confined = _spawn.Spawner(setup)
    marker = tmp_path / "ran"
    handle = python_handle(f"open({str(marker)!r}, 'w')")
    with nothing_left_behind():
        for _attempt in range(2):
            with pytest.raises(SandboxError) as caught:
                run_invocation_sync(handle.render(), confined=confined)
            message = str(caught.value)
            assert "could not be applied" in message and "nothing ran" in message, message
            assert "landlock_restrict_self" in message, message
    assert not marker.exists()


def test_a_sandbox_that_cannot_be_applied_in_a_plan(tmp_path: Path) -> None:
    """A plan's step launched through such a spawner: SandboxError, not a
    program that 'cannot execute'."""

    def setup() -> None:
        raise OSError(errno.EPERM, "landlock_restrict_self: Operation not permitted")

    confined = _spawn.Spawner(setup)
    marker = tmp_path / "ran"
    plan = utcp.translate(
        {"call_template_type": "cli", "commands": [{"command": f"touch {marker}"}]}
    )
    prepared = utcp.prepare_plan(plan, {}, policy=Policy())
    assert prepared.plan is not None
    env = prepared.plan.env
    with nothing_left_behind(), pytest.raises(SandboxError) as caught:
        trio.run(lambda: run_plan(prepared, env, lambda: None, confined))
    assert "could not be applied" in str(caught.value), str(caught.value)
    assert not marker.exists()


# -- 7. a trio caller's launch, handed back on a pipe ---------------------------------


def test_a_trio_caller_cancelled_while_its_launch_is_handed_back(tmp_path: Path) -> None:
    """The deadline falls while the launch waits for a spawner thread: the event
    loop goes on meanwhile, the call still receives its child, and the
    cancellation, delivered once the child is supervised, kills its group.
    The next call of the same run is woken on the same pipe, with no byte of
    the first left on it."""
    spawner = _spawn.Spawner(_spawn.set_no_new_privs, size=1)
    pidfile = tmp_path / "pid"
    later = python_handle("print('later')").render()
    ticks: list[float] = []
    cancelled: list[float] = []
    opened: list[float] = []

    def open_gate(gate: threading.Event) -> None:
        opened.append(time.monotonic())
        gate.set()

    async def main() -> tuple[bool, str | bytes | None]:
        async with trio.open_nursery() as nursery:

            async def tick() -> None:
                while True:
                    await trio.sleep(0.01)
                    ticks.append(time.monotonic())

            async def cancel_later(scope: trio.CancelScope) -> None:
                await trio.sleep(0.1)
                cancelled.append(time.monotonic())
                scope.cancel()

            nursery.start_soon(tick)
            with trio.CancelScope() as scope:
                nursery.start_soon(cancel_later, scope)
                await run_invocation(sleeper(pidfile), confined=spawner)
            nursery.cancel_scope.cancel()
        again = await run_invocation(later, confined=spawner)
        return scope.cancelled_caught, again.stdout

    with nothing_left_behind(), spawner_busy(spawner) as gate:
        threading.Timer(0.5, open_gate, (gate,)).start()
        assert trio.run(main) == (True, "later\n")
    waiting = [tick for tick in ticks if cancelled[0] < tick < opened[0]]
    assert len(waiting) >= 5, "the event loop stood still while the launch was handed back"
    kid = grandchild(pidfile)
    assert kid is None or wait_dead([kid]) == []


def test_ctrl_c_while_a_trio_call_waits_for_its_launch(tmp_path: Path) -> None:
    """Ctrl-C reaches a trio caller whose launch is still queued: the launch
    runs, its child is killed and reaped before KeyboardInterrupt reaches the
    caller, and the spawner goes on launching."""
    spawner = _spawn.Spawner(_spawn.set_no_new_privs, size=1)
    pidfile = tmp_path / "pid"
    interrupted = False
    with spawner_busy(spawner) as gate:
        threading.Timer(0.6, gate.set).start()
        interrupt_main_thread_after(0.2)
        try:
            trio.run(run_invocation, sleeper(pidfile), None, None, spawner)
        except KeyboardInterrupt:
            interrupted = True
    assert interrupted
    assert children() == []  # killed and reaped before the exception was raised
    kid = grandchild(pidfile)
    assert kid is None or wait_dead([kid]) == []
    later = python_handle("print('later')").render()
    assert run_invocation_sync(later, confined=spawner).stdout == "later\n"
    gc.collect()  # the interrupted call's pipe, once no job can write to it


def test_a_trio_run_reuses_its_wake_pipes_and_closes_them_at_its_end() -> None:
    """Calls of one trio run reuse its wake pipes: round after round of 4
    concurrent and 5 sequential calls, the run holds no more than 4 of them;
    after a burst of 40 calls at once it keeps no more than 16; and none is
    open once the run is over."""
    executor = Executor(Policy(max_concurrency=40))
    echo = python_handle("print('hi')")
    gc.collect()  # what earlier tests dropped is closed before counting

    async def main() -> tuple[list[int], int]:
        before = open_fds()  # the run's own descriptors are open by now
        held: list[int] = []
        for _ in range(5):
            async with trio.open_nursery() as nursery:
                for _ in range(4):
                    nursery.start_soon(executor.call, echo)
            for _ in range(5):
                assert (await executor.call(echo)).stdout == "hi\n"
            held.append(len(open_fds() - before))
        async with trio.open_nursery() as nursery:
            for _ in range(40):
                nursery.start_soon(executor.call, echo)
        return held, len(open_fds() - before)

    with nothing_left_behind():
        held, kept = trio.run(main)
    assert max(held) <= 2 * 4, held
    assert kept <= 2 * 16, kept


def test_a_fork_inside_a_trio_run_does_not_share_its_wake_pipes() -> None:
    """A process forked by a trio task closes its copies of the run's wake pipes
    (a byte a spawner thread writes for the parent must not wake the child)."""
    executor = Executor()
    echo = python_handle("print('hi')")

    async def main() -> dict[str, Any]:
        before = open_fds()
        await executor.call(echo)
        kept = sorted(open_fds() - before)
        assert kept, "the run keeps no wake pipe"
        return in_a_fork(lambda: {"kept": kept, "open": sorted(open_fds() & set(kept))})

    seen = trio.run(main)
    assert seen["open"] == [], seen


# A child that ignores SIGTERM, then says it is ready by creating the file named
# by its first argument.
STUBBORN = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "open(sys.argv[1], 'w').close()\n"
    "time.sleep(300)\n"
)


def test_a_second_ctrl_c_during_the_kill_sequence_kills_the_child_at_once(
    tmp_path: Path,
) -> None:
    """The first Ctrl-C sends SIGTERM to the group and waits out the grace; a
    child that ignores SIGTERM is killed by a second Ctrl-C at once, and
    reaped, before KeyboardInterrupt reaches the caller."""
    ready = tmp_path / "ready"
    policy = Policy(kill_grace=120)
    handle = python_handle(STUBBORN, arguments=["-c", escape(STUBBORN), str(ready)], io=QUIET)
    invocation = handle.render(None, policy)
    main = threading.main_thread().ident
    assert main is not None

    def interrupt_twice() -> None:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        signal.pthread_kill(main, signal.SIGINT)  # SIGTERM, ignored
        time.sleep(1)
        signal.pthread_kill(main, signal.SIGINT)

    with nothing_left_behind():
        threading.Thread(target=interrupt_twice, daemon=True).start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            Executor(policy).run_sync(invocation)
        assert children() == []  # reaped before the exception was raised
        assert time.monotonic() - started < 60, "the second Ctrl-C waited out the grace"


@pytest.mark.parametrize("first", ["ctrl-c", "error"])
def test_ctrl_c_after_a_streaming_consumer_gave_up_kills_the_child_at_once(
    tmp_path: Path, first: str
) -> None:
    """A blocking call's streaming consumer gives up (Ctrl-C reaches it, or it
    raises): SIGTERM goes to the group, ignored, and the grace runs. A Ctrl-C
    then is a second one: the child is killed at once and reaped, and
    KeyboardInterrupt reaches the caller."""
    ready = tmp_path / "ready"
    policy = Policy(kill_grace=120)
    code = STUBBORN.replace("time.sleep(300)", "print('ready', flush=True)\ntime.sleep(300)")
    arguments = ["-c", escape(code), str(ready)]
    handle = python_handle(code, arguments=arguments, io={"stderr": "ignore"})
    invocation = handle.render(None, policy)
    main = threading.main_thread().ident
    assert main is not None

    def on_chunk(name: str, data: bytes) -> None:
        threading.Timer(1, signal.pthread_kill, (main, signal.SIGINT)).start()
        if first == "error":
            raise RuntimeError("the consumer failed")
        signal.pthread_kill(main, signal.SIGINT)
        time.sleep(5)  # KeyboardInterrupt is raised here

    with nothing_left_behind():
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            Executor(policy).run_sync(invocation, on_chunk)
        assert children() == []  # reaped before the exception was raised
        assert time.monotonic() - started < 60, "the Ctrl-C waited out the grace"


def test_an_exception_from_a_signal_handler_as_the_child_exits_ends_the_call() -> None:
    """A signal handler raises (here on SIGCHLD, so as the child exits: in the
    wait that returned its exit, or as it is reaped). The exception ends the
    call once the child is reaped: the exit the wait returned is not lost
    (the call would wait forever), and a child reaped as the exception came
    is not reaped again (ChildProcessError). The timing varies, so 20 calls."""
    invocation = CommandHandle.load(
        {"name": "s", "handle": "command", "command": "/bin/sleep", "arguments": ["0.1"]}
    ).render(None, QUICK)
    main = threading.main_thread().ident
    assert main is not None
    started = threading.Event()  # the handler raises only for the call's own child
    raised: list[str] = []

    def on_sigchld(signum: int, frame: Any) -> None:
        if started.is_set() and not raised:
            raised.append("raised")
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGCHLD, on_sigchld)
    outcomes: list[str] = []
    try:
        for _ in range(20):
            time.sleep(0.05)  # a late SIGCHLD of the last call is handled first
            started.clear()
            raised.clear()
            rescued: list[bool] = []

            def rescue(rescued: list[bool] = rescued) -> None:
                rescued.append(True)  # a second Ctrl-C ends a call that waits forever
                signal.pthread_kill(main, signal.SIGINT)

            watchdog = threading.Timer(30, rescue)
            watchdog.start()
            try:
                Executor(QUICK).run_sync(invocation, on_started=lambda *_: started.set())
                outcomes.append("returned")
            except KeyboardInterrupt:
                outcomes.append("interrupted")
            finally:
                started.clear()
                watchdog.cancel()
            assert not rescued, f"the call waited forever after {outcomes}"
            assert left_over() == []
    finally:
        signal.signal(signal.SIGCHLD, previous)
    assert set(outcomes) <= {"returned", "interrupted"}
