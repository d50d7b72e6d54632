"""Supervising one child without doing I/O waits: a sans-I/O state machine.

:func:`supervise` is a generator. It reads the child's pipes, feeds its
stdin, enforces the timeout (SIGTERM to the group, SIGKILL after the grace
period), kills whatever the child leaves in its group when it exits, and
reaps it. Whenever it has nothing to do it yields :class:`Wait`: "wake me when
this descriptor is readable, or after this many seconds". Streaming output is
yielded as :class:`Deliver`. The drivers in ``_drive`` answer those requests
with a blocking poll, or with an await under trio or asyncio; so the caps,
the timeouts and the kill sequence exist once, and only the waiting differs.

Throwing :class:`Abort` into the generator (the caller was cancelled, or its
consumer failed) switches it to the kill sequence; it then finishes normally.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass

from ._capture import Capture
from ._spawn import Child, KilledAtLaunch

__all__ = ["Abort", "Deliver", "Outcome", "Output", "Request", "Wait", "supervise"]

READ_SIZE = 65536


@dataclass(frozen=True, slots=True)
class Wait:
    """Wake the generator when ``poller`` (an epoll object, readable as ``fd``) has
    events, or ``timeout`` seconds pass (None: no limit). A driver that can block
    may poll it itself and send the events back; one that cannot sends None."""

    poller: select.epoll
    timeout: float | None

    @property
    def fd(self) -> int:
        return self.poller.fileno()


@dataclass(frozen=True, slots=True)
class Deliver:
    """A chunk of output for a streaming caller, as it arrived."""

    name: str
    data: bytes


Request = Wait | Deliver
Events = list[tuple[int, int]] | None  # what a driver sends back for a Wait


class Abort(Exception):
    """Thrown into :func:`supervise` to kill the child now."""


@dataclass(slots=True)
class Output:
    """A pipe the child writes: its name (``"stdout"``, ``"stderr"``), our read end,
    and where its bytes go."""

    name: str
    fd: int
    capture: Capture


@dataclass(frozen=True, slots=True)
class Outcome:
    returncode: int
    timed_out: bool
    aborted: bool


def _close(fd: int) -> None:
    try:  # noqa: SIM105 - every call passes here; suppress() costs more
        os.close(fd)
    except OSError:
        pass


class _KillSequence:
    """The call's deadline and what its passing does: the timeout's SIGTERM to
    the group, SIGKILL after the grace; once the child has exited (and whatever
    it left in its group was killed), the end of reading when its pipes have
    had the grace to reach end-of-file."""

    __slots__ = ("aborted", "child", "exited_at", "grace", "limit", "terminating", "timed_out")

    def __init__(self, child: Child, timeout: float | None, grace: float) -> None:
        self.child = child
        self.grace = grace
        self.limit = None if timeout is None else time.monotonic() + timeout
        self.terminating = self.timed_out = self.aborted = False
        self.exited_at: float | None = None

    def running(self, now: float, readers: dict[int, Output]) -> bool:
        """Act on the deadline if it has passed; False once supervision is over
        (the child has exited and ``readers``, its open pipes, are read)."""
        limit = self.limit
        if limit is not None and now >= limit:
            if self.exited_at is not None:
                return False  # a descendant outside the group holds a pipe: stop reading
            self._escalate(now)
        return self.exited_at is None or bool(readers)

    def remaining(self, now: float) -> float | None:
        return None if self.limit is None else self.limit - now

    def _escalate(self, now: float) -> None:
        if self.terminating:
            self.child.kill_group()
            self.limit = None  # SIGKILL cannot be ignored: wait for the exit
        else:
            self.timed_out = True
            self._terminate(now)

    def _terminate(self, now: float) -> None:
        """SIGTERM to the group; SIGKILL follows after the grace."""
        self.terminating = True
        self.child.signal_group(signal.SIGTERM)
        self.limit = now + self.grace

    def abort(self) -> None:
        """The caller gave up: the kill sequence starts now, unless it runs
        already; once the child has exited, reading stops at once."""
        self.aborted = True
        now = time.monotonic()
        if self.exited_at is not None:
            self.limit = now
        elif not self.terminating:
            self._terminate(now)

    def exited(self) -> None:
        """The child has exited: reap it, and kill whatever it left in its group,
        so the pipes reach end-of-file."""
        self.child.reap()
        self.child.kill_group()
        self.exited_at = time.monotonic()
        self.limit = self.exited_at + self.grace


class _Pipes:
    """The child's pipes in one epoll set with its exit descriptor: each output
    read into its capture (and delivered to a streaming caller), stdin fed
    from memory. Owns and closes every descriptor it holds."""

    __slots__ = ("pending", "poller", "readers", "stdin_fd", "stream")

    def __init__(
        self,
        poller: select.epoll,
        outputs: Sequence[Output],
        stdin_fd: int,
        stdin_data: bytes,
        stream: bool,
    ) -> None:
        self.poller = poller
        self.readers = {out.fd: out for out in outputs}
        self.stdin_fd = stdin_fd  # -1 once there is nothing (more) to feed
        self.pending = memoryview(stdin_data)
        self.stream = stream

    def register(self, exit_fd: int) -> None:
        poller = self.poller
        # One-shot: reported once, then disabled, with no unregister to make.
        poller.register(exit_fd, select.EPOLLIN | select.EPOLLONESHOT)
        for fd in self.readers:
            # Left blocking: a pipe is read only once epoll reports it readable, and
            # then one read returns at once (that saves two fcntl calls per pipe).
            poller.register(fd, select.EPOLLIN)
        if self.stdin_fd >= 0:
            if self.pending:
                os.set_blocking(self.stdin_fd, False)
                poller.register(self.stdin_fd, select.EPOLLOUT)
            else:
                _close(self.stdin_fd)
                self.stdin_fd = -1

    def read(self, fd: int) -> Deliver | None:
        """Read what ``fd`` holds into its capture; the chunk, when streaming.
        At end-of-file the pipe is closed."""
        out = self.readers.get(fd)
        if out is None:  # stdin's, after it was closed in the same round
            return None
        try:
            chunk = os.read(fd, READ_SIZE)
        except OSError:
            chunk = b""
        if not chunk:
            self.poller.unregister(fd)
            _close(fd)
            del self.readers[fd]
            return None
        out.capture.write(chunk)
        return Deliver(out.name, chunk) if self.stream else None

    def feed(self) -> None:
        """Write what the child's stdin takes now; close it once all is written."""
        try:
            self.pending = self.pending[os.write(self.stdin_fd, self.pending[:READ_SIZE]) :]
        except BlockingIOError:
            return
        except OSError as exc:  # the child closed stdin or exited: not an error
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.EBADF):
                raise
            self.pending = self.pending[:0]
        if not self.pending:
            self.stop_feeding()

    def stop_feeding(self) -> None:
        if self.stdin_fd >= 0:
            self.poller.unregister(self.stdin_fd)
            _close(self.stdin_fd)
            self.stdin_fd = -1

    def close(self) -> None:
        self.poller.close()
        if self.stdin_fd >= 0:
            _close(self.stdin_fd)
            self.stdin_fd = -1
        for fd in self.readers:
            _close(fd)
        self.readers.clear()


