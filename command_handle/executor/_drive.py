"""Answering a supervisor's waits: blocking in a thread, or awaiting under trio or asyncio.

This is the only place where the three ways of calling differ. The sync
driver polls the descriptor the supervisor names; the async driver awaits it
with anyio, which runs natively on trio and on asyncio. On cancellation (or
an error in a streaming consumer, or Ctrl-C in a thread) the driver throws
:class:`Abort` into the supervisor and, shielded from further cancellation,
waits while it kills the child's group, then re-raises.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Generator
from typing import TypeVar

import anyio
import sniffio

from ._supervise import Abort, Deliver, Events, Request, Wait

__all__ = ["ChunkCallback", "SyncChunkCallback", "drive", "drive_sync"]

T = TypeVar("T")
ChunkCallback = Callable[[str, bytes], Awaitable[None]]
SyncChunkCallback = Callable[[str, bytes], None]


def _poll(request: Request) -> Events:
    if not isinstance(request, Wait):
        return None
    return request.poller.poll(-1 if request.timeout is None else max(0.0, request.timeout))


def drive_sync(
    supervisor: Generator[Request, Events, T], on_chunk: SyncChunkCallback | None = None
) -> T:
    """Run ``supervisor`` in this thread, blocking in its epoll; streamed output
    goes to ``on_chunk`` in this thread."""
    try:
        request = next(supervisor)
        while True:
            try:
                events = _poll(request)
                if on_chunk is not None and isinstance(request, Deliver):
                    on_chunk(request.name, request.data)
            except BaseException:  # KeyboardInterrupt, or a signal handler's exception
                try:
                    request = supervisor.throw(Abort())
                    while True:
                        request = supervisor.send(_poll(request))
                except StopIteration:
                    pass  # the child is dead and reaped
                raise
            request = supervisor.send(events)
    except StopIteration as stop:
        value: T = stop.value
        return value
    finally:
        supervisor.close()


async def _wait(request: Wait) -> None:
    if request.timeout is None:
        await anyio.wait_readable(request.fd)
    else:
        with anyio.move_on_after(request.timeout):
            await anyio.wait_readable(request.fd)


async def _wait_trio(request: Wait) -> None:
    """The same, straight on trio: anyio's layer costs more than the wait's own work."""
    import trio

    if request.timeout is None:
        await trio.lowlevel.wait_readable(request.fd)
    else:
        with trio.move_on_after(request.timeout):
            await trio.lowlevel.wait_readable(request.fd)


async def _wait_asyncio(request: Wait) -> None:
    """The same, straight on asyncio (a reader callback and a timer on the loop)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    fd = request.fd
    try:
        loop.add_reader(fd, _resolve, ready)
    except NotImplementedError:  # a loop without readers: anyio has a fallback
        await _wait(request)
        return
    timer = None if request.timeout is None else loop.call_later(request.timeout, _resolve, ready)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
        if timer is not None:
            timer.cancel()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def drive(
    supervisor: Generator[Request, Events, T], on_chunk: ChunkCallback | None = None
) -> T:
    """Run ``supervisor`` under the running event loop (trio or asyncio)."""
    trio_loop = sniffio.current_async_library() == "trio"
    if trio_loop and on_chunk is None:
        return await _drive_trio(supervisor)
    wait = _wait_trio if trio_loop else _wait_asyncio
    try:
        request = next(supervisor)
        while True:
            try:
                if isinstance(request, Wait):
                    await wait(request)
                elif on_chunk is not None and isinstance(request, Deliver):
                    await on_chunk(request.name, request.data)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    try:
                        request = supervisor.throw(Abort())
                        while True:
                            if isinstance(request, Wait):
                                await wait(request)
                            request = next(supervisor)
                    except StopIteration:
                        pass  # the child is dead and reaped
                raise
            request = next(supervisor)
    except StopIteration as stop:
        value: T = stop.value
        return value
    finally:
        supervisor.close()


async def _drive_trio(supervisor: Generator[Request, Events, T]) -> T:
    """:func:`drive` under trio with nothing to stream. The waits share one
    cancel scope for as long as the supervisor's deadline stays the same (it
    moves at the timeout and at the child's exit), rather than entering one
    scope per wait (docs/decisions.md)."""
    import trio

    wait_readable = trio.lowlevel.wait_readable
    try:
        request = next(supervisor)
        while True:
            assert isinstance(request, Wait)  # a Deliver only when streaming
            deadline = _deadline(trio.current_time(), request.timeout)
            with trio.CancelScope(deadline=deadline) as scope:
                while True:
                    try:
                        await wait_readable(request.fd)
                    except trio.Cancelled:
                        if scope.cancel_called:
                            raise  # the deadline: this scope catches it
                        await _abort_trio(supervisor)
                        raise
                    except BaseException:
                        await _abort_trio(supervisor)
                        raise
                    request = next(supervisor)
                    assert isinstance(request, Wait)
                    moved = _deadline(trio.current_time(), request.timeout)
                    if abs(moved - deadline) > _SAME_DEADLINE:
                        break  # a new deadline: a new scope
            if scope.cancelled_caught:  # the deadline passed: the supervisor acts on it
                request = next(supervisor)
    except StopIteration as stop:
        value: T = stop.value
        return value
    finally:
        supervisor.close()


async def _abort_trio(supervisor: Generator[Request, Events, object]) -> None:
    """Kill the child (the caller was cancelled) and wait, shielded, until it is reaped."""
    import trio

    with trio.CancelScope(shield=True):
        try:
            request = supervisor.throw(Abort())
            while True:
                if isinstance(request, Wait):
                    await _wait_trio(request)
                request = next(supervisor)
        except StopIteration:
            pass  # the child is dead and reaped


# Deadlines computed from the supervisor's timeouts wobble by the time between
# two clock reads; below this they are the same deadline.
_SAME_DEADLINE = 0.001


def _deadline(now: float, timeout: float | None) -> float:
    return math.inf if timeout is None else now + timeout
