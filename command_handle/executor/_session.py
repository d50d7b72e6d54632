"""Processes that outlive their call: started once, then read, written and stopped.

A :class:`Process` runs one prepared command with what every call gets (the
re-check, the sandbox profile's spawner, the call's TMPDIR, its own session
and process group, the kill sequence of :func:`~._supervise.supervise`), but
its supervision runs on a thread of its own for as long as the program
lives, so any caller (a trio task, an asyncio task, a thread) may read its
output, write to its stdin or terminal, wait for it or stop it later.

- Output is kept per stream between two reads as a :class:`~._capture.Capture`
  keeps a call's: the first bytes up to the limit and the last ones; the
  middle is counted and dropped, so memory stays bounded however long the
  program runs and however rarely it is read.
- stdin stays open (a pipe, or the terminal) until the caller closes it.
- The program is stopped (SIGTERM to its group, SIGKILL after the grace) when
  asked, when its lifetime ends, or when nobody read or wrote for
  ``idle`` seconds; when it exits, whatever is left of its group is killed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import select
import struct
import termios
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Generator
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from ..call import CommandResult, Invocation, Terminal
from ..errors import ProcessError
from ._capture import Capture
from ._spawn import Child, KilledAtLaunch, Spawner, _Job, set_no_new_privs
from ._supervise import Abort, Events, Outcome, Output, Request, Wait, supervise

__all__ = ["Keeper", "Process", "ProcessOutput", "ProcessRun"]

T = TypeVar("T")

_RECENT = 8192  # bytes of recent output a ``ready`` pattern is matched against
_SETTLE = 0.05  # after output arrives, a read waits this long for the rest of it
_WRITE_WAIT = 5.0  # seconds a write waits for the program to take its input


@dataclass(frozen=True)
class ProcessOutput:
    """What a process wrote since the last read, and its state.

    Each stream is its head (``stdout``), and when the read window overflowed
    its tail (``stdout_tail``) with ``stdout_dropped`` bytes between them. On a
    terminal both streams are one, reported as stdout. ``ended_by`` is None
    while it runs, then ``"exit"``, ``"stop"``, ``"lifetime"``, ``"idle"`` or
    ``"close"`` (its owner went away). ``waiting_for_input`` is True when the
    program on a terminal (its foreground process group) is blocked reading
    its input, False when it is not, None without a terminal or when the
    platform cannot tell.
    """

    stdout: str | bytes
    stderr: str | bytes
    stdout_tail: str | bytes | None
    stderr_tail: str | bytes | None
    stdout_dropped: int
    stderr_dropped: int
    running: bool
    exit_code: int | None
    signal: int | None
    ended_by: str | None
    waiting_for_input: bool | None


class _Window(Capture):
    """A stream's output since the last read; writes come from the supervising
    thread, :meth:`take` from any reader, both under the process's lock."""

    __slots__ = ("process",)

    def __init__(self, limit: int, process: Process) -> None:
        super().__init__(limit)
        self.process = process

    def write(self, data: bytes) -> None:
        with self.process._changed:
            super().write(data)
            self.process._arrived(data)

    def take(self) -> Capture:
        """What was kept since the last take; the window starts afresh."""
        taken = Capture(self.limit)
        taken.buffer, self.buffer = self.buffer, bytearray()
        taken.tail, self.tail = self.tail, bytearray()
        taken.total, self.total = self.total, 0
        taken.truncated, self.truncated = self.truncated, False
        return taken


