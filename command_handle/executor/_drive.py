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
    wait = _wait_trio if sniffio.current_async_library() == "trio" else _wait_asyncio
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
