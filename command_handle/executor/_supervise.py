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

__all__ = ["Abort", "Deliver", "Handover", "Outcome", "Output", "Request", "Wait", "supervise"]

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
    had the grace to reach end-of-file. ``limit`` is the next deadline (None:
    none); the supervisor compares it with the clock itself, and calls
    :meth:`expired` only once it has passed."""

    __slots__ = ("aborted", "child", "exited_at", "grace", "limit", "terminating", "timed_out")

    def __init__(self, child: Child, timeout: float | None, grace: float, now: float) -> None:
        self.child = child
        self.grace = grace
        self.limit = None if timeout is None else now + timeout
        self.terminating = self.timed_out = self.aborted = False
        self.exited_at: float | None = None

    def expired(self, now: float) -> bool:
        """The deadline has passed: act on it. True when supervision is over
        (the child exited, and a descendant outside its group holds a pipe)."""
        if self.exited_at is not None:
            return True  # stop reading
        if self.terminating:
            self.child.kill_group()
            self.limit = None  # SIGKILL cannot be ignored: wait for the exit
        else:
            self.timed_out = True
            self._terminate(now)
        return False

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


class Handover:
    """Who answers for a launched child: its caller until the supervisor's first
    step marks ``supervised``, the supervisor from then on. ``child`` is set by
    the thread that launched it, so a caller interrupted (Ctrl-C) before it
    even stored the child still finds it."""

    __slots__ = ("child", "supervised")

    def __init__(self) -> None:
        self.child: Child | None = None
        self.supervised = False


def _watch(
    child: Child, readers: dict[int, Output], stdin_fd: int, stdin_data: bytes
) -> select.epoll:
    """The child's exit descriptor, its pipes and a stdin to feed in a new epoll
    set. When the system refuses (no descriptor left), raise
    :class:`KilledAtLaunch`; the supervisor then kills the child and closes
    every descriptor."""
    poller = None
    try:
        poller = select.epoll()
        # One-shot: reported once, then disabled, with no unregister to make.
        poller.register(child.exit_fd, select.EPOLLIN | select.EPOLLONESHOT)
        for fd in readers:
            # Left blocking: a pipe is read only once epoll reports it readable, and
            # then one read returns at once (that saves two fcntl calls per pipe).
            poller.register(fd, select.EPOLLIN)
        if stdin_fd >= 0 and stdin_data:
            os.set_blocking(stdin_fd, False)
            poller.register(stdin_fd, select.EPOLLOUT)
    except BaseException as exc:
        if poller is not None:
            poller.close()
        if isinstance(exc, OSError):
            raise KilledAtLaunch(exc.errno, exc.strerror or str(exc)) from exc
        raise
    return poller


def _feed(fd: int, pending: memoryview) -> memoryview:
    """Write what the child's stdin takes now; what is left to write (empty
    once all is written, or the child closed its stdin)."""
    try:
        return pending[os.write(fd, pending[:READ_SIZE]) :]
    except BlockingIOError:
        return pending
    except OSError as exc:  # the child closed stdin or exited: not an error
        if exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.EBADF):
            raise
        return pending[:0]


def _stop_feeding(poller: select.epoll, fd: int) -> None:
    if fd >= 0:
        poller.unregister(fd)
        _close(fd)


def supervise(
    child: Child,
    outputs: Sequence[Output],
    *,
    stdin_fd: int = -1,
    stdin_data: bytes = b"",
    timeout: float | None,
    grace: float,
    stream: bool = False,
    block: bool = False,
    handover: Handover | None = None,
) -> Generator[Request, Events, Outcome]:
    """Run ``child`` to its end; own and close ``outputs``' and ``stdin_fd``'s descriptors.

    ``timeout`` (seconds, None for none) starts the kill sequence; after the
    child exits, its pipes get ``grace`` seconds to reach end-of-file (a
    descendant that left the group may hold them), then reading stops.

    With ``block`` (a driver that would block in the poll anyway), the waits
    are made here and never yielded; an exception raised in one (Ctrl-C, a
    signal handler's) starts the kill sequence, and is raised once the child
    is reaped; a second one ends the wait with SIGKILL to the group at once.

    One function with its state in locals: every call runs this loop, on a
    cache the child's exec has just evicted, and each helper, object and
    attribute it touches costs more there than in a warm loop
    (docs/decisions.md). The rare paths (timeout, abort, stdin) have helpers.
    """
    readers = {out.fd: out for out in outputs}  # the open pipes
    poller: select.epoll | None = None
    interrupted: BaseException | None = None
    try:
        # From here the ``finally`` below leaves nothing, whatever interrupts: the
        # caller's own cleanup (``handover``) stops. No call comes before this mark.
        if handover is not None:
            handover.supervised = True
        poller = _watch(child, readers, stdin_fd, stdin_data)
        if stdin_fd >= 0 and not stdin_data:  # nothing to feed: the child sees end-of-file
            fd, stdin_fd = stdin_fd, -1  # forgotten before closed: never closed twice
            _close(fd)
        pending = memoryview(stdin_data)
        exit_fd = child.exit_fd
        monotonic = time.monotonic
        read = os.read
        kill = _KillSequence(child, timeout, grace, monotonic())
        while True:
            now = monotonic()
            limit = kill.limit
            if limit is not None and now >= limit and kill.expired(now):
                break
            if block:
                limit = kill.limit  # moved if the deadline just passed
                try:
                    events = poller.poll(-1 if limit is None else max(0.0, limit - now))
                except BaseException as exc:
                    if interrupted is not None or kill.aborted:
                        # A second one, also after the driver aborted (its consumer
                        # failed, or Ctrl-C reached it): ``finally`` kills the group.
                        raise
                    interrupted = exc
                    stream = False
                    kill.abort()
                    if kill.exited_at is None:
                        # The poll may have returned the child's exit as the
                        # exception came: its one-shot event is armed again.
                        poller.modify(exit_fd, select.EPOLLIN | select.EPOLLONESHOT)
                    continue
            # Else polled before any wait, also right after the launch: on one CPU
            # the child has often run to its end while the launch was handed back,
            # and a wait through an event loop costs far more than this poll.
            elif not (events := poller.poll(0)):
                limit = kill.limit
                try:
                    polled = yield Wait(poller, None if limit is None else limit - now)
                except Abort:
                    stream = False
                    kill.abort()
                    continue
                events = poller.poll(0) if polled is None else polled
            for fd, _ in events:
                if fd == exit_fd:
                    kill.exited()
                    fed, stdin_fd = stdin_fd, -1  # forgotten before closed: never twice
                    _stop_feeding(poller, fed)
                    continue
                if fd == stdin_fd:
                    pending = _feed(fd, pending)
                    if not pending:
                        stdin_fd = -1
                        _stop_feeding(poller, fd)
                    continue
                out = readers.get(fd)
                if out is None:  # stdin's, after it was closed in the same round
                    continue
                try:
                    chunk = read(fd, READ_SIZE)
                except OSError:
                    chunk = b""
                if not chunk:  # end-of-file
                    del readers[fd]  # forgotten before closed: never closed twice
                    poller.unregister(fd)
                    _close(fd)
                    continue
                out.capture.write(chunk)
                if stream:
                    try:
                        yield Deliver(out.name, chunk)
                    except Abort:
                        stream = False
                        kill.abort()
            if kill.exited_at is not None and not readers:
                break
    finally:
        if poller is not None:
            poller.close()
        if stdin_fd >= 0:
            _close(stdin_fd)
        for fd in readers:
            _close(fd)
        child.finish()  # left early (an error in a consumer): no orphan either
    if interrupted is not None:
        raise interrupted
    code = child.returncode
    assert code is not None
    return Outcome(code, kill.timed_out, kill.aborted)
