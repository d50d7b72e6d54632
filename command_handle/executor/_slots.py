"""A concurrency limit that holds across threads, trio runs and asyncio loops at once.

A trio ``CapacityLimiter`` belongs to one trio run, an asyncio semaphore to
one loop. An Executor is shared by all of them, so its slots are counted
under a plain lock, and a freed slot is handed to the oldest waiter through
that waiter's own wake-up: a threading event, ``call_soon_threadsafe`` for an
asyncio loop, or the trio token for a trio run.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Awaitable, Callable

import sniffio

__all__ = ["Claim", "Slots"]


class Claim:
    """Whether a blocking caller holds a slot. It is set in the same step that
    takes the slot (by the caller, or by the thread that hands it over), with
    no call in between where Python could raise Ctrl-C: the caller's
    ``finally`` then knows whether there is a slot to give back, even when
    KeyboardInterrupt came right after the slot was taken."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = False


class _Waiter:
    __slots__ = ("claim", "granted", "wake")

    def __init__(self, wake: Callable[[], bool], claim: Claim | None = None) -> None:
        self.wake = wake  # False when the waiter's loop has gone away
        self.granted = False
        self.claim = claim


class Slots:
    def __init__(self, total: int) -> None:
        self._lock = threading.Lock()
        self._free = total
        self._waiters: deque[_Waiter] = deque()

    @property
    def free(self) -> int:
        return self._free

    def _take(self) -> bool:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return True
        return False

    def release(self) -> None:
        with self._lock:
            while self._waiters:
                waiter = self._waiters.popleft()
                waiter.granted = True
                if waiter.claim is not None:
                    waiter.claim.held = True
                if waiter.wake():
                    return
                waiter.granted = False  # its loop is closed: nobody will take the slot
            self._free += 1

    def _abandon(self, waiter: _Waiter) -> None:
        """A waiter gave up (cancelled, interrupted): pass on a slot it was granted."""
        with self._lock:
            if not waiter.granted:
                self._waiters.remove(waiter)
                return
        self.release()

    def acquire_sync(self, claim: Claim) -> bool:
        """Take a slot, and mark ``claim`` as holding it; return whether that meant
        waiting for one. The caller gives it back with :meth:`release_claim`,
        also when interrupted: Ctrl-C can come between any two calls."""
        with self._lock:
            if self._free > 0 and not self._waiters:  # _take, inline: no call before the mark
                self._free -= 1
                claim.held = True
                return False
            event = threading.Event()

            def wake() -> bool:
                event.set()
                return True

            waiter = _Waiter(wake, claim)
            self._waiters.append(waiter)
        try:
            event.wait()
        except BaseException:
            with self._lock:
                if not waiter.granted:  # else the claim holds it: the caller gives it back
                    self._waiters.remove(waiter)
            raise
        return True

    def release_claim(self, claim: Claim) -> None:
        if claim.held:
            claim.held = False
            self.release()

    async def acquire(self) -> bool:
        """Take a slot; return whether that meant waiting for one."""
        with self._lock:
            if self._take():
                return False
        if sniffio.current_async_library() == "trio":
            await self._acquire_trio()
        else:
            await self._acquire_asyncio()
        return True

    async def _acquire_asyncio(self) -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def resolve() -> None:
            if not future.done():
                future.set_result(None)

        def wake() -> bool:
            try:
                loop.call_soon_threadsafe(resolve)
            except RuntimeError:  # the loop is closed
                return False
            return True

        async def done() -> None:
            await future

        await self._wait(_Waiter(wake), done)

    async def _acquire_trio(self) -> None:
        import trio

        token = trio.lowlevel.current_trio_token()
        event = trio.Event()

        def wake() -> bool:
            try:
                token.run_sync_soon(event.set)
            except trio.RunFinishedError:
                return False
            return True

        await self._wait(_Waiter(wake), event.wait)

    async def _wait(self, waiter: _Waiter, done: Callable[[], Awaitable[None]]) -> None:
        with self._lock:
            if self._take():
                return
            self._waiters.append(waiter)
        try:
            await done()
        except BaseException:
            self._abandon(waiter)
            raise
