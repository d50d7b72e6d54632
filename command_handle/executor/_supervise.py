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
from ._spawn import Child, adopt_orphans

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


def _kill_now(
    child: Child, grace: float, exited_at: float | None, terminating: bool, limit: float | None
) -> tuple[float | None, bool]:
    """On abort: SIGTERM to the group now (SIGKILL follows after the grace), or,
    when the child has already exited, stop reading at once. Returns the new
    deadline and whether the kill sequence runs."""
    now = time.monotonic()
    if exited_at is not None:
        return now, terminating
    if terminating:
        return limit, True
    child.signal_group(signal.SIGTERM)
    return now + grace, True


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
    poller = select.epoll()
    readers = {out.fd: out for out in outputs}
    feeding = stdin_fd >= 0
    pending = memoryview(stdin_data)
    timed_out = aborted = False
    limit = None if timeout is None else time.monotonic() + timeout
    terminating = False
    exited_at: float | None = None
    try:
        poller.register(child.exit_fd, select.EPOLLIN)
        for fd in readers:
            # Left blocking: a pipe is read only once epoll reports it readable, and
            # then one read returns at once (that saves two fcntl calls per pipe).
            poller.register(fd, select.EPOLLIN)
        if feeding:
            if pending:
                os.set_blocking(stdin_fd, False)
                poller.register(stdin_fd, select.EPOLLOUT)
            else:
                feeding = False
                _close(stdin_fd)
        while exited_at is None or readers:
            now = time.monotonic()
            if limit is not None and now >= limit:
                if exited_at is not None:
                    break  # a descendant outside the group holds a pipe: stop reading
                if not terminating:  # the timeout: SIGTERM, then SIGKILL after the grace
                    timed_out = True
                    terminating = True
                    child.signal_group(signal.SIGTERM)
                    limit = now + grace
                else:
                    child.kill_group()
                    limit = None  # SIGKILL cannot be ignored: wait for the exit
                continue
            # Polled before any wait, also right after the launch: on one CPU the
            # child has often run to its end while the launch was handed back,
            # and a wait through an event loop costs far more than this poll.
            events = poller.poll(0)
            if not events:
                try:
                    polled = yield Wait(poller, None if limit is None else limit - now)
                except Abort:
                    aborted, stream = True, False
                    limit, terminating = _kill_now(child, grace, exited_at, terminating, limit)
                    continue
                events = poller.poll(0) if polled is None else polled
            for fd, _ in events:
                if fd == child.exit_fd:
                    poller.unregister(fd)
                    child.reap()
                    # Whatever the child left in its group goes too, so the pipes
                    # reach end-of-file.
                    child.kill_group()
                    exited_at = time.monotonic()
                    limit = exited_at + grace
                    if feeding:
                        poller.unregister(stdin_fd)
                        _close(stdin_fd)
                        feeding = False
                elif fd in readers:
                    try:
                        chunk = os.read(fd, READ_SIZE)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        poller.unregister(fd)
                        _close(fd)
                        del readers[fd]
                        continue
                    out = readers[fd]
                    out.capture.write(chunk)
                    if stream:
                        try:
                            yield Deliver(out.name, chunk)
                        except Abort:
                            aborted, stream = True, False
                            limit, terminating = _kill_now(
                                child, grace, exited_at, terminating, limit
                            )
                elif feeding and fd == stdin_fd:
                    try:
                        pending = pending[os.write(stdin_fd, pending[:READ_SIZE]) :]
                    except BlockingIOError:
                        continue
                    except OSError as exc:  # the child closed stdin or exited: not an error
                        if exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.EBADF):
                            raise
                        pending = pending[:0]
                    if not pending:
                        poller.unregister(stdin_fd)
                        _close(stdin_fd)
                        feeding = False
    finally:
        poller.close()
        if feeding:
            _close(stdin_fd)
        for fd in readers:
            _close(fd)
        if child.returncode is None:  # left early (an error in a consumer): no orphan
            child.kill_group()
            child.reap()
        child.close()
        if child.cgroup is not None:  # also what left the process group
            child.cgroup.kill()
        adopt_orphans(child.pid)
    code = child.returncode
    assert code is not None
    return Outcome(code, timed_out, aborted)