class Process:
    """A running program started by :meth:`Executor.start
    <command_handle.Executor.start>`. ``id`` names it to its owner; ``tool``
    and ``program`` say what it is; ``owner`` is whoever started it (compared
    with ``==``). Every method may be called from any thread; the async ones
    work under trio and asyncio."""

    def __init__(
        self,
        invocation: Invocation,
        *,
        tool: str,
        owner: object,
        lifetime: float,
        idle: float,
        output_limit: int,
        terminal: Terminal | None,
        ready: re.Pattern[str] | None,
    ) -> None:
        self.id = "p-" + uuid.uuid4().hex[:12]
        self.tool = tool
        self.owner = owner
        self.program = invocation.argv[0]
        self.encoding = invocation.encoding
        self.terminal = terminal
        self.lifetime = lifetime
        self.idle = idle
        self.output_limit = output_limit
        self.started_at = time.time()
        self.pid = 0
        self.result: CommandResult | None = None
        self.ended_by: str | None = None
        self._ready_pattern = ready
        self._ready = False
        self._recent = bytearray()
        self._started = time.monotonic()
        self._active = self._started  # the last read or write
        self._changed = threading.Condition()
        self._fresh = False  # output arrived since the last read
        self._delivered = False  # the final output was read once the process ended
        self._stop_reason: str | None = None
        self._input_fd = -1
        self._input_lock = threading.Lock()
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._windows: dict[str, _Window] = {}
        self._on_end: list[Callable[[Process], None]] = []
        self._wakers: list[Callable[[], object]] = []  # async waiters, woken on any change
        self._waiting = 0  # reads and starts waiting on it now: it is not idle

    # -- state -------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.ended_by is None

    @property
    def age(self) -> float:
        """Seconds since it started."""
        return time.monotonic() - self._started

    @property
    def ready(self) -> bool:
        """Whether the output matched the ``ready`` pattern it was started with."""
        return self._ready

    def on_end(self, callback: Callable[[Process], None]) -> None:
        """Call ``callback(process)`` once it has ended (at once if it has); it
        runs on the supervising thread and must not raise."""
        with self._changed:
            if self.ended_by is None:
                self._on_end.append(callback)
                return
        callback(self)

    def _arrived(self, data: bytes) -> None:
        """New output (under the lock): wake readers; match ``ready``."""
        self._fresh = True
        if self._ready_pattern is not None and not self._ready:
            self._recent += data
            del self._recent[:-_RECENT]
            text = self._recent.decode("utf-8", "replace")
            if self._ready_pattern.search(text):
                self._ready = True
        self._notify()

    def _notify(self) -> None:
        """Wake every waiter, thread or task (under the lock)."""
        self._changed.notify_all()
        wakers, self._wakers = self._wakers, []
        for wake in wakers:
            wake()

    async def _until(self, done: Callable[[], bool], deadline: float) -> bool:
        """Wait in this task, not in a thread, until ``done()`` (checked under the
        lock) or the monotonic ``deadline``; returns ``done()``. A worker thread
        per waiting read would let one client's waits use up the threads every
        other client's calls need."""
        while True:
            with self._changed:
                if done():
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                wake, woken = _async_event()
                self._wakers.append(wake)
            import anyio

            try:
                with anyio.move_on_after(left):
                    await woken()
            finally:
                with self._changed, contextlib.suppress(ValueError):
                    self._wakers.remove(wake)

    @contextlib.contextmanager
    def _watched(self) -> Generator[None, None, None]:
        """While someone waits for its output it is in use: the idle clock starts
        when they stop waiting, not when they began."""
        with self._changed:
            self._waiting += 1
        try:
            yield
        finally:
            with self._changed:
                self._waiting -= 1
                self._active = time.monotonic()

    # -- reading -----------------------------------------------------------------

    def read_sync(self, wait: float = 0.0) -> ProcessOutput:
        """The output since the last read. With ``wait``, first wait up to that
        many seconds for some output (or the end) when there is none yet."""
        deadline = time.monotonic() + max(0.0, wait)
        with self._changed:
            self._active = time.monotonic()
            if wait > 0:
                with self._watched():
                    self._changed.wait_for(
                        lambda: self._fresh or self.ended_by is not None,
                        max(0.0, deadline - time.monotonic()),
                    )
                    # Output comes in bursts (a prompt after an answer): take the rest of one.
                    while self.ended_by is None and time.monotonic() < deadline:
                        self._fresh = False
                        if not self._changed.wait_for(
                            lambda: self._fresh or self.ended_by is not None,
                            min(_SETTLE, max(0.0, deadline - time.monotonic())),
                        ):
                            break
            return self._take()

    async def read(self, wait: float = 0.0) -> ProcessOutput:
        """:meth:`read_sync` under trio or asyncio; a waiting read waits in the task."""
        if wait <= 0:
            return self.read_sync()
        deadline = time.monotonic() + wait
        with self._watched():
            await self._until(lambda: self._fresh or self.ended_by is not None, deadline)
            # Output comes in bursts (a prompt after an answer): take the rest of one.
            while self.ended_by is None and time.monotonic() < deadline:
                with self._changed:
                    self._fresh = False
                settle = min(time.monotonic() + _SETTLE, deadline)
                if not await self._until(lambda: self._fresh or self.ended_by is not None, settle):
                    break
        return self.read_sync()

    def _take(self) -> ProcessOutput:
        self._fresh = False
        taken = {name: window.take() for name, window in self._windows.items()}
        if self.ended_by is not None:
            self._delivered = True
        empty: str | bytes = b"" if self.encoding == "binary" else ""
        shown: dict[str, tuple[str | bytes, str | bytes | None, int]] = {}
        for name in ("stdout", "stderr"):
            capture = taken.get(name)
            if capture is None:
                shown[name] = (empty, None, 0)
                continue
            head, _ = capture.decode(self.encoding)
            dropped = capture.total - len(capture.buffer) - len(capture.tail)
            shown[name] = (head, capture.decode_tail(self.encoding), dropped)
        code = None if self.result is None else self.result.exit_code
        signal = None if self.result is None else self.result.signal
        return ProcessOutput(
            stdout=shown["stdout"][0],
            stderr=shown["stderr"][0],
            stdout_tail=shown["stdout"][1],
            stderr_tail=shown["stderr"][1],
            stdout_dropped=shown["stdout"][2],
            stderr_dropped=shown["stderr"][2],
            running=self.ended_by is None,
            exit_code=code,
            signal=signal,
            ended_by=self.ended_by,
            waiting_for_input=self._waiting_for_input(),
        )

    @property
    def delivered(self) -> bool:
        """Whether it has ended and its last output has been read."""
        return self._delivered

    def _waiting_for_input(self) -> bool | None:
        """Whether the program (the terminal's foreground group, on a terminal)
        is blocked reading its input, from Linux's ``/proc/PID/syscall``."""
        if self.ended_by is not None or self.terminal is None or self._input_fd < 0:
            return None  # a server waits in poll() too: only a terminal's reader tells
        pid = self.pid
        with contextlib.suppress(OSError):
            pid = os.tcgetpgrp(self._input_fd)
        return _blocked_reading(pid)

    # -- writing -----------------------------------------------------------------

    def write_sync(self, data: bytes | str, *, close: bool = False) -> int:
        """Write ``data`` (text in the process's encoding) to its stdin or
        terminal; with ``close``, then end its input (end-of-file: on a
        terminal, Ctrl-D). Returns the bytes written. Raises
        :class:`~command_handle.errors.ProcessError` when it has ended, its
        input is closed, or it does not take the input within a few seconds."""
        if isinstance(data, str):
            encoding = "utf-8" if self.encoding == "binary" else self.encoding
            data = data.encode(encoding, "replace")
        with self._input_lock:
            self._active = time.monotonic()
            if self.ended_by is not None:
                raise ProcessError(f"process {self.id} has ended; nothing was written")
            fd = self._input_fd
            if fd < 0:
                raise ProcessError(
                    f"the input of process {self.id} is closed (it was ended earlier, or "
                    "the program closed it); nothing was written"
                )
            written = self._write_all(fd, data)
            if close:
                if self.terminal is not None:
                    self._write_all(fd, b"\x04")
                else:
                    self._input_fd = -1
                    os.close(fd)
        return written

    async def write(self, data: bytes | str, *, close: bool = False) -> int:
        """:meth:`write_sync` under trio or asyncio."""
        return await _in_thread(partial(self.write_sync, data, close=close))

    def _write_all(self, fd: int, data: bytes) -> int:
        view = memoryview(data)
        deadline = time.monotonic() + _WRITE_WAIT
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        while view:
            try:
                view = view[os.write(fd, view) :]
                continue
            except BlockingIOError:
                pass
            except OSError as exc:
                if exc.errno in (errno.EPIPE, errno.EIO, errno.ECONNRESET):
                    raise ProcessError(
                        f"process {self.id} closed its input; "
                        f"{len(data) - len(view)} of {len(data)} bytes were written"
                    ) from None
                raise
            left = deadline - time.monotonic()
            if left <= 0 or self.ended_by is not None:
                raise ProcessError(
                    f"process {self.id} is not reading its input; {len(data) - len(view)} "
                    f"of {len(data)} bytes were written"
                )
            poller.poll(min(left, 0.1) * 1000)
        return len(data)

    # -- waiting and stopping ----------------------------------------------------

    def wait_sync(self, timeout: float | None = None) -> CommandResult | None:
        """Wait until it has ended (at most ``timeout`` seconds); its result then
        (its output is what no read took), else None."""
        with self._changed:
            self._changed.wait_for(lambda: self.ended_by is not None, timeout)
            return self.result

    async def wait(self, timeout: float | None = None) -> CommandResult | None:
        """:meth:`wait_sync` under trio or asyncio."""
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        await self._until(lambda: self.ended_by is not None, deadline)
        return self.result

    def wait_ready_sync(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds, until the output matches ``ready`` or
        the process ends."""
        with self._changed, self._watched():
            self._changed.wait_for(lambda: self._ready or self.ended_by is not None, timeout)

    async def wait_ready(self, timeout: float) -> None:
        """:meth:`wait_ready_sync` under trio or asyncio."""
        deadline = time.monotonic() + timeout
        with self._watched():
            await self._until(lambda: self._ready or self.ended_by is not None, deadline)

    def request_stop(self, reason: str = "stop") -> None:
        """Start the kill sequence (SIGTERM to the group, SIGKILL after the grace)
        without waiting for it."""
        with self._changed:
            if self.ended_by is not None:
                return
            if self._stop_reason is None:
                self._stop_reason = reason
            if self._wake_write >= 0:
                with contextlib.suppress(BlockingIOError):
                    os.write(self._wake_write, b"x")

    def stop_sync(self, reason: str = "stop") -> ProcessOutput:
        """End it (SIGTERM to its group, SIGKILL after the grace), wait until it
        and its group are gone, and return its last output."""
        self.request_stop(reason)
        self.wait_sync()
        return self.read_sync()

    async def stop(self, reason: str = "stop") -> ProcessOutput:
        """:meth:`stop_sync` under trio or asyncio."""
        self.request_stop(reason)
        await self.wait()
        return self.read_sync()

    # -- supervision (its own thread) ----------------------------------------------

    def _begin(
        self,
        run: ProcessRun,
        child: Child,
        cleanup: ExitStack,
        on_end: Callable[[Process], None],
    ) -> None:
        self.pid = child.pid
        self._on_end.append(on_end)
        supervisor = run.supervise(child, False)
        thread = threading.Thread(
            target=self._supervise,
            args=(run, supervisor, cleanup),
            name=f"command-handle-process-{child.pid}",
            daemon=True,
        )
        try:
            thread.start()
        except BaseException:
            supervisor.close()  # kills the child's group and closes its pipes
            self._finish(run, Outcome(-9, False, True), cleanup)
            raise

    def _supervise(
        self, run: ProcessRun, supervisor: Generator[Request, Events, Outcome], cleanup: ExitStack
    ) -> None:
        try:
            outcome = self._drive(supervisor)
        except KilledAtLaunch:
            outcome = Outcome(-9, False, True)
        self._finish(run, outcome, cleanup)

    def _drive(self, supervisor: Generator[Request, Events, Outcome]) -> Outcome:
        """Answer the supervisor's waits in this thread, also watching the wake
        pipe (a stop request) and the idle deadline."""
        waiter = select.poll()
        waiter.register(self._wake_read, select.POLLIN)
        watched = -1
        aborting = False
        try:
            request = next(supervisor)
            while True:
                assert isinstance(request, Wait)  # nothing is streamed
                if request.fd != watched:
                    if watched >= 0:
                        waiter.unregister(watched)
                    watched = request.fd
                    waiter.register(watched, select.POLLIN)
                timeout = request.timeout
                if not aborting:  # idle counts from the last read or write; not while one waits
                    idle_from = time.monotonic() if self._waiting else self._active
                    idle_left = idle_from + self.idle - time.monotonic()
                    timeout = idle_left if timeout is None else min(timeout, idle_left)
                waiter.poll(None if timeout is None else max(0.0, timeout) * 1000)
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_read, 64)
                if not aborting:
                    idle_from = time.monotonic() if self._waiting else self._active
                    if self._stop_reason is None and time.monotonic() >= idle_from + self.idle:
                        self._stop_reason = "idle"
                    if self._stop_reason is not None:
                        aborting = True
                        request = supervisor.throw(Abort())
                        continue
                request = supervisor.send(None)
        except StopIteration as stop:
            outcome: Outcome = stop.value
            return outcome
        finally:
            supervisor.close()

    def _finish(self, run: ProcessRun, outcome: Outcome, cleanup: ExitStack) -> None:
        result = run.result(outcome)
        with self._input_lock:
            fd, self._input_fd = self._input_fd, -1
            if fd >= 0:
                os.close(fd)
        try:
            cleanup.close()  # the call's TMPDIR, gone before anyone learns of the end
        finally:
            self._ended(result, outcome)

    def _ended(self, result: CommandResult, outcome: Outcome) -> None:
        with self._changed:
            reason = "lifetime" if outcome.timed_out else self._stop_reason or "exit"
            self.result = result
            self.ended_by = reason
            os.close(self._wake_write)
            self._wake_write = -1
            os.close(self._wake_read)
            callbacks, self._on_end = self._on_end, []
            self._notify()
        for callback in callbacks:
            callback(self)


class ProcessRun:
    """One process's descriptors: its stdin kept open (or a terminal), its
    outputs kept in read windows; the rest is a call's (``_HandleRun``)."""

    def __init__(self, invocation: Invocation, process: Process) -> None:
        from ._process import _HandleRun

        self.handle_run = _HandleRun(invocation)
        self.process = process

    def open_pipes(self) -> None:
        run = self.handle_run
        inv = run.invocation
        process = self.process
        terminal = process.terminal
        run.ours, run.theirs, run.outputs = [], [], []
        run.stdin_fd = -1
        run.cgroup = None
        try:
            if inv.cgroup:
                from ._cgroup import CallCgroup

                run.cgroup = CallCgroup()
            if terminal is not None:
                leader, follower = os.openpty()
                run.theirs.append(follower)
                run.ours.append(leader)
                size = struct.pack("HHHH", terminal.rows, terminal.columns, 0, 0)
                fcntl.ioctl(leader, termios.TIOCSWINSZ, size)
                process._input_fd = os.dup(leader)  # ours: the supervisor closes ``leader``
                os.set_blocking(process._input_fd, False)
                window = process._windows["stdout"] = _Window(process.output_limit, process)
                run.captures["stdout"] = window
                run.outputs.append(Output("stdout", leader, window))
                run.child_fds = [follower, follower, follower]
                return
            read_end, write_end = os.pipe()
            run.theirs.append(read_end)
            process._input_fd = write_end
            os.set_blocking(write_end, False)
            run.child_fds = [read_end, None, None]
            for index, name, mode in ((1, "stdout", inv.stdout), (2, "stderr", inv.stderr)):
                if mode == "pipe":
                    read_end, write_end = os.pipe()
                    run.ours.append(read_end)
                    run.theirs.append(write_end)
                    window = process._windows[name] = _Window(process.output_limit, process)
                    run.captures[name] = window
                    run.outputs.append(Output(name, read_end, window))
                    run.child_fds[index] = write_end
                else:  # a process's output is read or dropped, never our own streams
                    import subprocess

                    run.child_fds[index] = subprocess.DEVNULL
        except OSError as exc:
            self.close_all()
            from ._process import launch_error

            raise launch_error(exc, inv.cwd, "/directory") from None

    def launch(self) -> Child:
        return self.handle_run.launch(terminal=self.process.terminal is not None)

    def close_all(self) -> None:
        self.handle_run.close_all()
        process = self.process
        with process._input_lock:
            fd, process._input_fd = process._input_fd, -1
        if fd >= 0:
            os.close(fd)

    def supervise(self, child: Child, stream: bool) -> Generator[Request, Events, Outcome]:
        run = self.handle_run
        from ._process import _close

        _close(run.theirs)
        return supervise(
            child,
            run.outputs,
            timeout=self.process.lifetime,
            grace=run.invocation.kill_grace,
        )

    def result(self, outcome: Outcome) -> CommandResult:
        return self.handle_run.result(outcome)


class Keeper(Spawner):
    """A spawner of one thread for one process under bubblewrap: bwrap runs with
    ``--die-with-parent``, whose parent is the thread that started it, and a
    shared spawner thread ends after 30 s idle. :meth:`keep` then holds the
    thread until the process has ended."""

    def __init__(self, no_new_privs: bool) -> None:
        super().__init__(set_no_new_privs if no_new_privs else _nothing, size=1)

    def keep(self, process: Process) -> None:
        """Occupy the thread until ``process`` has ended."""
        self._submit(_Job(process.wait_sync, _nothing, None))


def _nothing() -> None:
    return None


def _async_event() -> tuple[Callable[[], object], Callable[[], Awaitable[object]]]:
    """A wake-up any thread may call, and what the current task awaits for it,
    under trio or asyncio."""
    import sniffio

    if sniffio.current_async_library() == "trio":
        import trio

        token = trio.lowlevel.current_trio_token()
        event = trio.Event()

        def wake_trio() -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(event.set)

        return wake_trio, event.wait
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Event = asyncio.Event()

    def wake_asyncio() -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed
            loop.call_soon_threadsafe(future.set)

    return wake_asyncio, future.wait


async def _in_thread(function: Callable[[], T]) -> T:
    """``function()`` in a worker thread, awaited under trio or asyncio; a
    cancelled caller stops waiting (what it waited for carries on)."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(function, abandon_on_cancel=True)


# Linux system call numbers that block reading input: read, readv, select,
# poll, pselect6, ppoll, epoll_wait, epoll_pwait (x86_64, then aarch64).
_READING_CALLS = {
    "x86_64": {0, 19, 23, 7, 270, 271, 232, 281},
    "aarch64": {63, 65, 72, 73, 22},
}


def _blocked_reading(pid: int) -> bool | None:
    calls = _READING_CALLS.get(os.uname().machine)
    if calls is None:
        return None
    try:
        with open(f"/proc/{pid}/syscall", "rb") as status:
            fields = status.read().split()
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return None
    if not fields or fields[0] in (b"running", b"-1"):
        return False
    try:
        number = int(fields[0])
    except ValueError:
        return None
    return state == b"S" and number in calls