def _watch(
    child: Child, outputs: Sequence[Output], stdin_fd: int, stdin_data: bytes, stream: bool
) -> _Pipes:
    """The child's pipes and exit descriptor in a new epoll set. When the system
    refuses (no descriptor left), nothing of the child is left: it is killed,
    every descriptor closed, and :class:`KilledAtLaunch` raised."""
    pipes = None
    try:
        pipes = _Pipes(select.epoll(), outputs, stdin_fd, stdin_data, stream)
        pipes.register(child.exit_fd)
    except BaseException as exc:
        if pipes is not None:
            pipes.close()
        else:  # no epoll set: the descriptors were not handed over yet
            for out in outputs:
                _close(out.fd)
            if stdin_fd >= 0:
                _close(stdin_fd)
        child.finish()
        if isinstance(exc, OSError):
            raise KilledAtLaunch(exc.errno, exc.strerror or str(exc)) from exc
        raise
    return pipes


def _handle(fd: int, exit_fd: int, pipes: _Pipes, kill: _KillSequence) -> Deliver | None:
    """One descriptor epoll reported: the child's exit, room in its stdin, or output."""
    if fd == exit_fd:
        kill.exited()
        pipes.stop_feeding()
        return None
    if fd == pipes.stdin_fd:
        pipes.feed()
        return None
    return pipes.read(fd)


def supervise(
    child: Child,
    outputs: Sequence[Output],
    *,
    stdin_fd: int = -1,
    stdin_data: bytes = b"",
    timeout: float | None,
    grace: float,
    stream: bool = False,
) -> Generator[Request, Events, Outcome]:
    """Run ``child`` to its end; own and close ``outputs``' and ``stdin_fd``'s descriptors.

    ``timeout`` (seconds, None for none) starts the kill sequence; after the
    child exits, its pipes get ``grace`` seconds to reach end-of-file (a
    descendant that left the group may hold them), then reading stops.
    """
    pipes = _watch(child, outputs, stdin_fd, stdin_data, stream)
    kill = _KillSequence(child, timeout, grace)
    poller, exit_fd = pipes.poller, child.exit_fd
    try:
        while kill.running(now := time.monotonic(), pipes.readers):
            # Polled before any wait, also right after the launch: on one CPU the
            # child has often run to its end while the launch was handed back,
            # and a wait through an event loop costs far more than this poll.
            events = poller.poll(0)
            if not events:
                try:
                    polled = yield Wait(poller, kill.remaining(now))
                except Abort:
                    pipes.stream = False
                    kill.abort()
                    continue
                events = poller.poll(0) if polled is None else polled
            for fd, _ in events:
                delivery = _handle(fd, exit_fd, pipes, kill)
                if delivery is not None:
                    try:
                        yield delivery
                    except Abort:
                        pipes.stream = False
                        kill.abort()
    finally:
        pipes.close()
        child.finish()  # left early (an error in a consumer): no orphan either
    code = child.returncode
    assert code is not None
    return Outcome(code, kill.timed_out, kill.aborted)
