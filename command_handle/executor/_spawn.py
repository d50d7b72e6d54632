"""Starting a child: the only place in the project that creates a process.

Every child gets argv only (never a shell), the environment and directory it
was given, a new session (so it leads its own process group and everything it
forks can be signalled together), and no descriptor but its three streams.
Its exit is announced on a descriptor, so any event loop, or none, can wait
for it together with the child's pipes: a pidfd where the kernel has one, else
a pipe written by a thread that waits for the child.

Every child has ``no_new_privs``: the kernel ignores set-user-ID bits and file
capabilities when it execs. The flag belongs to a thread and is inherited by
the processes it starts, and it can never be cleared, so it is set once on a
thread of our own, :class:`Spawner`, which starts every child; the
application's threads keep theirs. A ``preexec_fn`` would do it per child but
forces fork instead of vfork (several times slower). ``Policy.allow_setuid``
is the only way to start a child without it.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import ctypes
import errno
import fcntl
import functools
import logging
import os
import queue
import resource
import select
import signal
import subprocess
import termios
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import sniffio

from . import _posix_spawn
from ._capabilities import drop_for_children
from ._cgroup import CallCgroup

__all__ = [
    "Child",
    "ConfinementError",
    "KilledAtLaunch",
    "Spawner",
    "adopt_orphans",
    "launch",
    "launch_async",
    "launch_sync",
    "set_no_new_privs",
    "spawner",
]

T = TypeVar("T")
log = logging.getLogger("command_handle")
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_CHILD_SUBREAPER = 37
_IDLE_SECONDS = 30.0  # a spawner thread with nothing to do for this long ends

_HAS_PIDFD = hasattr(os, "pidfd_open")


class KilledAtLaunch(OSError):
    """The child started, but what it needs to be supervised (its exit descriptor,
    its limits, the supervisor's epoll set) could not be had; it was killed and
    reaped, with its group, before this was raised."""


class ConfinementError(OSError):
    """A spawner thread could not confine itself (``no_new_privs``, Landlock), so
    it starts nothing: every launch submitted to it gets this."""


class Child:
    """A started child: its pid, the descriptor that becomes readable when it
    exits, and its status once reaped. ``popen`` is set when ``subprocess``
    started it (then Popen does the reaping, so it never reaps a pid twice).
    ``watch=False`` leaves the descriptor to :meth:`watch`."""

    __slots__ = (
        "_lock",
        "_notify_write",
        "_returncode",
        "cgroup",
        "exit_fd",
        "group_gone",
        "pid",
        "popen",
    )

    def __init__(
        self, pid: int, popen: subprocess.Popen[bytes] | None = None, watch: bool = True
    ) -> None:
        self.popen = popen
        self.pid = pid
        self.cgroup: CallCgroup | None = None  # set by the caller when the policy asks
        self._returncode: int | None = None
        self._lock = threading.Lock()
        self._notify_write = -1
        self.exit_fd = -1
        self.group_gone = False  # its group was found empty once it was reaped
        if watch:
            self.watch()

    def watch(self) -> None:
        """Open ``exit_fd``. Raises OSError when the system refuses (EMFILE)."""
        if _HAS_PIDFD:
            try:
                self.exit_fd = os.pidfd_open(self.pid)
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOMEM):
                    raise  # a pipe would be refused alike
                # a kernel or sandbox without pidfd_open: fall back to a thread
        read_end, self._notify_write = os.pipe()
        try:
            threading.Thread(target=self._wait_in_thread, daemon=True).start()
        except BaseException:
            os.close(read_end)
            os.close(self._notify_write)
            raise
        self.exit_fd = read_end

    def _wait_in_thread(self) -> None:
        self.reap()
        os.close(self._notify_write)  # end-of-file on exit_fd: the child has exited

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode if self.popen is not None else self._returncode

    def reap(self) -> int:
        """The exit status, once ``exit_fd`` is readable (negative: killed by a signal)."""
        if self.popen is not None:
            return self.popen.wait()
        with self._lock:
            if self._returncode is None:
                _, status = os.waitpid(self.pid, 0)
                self._returncode = os.waitstatus_to_exitcode(status)
            return self._returncode

    def signal_group(self, signum: int) -> None:
        """Signal the child's whole process group (it leads its own session)."""
        try:  # noqa: SIM105 - every call passes here; suppress() costs more
            os.killpg(self.pid, signum)
        except (ProcessLookupError, PermissionError):  # the group is gone
            pass

    def kill_group(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            # No member left once the leader was reaped: none can be reparented
            # to us, and no process can join a group that no longer exists.
            if self.returncode is not None:
                self.group_gone = True
        except PermissionError:  # a member we may not signal (a set-user-ID program)
            pass

    def close(self) -> None:
        """Close ``exit_fd`` (once: a second close could hit a reused number)."""
        fd, self.exit_fd = self.exit_fd, -1
        if fd >= 0:
            try:  # noqa: SIM105 - every call passes here; suppress() costs more
                os.close(fd)
            except OSError:
                pass

    def finish(self) -> None:
        """Leave nothing of the child: kill its group unless it was reaped, reap
        it, close ``exit_fd``, kill its cgroup, and reap the members of its group
        that were reparented to us. The end of every child's supervision, and of
        a launch nobody will supervise."""
        if self.returncode is None:
            self.kill_group()
            # Reaped already when an exception (a signal handler's) came as
            # waitpid returned: its status is lost, and nothing is left to reap.
            with contextlib.suppress(ChildProcessError):
                self.reap()
        self.close()
        if self.cgroup is not None:  # also what left the process group
            self.cgroup.kill()
        if not self.group_gone:  # else nothing of its group can be our child
            adopt_orphans(self.pid)


# Streams posix_spawn's dup2 cannot give as they are (a descriptor of ours below 3
# would be overwritten by another dup2; PIPE and STDOUT are Popen's); the rest is
# None, DEVNULL or a descriptor from 3 up.
_ON_OUR_STREAMS = frozenset({0, 1, 2, subprocess.PIPE, subprocess.STDOUT})


def launch(
    argv: Sequence[str],
    *,
    executable: str,
    env: dict[str, str],
    cwd: str,
    stdin: int | None,
    stdout: int | None,
    stderr: int | None,
    limits: Sequence[tuple[int, int]] = (),
    cgroup: CallCgroup | None = None,
    terminal: bool = False,
) -> Child:
    """Start ``executable`` with ``argv`` in a new session.

    With ``terminal``, ``stdin`` is a pseudo-terminal's side that becomes the
    new session's controlling terminal (``/dev/tty`` for a password prompt).

    The streams are descriptors (``subprocess.DEVNULL`` for /dev/null, None to
    share ours). ``limits`` are ``(RLIMIT_*, value)`` pairs set on the child
    with prlimit as soon as it exists (a ``preexec_fn`` would set them before
    exec, but forces fork). Raises OSError when the system refuses; nothing is
    left running: a failure once the child exists (no descriptor to watch it,
    a limit refused) kills and reaps it, and raises :class:`KilledAtLaunch`.
    """
    streams = (stdin, stdout, stderr)
    if (
        cgroup is None
        and not terminal
        and _posix_spawn.available()
        and _ON_OUR_STREAMS.isdisjoint(streams)
    ):
        child = Child(_posix_spawn.spawn(argv, executable, env, cwd, streams), watch=False)
    else:
        child = start_popen(argv, executable, env, cwd, streams, cgroup, terminal)
    _watch(child, limits)
    return child


def start_popen(
    argv: Sequence[str],
    executable: str,
    env: dict[str, str],
    cwd: str,
    streams: Sequence[int | None],
    cgroup: CallCgroup | None = None,
    terminal: bool = False,
) -> Child:
    """The launch through ``subprocess``, not yet watched (see :func:`launch`).

    Without glibc's extensions subprocess does what posix_spawn does, more
    slowly. With a cgroup the child must be inside before its program runs, or
    it could fork out first: it moves itself (writing "0" to cgroup.procs,
    opened before the launch) between fork and exec, which needs fork
    (docs/sandbox.md).
    """
    procs = cgroup.procs if cgroup is not None else -1

    def before_exec() -> None:
        # Between fork and exec, after setsid: posix_spawn can do neither of these.
        if procs >= 0:
            os.write(procs, b"0")
        if terminal:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    popen = subprocess.Popen(
        list(argv),
        executable=executable,
        stdin=streams[0],
        stdout=streams[1],
        stderr=streams[2],
        cwd=cwd,
        env=env,
        start_new_session=True,
        close_fds=True,
        preexec_fn=before_exec if cgroup is not None or terminal else None,
    )
    child = Child(popen.pid, popen, watch=False)
    child.cgroup = cgroup
    return child


def _watch(child: Child, limits: Sequence[tuple[int, int]]) -> None:
    """Open the child's exit descriptor and set its limits. When the system
    refuses, nobody could supervise the child, so it must not run on: it is
    killed and reaped, and :class:`KilledAtLaunch` raised."""
    try:
        child.watch()
        for kind, value in limits:
            with contextlib.suppress(ProcessLookupError):  # it has already exited
                resource.prlimit(child.pid, kind, (value, value))
    except BaseException as exc:
        child.finish()
        if isinstance(exc, OSError):
            raise KilledAtLaunch(exc.errno, exc.strerror or str(exc)) from exc
        raise


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def set_no_new_privs() -> None:
    if _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(error)}")


# A job's hand-over between its caller and the spawner thread (the lock guards it):
# queued, running, returned, and undone (or dropped before it ran).
_PENDING, _RUNNING, _FINISHED, _UNDONE = range(4)
_handover = threading.Lock()


class _Job:
    """A function to run on a spawner thread, and how its caller gets the result.

    A launch cannot be taken back. When the caller gives up before the result
    reaches it (Ctrl-C, its coroutine closed, its loop gone), ``undo`` gets the
    value once the function has returned (it kills the child), exactly once.
    """

    __slots__ = ("error", "function", "parked", "state", "undo", "value", "waiter", "wake")

    def __init__(
        self,
        function: Callable[[], object],
        wake: Callable[[], None],
        undo: Callable[[Any], None] | None,
    ) -> None:
        self.function = function
        self.wake = wake  # how the caller learns it is done: a lock, or its event loop
        self.undo = undo
        self.value: object = None
        self.error: BaseException | None = None
        self.state = _PENDING
        self.waiter: _thread.LockType | None = None  # a caller that gave up waits on it
        self.parked = False  # the caller waits to be woken (else it finds the result)

    def run(self, failure: OSError | None) -> None:
        with _handover:
            if self.state != _PENDING:
                return  # its caller gave up before it started: it never runs
            self.state = _RUNNING
        if failure is not None:  # a fresh error per job: each raise adds to its traceback
            self.error = ConfinementError(failure.errno, failure.strerror or str(failure))
        else:
            try:
                self.value = self.function()
            except BaseException as exc:  # handed to the caller
                self.error = exc
        with _handover:
            self.state = _FINISHED
            waiter = self.waiter
            parked = self.parked
        if waiter is not None:
            waiter.release()  # the caller gave up and undoes the launch itself
            return
        if not parked:  # the caller has not waited yet; it finds the result itself
            return
        try:
            self.wake()
        except BaseException:  # the caller's loop is closed, or its run is over
            self.undo_once()  # nobody else will: the child must not run unsupervised

    def abandon(self) -> None:
        """The caller gives up: a job not yet started is dropped; else wait until
        the function has returned (it may be launching with descriptors the
        caller would close), then undo it."""
        with _handover:
            if self.state == _PENDING:
                self.state = _UNDONE  # never runs: nothing to undo
                return
            waiter = None
            if self.state == _RUNNING:
                waiter = self.waiter = _thread.allocate_lock()
                waiter.acquire()
        if waiter is not None:
            while True:
                try:
                    waiter.acquire()
                    break
                except BaseException:  # another Ctrl-C: the launch still ends first
                    continue
        self.undo_once()

    def park(self) -> bool:
        """Whether the caller must wait to be woken: False when the function has
        already returned (on one CPU the spawner thread often runs it before the
        caller gets the CPU back), which saves a wake through the caller's loop."""
        with _handover:
            if self.state == _FINISHED:
                return False
            self.parked = True
            return True

    def undo_once(self) -> None:
        with _handover:
            if self.state == _UNDONE:
                return
            self.state = _UNDONE
        if self.error is None and self.undo is not None:
            try:
                self.undo(self.value)
            except Exception:  # a spawner thread must survive; the caller may not exist
                log.exception("undoing an abandoned launch failed")

    def result(self) -> object:
        if self.error is not None:
            raise self.error
        return self.value


_SPAWNERS: weakref.WeakSet[Spawner] = weakref.WeakSet()


class _Sleeper:
    """A spawner thread as a caller may move it while it is idle: its native id,
    the CPUs it may run on, and the one a caller moved it to (-1: none)."""

    __slots__ = ("cpus", "moved", "on", "tid")

    def __init__(self, tid: int, cpus: set[int]) -> None:
        self.tid = tid
        self.cpus = cpus
        self.moved = False  # since it last took back its CPUs
        self.on = -1

    @classmethod
    def of_this_thread(cls) -> _Sleeper | None:
        """Give this new spawner thread the CPUs of the application's main
        thread, which its children inherit: a thread starts with its creator's,
        and a caller pinned to one CPU would otherwise tie every later child
        of this spawner to that CPU. This thread as callers may move it (when
        it may run on more than one CPU) and as it follows the main thread."""
        try:
            cpus = os.sched_getaffinity(os.getpid())
            if os.sched_getaffinity(0) != cpus:
                os.sched_setaffinity(0, cpus)
        except OSError:  # the main thread is gone (interpreter exit): keep ours
            try:
                cpus = os.sched_getaffinity(0)
            except OSError:
                return None
        return cls(threading.get_native_id(), cpus)

    def move_to(self, cpu: int) -> None:
        if self.moved and self.on == cpu:
            return  # still there from the last call: no system call
        # Marked before the move: a Ctrl-C as the system call returns (a blocking
        # caller's, or an asyncio loop's outside asyncio.run) must not leave the
        # thread on one CPU unmarked, or it would launch there without a restore.
        self.moved = True
        try:
            os.sched_setaffinity(self.tid, (cpu,))
        except OSError:  # a CPU taken away meanwhile: it wakes where it may
            return
        self.on = cpu

    def restore(self) -> None:
        """Take the main thread's CPUs, before this thread runs a job (a launch):
        those it has now, not those it had when this thread started, or a
        restriction made since (``taskset -a``, which sets every thread's) would
        be undone by a move; and before every job, not only after a wake, or a
        change of the main thread's would not reach the children of a thread
        kept busy by concurrent callers. One ``sched_getaffinity`` per job
        (0.3 us). Only while this thread is not a sleeper: nobody moves it."""
        self.on = -1
        try:
            cpus = os.sched_getaffinity(os.getpid())
            if self.moved or cpus != self.cpus:
                os.sched_setaffinity(0, cpus)
                self.cpus, self.moved = cpus, False
        except OSError:  # the main thread is gone (interpreter exit), or none of its
            pass  # CPUs is left to us (a cpuset changed): this thread stays where it is


def _move_to_this_cpu(sleepers: set[_Sleeper]) -> None:
    """Move the idle spawner threads onto the CPU the caller runs on (under the
    spawner's lock: none of them can be woken meanwhile)."""
    cpu = _libc().sched_getcpu()
    for sleeper in sleepers:
        if cpu in sleeper.cpus and len(sleeper.cpus) > 1:  # else nowhere else to wake
            sleeper.move_to(cpu)


class Spawner:
    """Threads with ``no_new_privs`` set that run launches for any caller.

    A sync caller blocks on a lock the thread releases; an async caller is
    woken through its own loop (``call_soon_threadsafe``, or a byte on a pipe
    its trio task waits on). One thread starts on first use; more start, up
    to ``size``, while every one is busy, so concurrent callers do not queue
    behind one vfork. A thread idle for 30 s ends (a sandbox profile used once
    leaves no thread behind).
    """

    def __init__(self, setup: Callable[[], None], size: int = 4) -> None:
        self._setup = setup
        self._size = size
        self._forget_threads()
        _SPAWNERS.add(self)

    def _forget_threads(self) -> None:
        """Fresh state: at creation, and in a forked child, which has none of our
        threads (and may have inherited the lock taken)."""
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._sleepers: set[_Sleeper] = set()  # idle threads a caller may move
        self._close_wake_pipe()  # a forked child's copies
        read_end, write_end = os.pipe()  # close-on-exec, and closefrom at every launch
        os.set_blocking(read_end, False)
        self._wake_fds: tuple[int, ...] = (read_end, write_end)

    def _close_wake_pipe(self, close: Callable[[int], None] = os.close) -> None:
        # ``close`` is bound at definition: at interpreter exit ``__del__`` may
        # run after the module's globals (``os``, ``contextlib``) are cleared.
        for fd in getattr(self, "_wake_fds", ()):
            try:  # noqa: SIM105 (contextlib may be gone at exit)
                close(fd)
            except OSError:
                pass
        self._wake_fds = ()

    def __del__(self) -> None:
        # Only once no thread serves it (each holds a reference to it).
        self._close_wake_pipe()

    # An idle thread waits on a pipe, not on the queue: a caller wakes it with a
    # write, which releases the GIL before the thread wakes. A lock released
    # while the caller holds the GIL wakes a thread that, on one CPU, preempts
    # the caller only to wait for the GIL: three context switches per hand-off
    # instead of one (docs/decisions.md). Each byte is one idle thread claimed
    # by a caller, under the lock; the queue holds the jobs.
    #
    # Before the write, the caller moves the idle threads onto its own CPU, where
    # it is about to block (or its event loop to wait): a thread woken on another
    # CPU costs a cross-CPU wake each way, which on a virtual machine measured
    # about 0.3x of a whole call (docs/decisions.md).
    # A woken thread leaves the sleepers under the lock, so nobody moves it
    # again, then takes the main thread's CPUs before each launch, woken or
    # kept busy: the child inherits the launching thread's CPUs.

    def _wait_for_work(self, poller: select.poll) -> bool:
        """Idle until a caller claims this thread (True), or for 30 s (False:
        the thread ends)."""
        read_end = self._wake_fds[0]
        while True:
            if poller.poll(_IDLE_SECONDS * 1000):
                try:
                    os.read(read_end, 1)
                    return True
                except BlockingIOError:  # another idle thread took the byte
                    continue
            with self._lock:
                try:
                    os.read(read_end, 1)  # claimed as the wait ended
                    return True
                except BlockingIOError:
                    self._idle -= 1
                    self._threads -= 1
                    return False

    def _serve(self) -> None:
        failure: OSError | None = None
        me = _Sleeper.of_this_thread()  # before the setup: a sandbox may refuse it after
        try:
            self._setup()
        except Exception as exc:  # every launch refused: no child without its confinement
            failure = exc if isinstance(exc, OSError) else OSError(None, str(exc))
        _posix_spawn.keep_file_actions(True)
        try:
            self._serve_jobs(failure, me)
        except BaseException:  # not expected; a later call must still get a thread
            with self._lock:
                self._threads -= 1
            raise
        finally:
            _posix_spawn.keep_file_actions(False)

    def _serve_jobs(self, failure: OSError | None, me: _Sleeper | None) -> None:
        poller = select.poll()
        poller.register(self._wake_fds[0], select.POLLIN)
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                with self._lock:
                    if not self._jobs.empty():  # jobs are put under this lock: none is lost
                        continue
                    self._idle += 1
                    if me is not None:
                        self._sleepers.add(me)
                try:
                    claimed = self._wait_for_work(poller)
                finally:  # a thread that ends is no sleeper: a move by its id could
                    if me is not None:  # reach another thread that reuses the id
                        with self._lock:
                            self._sleepers.discard(me)
                if not claimed:
                    return  # idle: a later call starts a new thread
                continue
            if me is not None:
                me.restore()
            job.run(failure)

    def _submit(self, job: _Job) -> None:
        """Queue ``job`` and wake or start a thread for it."""
        with self._lock:
            self._jobs.put(job)
            if self._idle:
                if self._sleepers:
                    _move_to_this_cpu(self._sleepers)
                # The claim and its byte together, with no call between them where
                # Python could raise Ctrl-C: an idle thread is never claimed unwoken.
                self._idle -= 1
                os.write(self._wake_fds[1], b"\0")  # at most `size` bytes: never blocks
                return
            start = self._threads < self._size
            if start:
                self._threads += 1
            name = f"command-handle-spawner-{self._threads}"
        if start:
            thread = None
            try:
                thread = threading.Thread(target=self._serve, name=name, daemon=True)
                thread.start()
            except BaseException:  # Ctrl-C before the thread ran: it is not counted
                if thread is None or thread.ident is None:
                    with self._lock:
                        self._threads -= 1
                raise

    def call(self, function: Callable[[], T], undo: Callable[[T], None] | None = None) -> T:
        """Run ``function`` on a spawner thread; block until it returns.

        Interrupted (Ctrl-C), it still waits for ``function`` to return, hands
        the value to ``undo``, and then raises: the caller never frees what the
        launch may still be using.
        """
        done = _thread.allocate_lock()
        done.acquire()
        job = _Job(function, done.release, undo)
        try:
            self._submit(job)
            if job.park():
                done.acquire()
            return job.result()  # type: ignore[return-value]
        except BaseException:  # also Ctrl-C as it returns: the child is then undone
            job.abandon()
            raise

    async def call_async(
        self, function: Callable[[], T], undo: Callable[[T], None] | None = None
    ) -> T:
        """Run ``function`` on a spawner thread; await it under trio or asyncio.

        The wait is shielded: a launch cannot be taken back, so a cancelled
        caller still receives the child (and kills it) rather than orphaning it.
        A caller whose coroutine is closed meanwhile waits for ``function`` and
        hands its value to ``undo``; one whose loop is gone when the spawner
        thread tries to wake it has the spawner thread do that.
        """
        if sniffio.current_async_library() == "trio":
            return await self._call_trio(function, undo)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def resolve() -> None:
            if not future.done():
                future.set_result(None)

        def wake() -> None:
            loop.call_soon_threadsafe(resolve)

        job = _Job(function, wake, undo)
        cancelled: asyncio.CancelledError | None = None
        try:
            self._submit(job)
            if job.park():
                while not future.done():
                    try:
                        await asyncio.shield(future)
                    except asyncio.CancelledError as exc:
                        cancelled = exc  # the launch finishes first; the child is ours
        except BaseException:  # the coroutine is closed: it will never get the child
            job.abandon()
            raise
        current = asyncio.current_task()
        if cancelled is not None and current is not None:
            # Delivered at the caller's next await, once the child is supervised,
            # so the cancellation kills it instead of orphaning it. The same
            # request again, with its message, not one more: a cancel scope
            # (anyio's, asyncio.timeout) counts the requests it made and lets
            # the CancelledError through when the task has more.
            current.uncancel()
            current.cancel(cancelled.args[0] if cancelled.args else None)
        return job.result()  # type: ignore[return-value]

    async def _call_trio(self, function: Callable[[], T], undo: Callable[[T], None] | None) -> T:
        """:meth:`call_async` under trio. The spawner thread wakes the task with
        a byte on a pipe the task waits on, not through the trio token: a
        token's wake runs trio's entry-queue task first (two passes of the
        scheduler instead of one), under a lock the spawner thread holds with
        the GIL (docs/decisions.md)."""
        import trio

        idle = _idle_wake_pipes()
        pipe = idle.pop() if idle else _WakePipe()
        job = _Job(function, pipe.wake, undo)
        try:
            self._submit(job)
            if job.park():
                try:
                    await trio.lowlevel.wait_readable(pipe.read_end)
                except trio.Cancelled:
                    # The launch finishes first; the cancellation stays pending and
                    # is delivered at the caller's next checkpoint, once the child
                    # is supervised, so it kills the child instead of orphaning it.
                    with trio.CancelScope(shield=True):
                        await trio.lowlevel.wait_readable(pipe.read_end)
                pipe.take()
        except BaseException:  # Ctrl-C, or the coroutine is closed: the launch is undone
            job.abandon()
            raise  # the pipe is dropped: a wake may still be on its way
        if len(idle) < _IDLE_WAKE_PIPES:
            idle.append(pipe)
        else:  # a burst of concurrent calls is over: keep as many as usual
            pipe.close()
        return job.result()  # type: ignore[return-value]


class _WakePipe:
    """A pipe on which a spawner thread wakes one trio task. Kept for the next
    call of the same trio run (a new one costs three system calls, and trio
    registering it afresh two more); closed when the run ends, or when
    collected once no job can write to it any more."""

    __slots__ = ("read_end", "write_end")

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()  # close-on-exec

    def wake(self) -> None:
        # Releases the GIL before the woken thread runs (see Spawner).
        os.write(self.write_end, b"\0")

    def take(self) -> None:
        os.read(self.read_end, 1)

    def close(self, close: Callable[[int], None] = os.close) -> None:
        # ``close`` is bound at definition: see Spawner._close_wake_pipe.
        fds, self.read_end, self.write_end = (self.read_end, self.write_end), -1, -1
        for fd in fds:
            if fd >= 0:
                try:  # noqa: SIM105 (contextlib may be gone at exit)
                    close(fd)
                except OSError:
                    pass

    __del__ = close


class _IdleWakePipes:
    """The idle wake pipes of one trio run."""

    __slots__ = ("__weakref__", "pipes")

    def __init__(self) -> None:
        self.pipes: list[_WakePipe] = []

    def close(self) -> None:
        while self.pipes:
            self.pipes.pop().close()


_IDLE_WAKE_PIPES = 16  # kept per trio run, as many as Policy.max_concurrency's default
_WAKE_PIPES_VAR: Any = None  # a trio RunVar, made with the first trio call
_RUNS_WAKE_PIPES: weakref.WeakSet[_IdleWakePipes] = weakref.WeakSet()


def _idle_wake_pipes() -> list[_WakePipe]:
    """This trio run's idle wake pipes; a system task closes them as the run ends."""
    global _WAKE_PIPES_VAR
    import trio

    if _WAKE_PIPES_VAR is None:
        _WAKE_PIPES_VAR = trio.lowlevel.RunVar("command_handle_wake_pipes")
    try:
        idle: _IdleWakePipes = _WAKE_PIPES_VAR.get()
        return idle.pipes
    except LookupError:
        pass
    idle = _IdleWakePipes()
    try:
        trio.lowlevel.spawn_system_task(_close_at_the_end, idle)
    except RuntimeError:  # the run is ending: a pipe for this call alone
        return []
    _WAKE_PIPES_VAR.set(idle)
    _RUNS_WAKE_PIPES.add(idle)
    return idle.pipes


async def _close_at_the_end(idle: _IdleWakePipes) -> None:
    import trio

    try:
        await trio.sleep_forever()
    finally:
        idle.close()


def _forget_wake_pipes() -> None:
    """A forked child must not share its parent's pipes: its copies are closed."""
    for idle in list(_RUNS_WAKE_PIPES):
        idle.close()


os.register_at_fork(after_in_child=_forget_wake_pipes)


def _no_privileges() -> None:
    set_no_new_privs()
    drop_for_children()  # for a root application (docs/sandbox.md)


spawner = Spawner(_no_privileges)


def _forget_the_thread() -> None:
    """A forked child has none of its parent's threads: spawners and the reaper
    start afresh there."""
    global _reaper_started, _orphans_lock, _handover
    for each in list(_SPAWNERS):
        each._forget_threads()
    _handover = threading.Lock()  # a thread of the parent may have held it
    _reaper_started = False
    _orphans_lock = threading.Lock()
    _orphan_groups.clear()


os.register_at_fork(after_in_child=_forget_the_thread)


def _chosen(no_new_privs: bool, confined: Spawner | None) -> Spawner | None:
    if confined is not None:
        return confined
    return spawner if no_new_privs else None  # the module's current one (see fork)


def launch_sync(
    start: Callable[[], Child], no_new_privs: bool, confined: Spawner | None = None
) -> Child:
    """Run a launch: on a sandbox profile's spawner (``confined``), else on the
    ``no_new_privs`` spawner, else (``Policy.allow_setuid``) in this thread.
    When this raises, no child of the launch is left, and the launch is over."""
    chosen = _chosen(no_new_privs, confined)
    return chosen.call(start, Child.finish) if chosen is not None else start()


async def launch_async(
    start: Callable[[], Child],
    no_new_privs: bool,
    confined: Spawner | None = None,
    settle: bool = False,
) -> Child:
    """The same under trio or asyncio. With ``settle`` (a call whose output
    nobody streams), the default spawner thread, where it may run on one CPU
    only, waits up to 2 ms for the child to exit before it wakes the caller
    (see :func:`_settled`)."""
    chosen = _chosen(no_new_privs, confined)
    if chosen is None:
        return start()
    if settle and confined is None:
        start = _settled(start, chosen)
    return await chosen.call_async(start, Child.finish)


_SETTLE_MS = 2


def _settled(start: Callable[[], Child], chosen: Spawner) -> Callable[[], Child]:
    """``start``, then a wait of up to 2 ms for the child's exit, on the spawner
    thread, where it may run on one CPU only, unless another launch is queued
    behind it there.

    A caller woken through an event loop pays a pass of the loop for every
    wake. Woken at once, it starts supervising while the child runs, and on one
    CPU each of the child's writes, closes and its exit then preempts the child
    to wake the loop: up to four passes for ``/bin/echo``, where a blocking caller
    pays a bare ``epoll_wait`` each. Waiting here, where a wait is a ``poll``,
    the caller is woken once, mostly with everything ready. A child that runs
    longer, or fills a pipe, is supervised as before after 2 ms.

    With more CPUs the child runs beside the caller, which supervises it
    meanwhile: there the wait only delays the caller, by 0.3x to 0.4x of a
    call (docs/decisions.md). The thread has the main thread's CPUs when it
    launches (:meth:`_Sleeper.restore`), which is what this asks."""

    def start_and_settle() -> Child:
        child = start()
        if chosen._jobs.empty() and len(os.sched_getaffinity(0)) == 1:
            try:
                poller = select.poll()
                poller.register(child.exit_fd, select.POLLIN)
                poller.poll(_SETTLE_MS)
            except OSError:  # the supervisor sees the child as it is
                pass
        return child

    return start_and_settle


# -- orphans, when this process is PID 1 or a child subreaper ------------------------
#
# Descendants killed with a child's process group are reparented to init, which
# reaps them. When this process is init (PID 1, as in many containers) or a
# child subreaper, they are reparented to us, and nobody else will reap them.
# We reap exactly those: the members of groups we killed, with waitid on the
# group, never other children of the application.

_orphan_groups: set[int] = set()
_orphans_lock = threading.Lock()
_orphans_wake = threading.Event()
_reaper_started = False


def _is_reaper() -> bool:
    if os.getpid() == 1:
        return True
    flag = ctypes.c_int(0)
    return _libc().prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and bool(
        flag.value
    )


def _reap_group(pgid: int) -> bool:
    """Reap what has exited in ``pgid``; False once no child of ours is in it."""
    try:
        while os.waitid(os.P_PGID, pgid, os.WEXITED | os.WNOHANG) is not None:
            pass
    except ChildProcessError:
        return False
    return True


def _reap_orphans() -> None:
    while True:
        _orphans_wake.wait(0.05)
        _orphans_wake.clear()
        with _orphans_lock:
            groups = list(_orphan_groups)
        for pgid in groups:
            if not _reap_group(pgid):
                with _orphans_lock:
                    _orphan_groups.discard(pgid)


def adopt_orphans(pgid: int) -> None:
    """After a child was reaped and its group killed: reap the group's members
    that are reparented to us, if we are init or a subreaper."""
    global _reaper_started
    # Members reparented to us are our children: none (the usual case) is one
    # waitid, and then whether we are a reaper does not matter.
    if not _reap_group(pgid) or not _is_reaper():
        return
    with _orphans_lock:
        _orphan_groups.add(pgid)
        start = not _reaper_started
        _reaper_started = True
    if start:
        threading.Thread(target=_reap_orphans, name="command-handle-reaper", daemon=True).start()
    _orphans_wake.set()
