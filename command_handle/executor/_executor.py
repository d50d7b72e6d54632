"""The Executor: validates, renders and runs Command Handles under a Policy."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import trio

from ..handle import CommandHandle, Invocation
from ..handle._resolve import resolve_directory
from ..plan import Plan
from ..policy import Policy
from ._plan import PlanResult, check_plan, plan_environment, run_plan
from ._process import run_invocation
from ._result import CommandResult

__all__ = ["Event", "Executor", "run_in_guest"]

T = TypeVar("T")


@dataclass(frozen=True)
class Event:
    """A streaming event: ``kind`` is ``"stdout"`` or ``"stderr"`` with ``data``
    (raw bytes as they arrived), or ``"exit"`` with the final ``result``."""

    kind: str
    data: bytes = b""
    result: CommandResult | None = None


class Executor:
    """Runs Command Handles. One Executor can serve many concurrent calls.

    ``call`` is a trio coroutine; ``call_sync`` blocks; ``call_asyncio`` runs
    under asyncio (trio in guest mode on the asyncio loop); ``stream`` yields
    output as it arrives. At most ``policy.max_concurrency`` children run at
    once; further calls wait their turn.
    """

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy()
        self._limiter = trio.CapacityLimiter(self.policy.max_concurrency)
        self.spawned = 0  # launches attempted (a failed launch counts), for monitoring

    def _prepare(
        self, handle: CommandHandle | dict[str, Any] | str | os.PathLike[str]
    ) -> CommandHandle:
        return handle if isinstance(handle, CommandHandle) else CommandHandle.load(handle)

    async def call(
        self, handle: CommandHandle | dict[str, Any] | str | os.PathLike[str], args: object = None
    ) -> CommandResult:
        """Validate ``args``, evaluate the handle, run the command, return the result.

        Raises a :class:`~command_handle.errors.HandleError` (and spawns nothing)
        when any check fails. A non-zero exit, a signal or a timeout is a result.
        """
        handle = self._prepare(handle)
        invocation = handle.render(args, self.policy)
        result = await self.run(invocation)
        return replace(result, view=handle.shape_result(result.to_json()))

    async def run(self, invocation: Invocation) -> CommandResult:
        """Run an already validated :class:`~command_handle.handle.Invocation`."""
        async with self._limiter:
            return await run_invocation(invocation, on_spawn=self._count_spawn)

    async def run_plan(
        self,
        plan: Plan,
        arguments: Mapping[str, str],
        variables: Mapping[str, str] | None = None,
    ) -> PlanResult:
        """Run a translated plan (``mode="utcp"``) with its placeholders' text values.

        Everything that can be checked is checked first, and a failure raises a
        :class:`~command_handle.errors.HandleError` before anything runs: missing
        arguments, the environment (with ``variables`` substituted into the
        plan's values), the working directory, and what the policy forbids. The
        whole plan holds one concurrency slot and shares ``policy.timeout``.
        """
        check_plan(plan, arguments, self.policy)
        env = plan_environment(plan, variables or {}, self.policy)
        cwd = resolve_directory(plan.working_dir, "/working_dir")
        async with self._limiter:
            return await run_plan(plan, arguments, env, cwd, self.policy, self._count_spawn)

    def _count_spawn(self) -> None:
        self.spawned += 1

    def call_sync(
        self, handle: CommandHandle | dict[str, Any] | str | os.PathLike[str], args: object = None
    ) -> CommandResult:
        """Blocking form of :meth:`call` (starts a trio run; not for use inside one)."""
        return trio.run(self.call, handle, args)

    async def call_asyncio(
        self, handle: CommandHandle | dict[str, Any] | str | os.PathLike[str], args: object = None
    ) -> CommandResult:
        """:meth:`call` for asyncio programs. Cancelling the asyncio task cancels the
        call, which kills the child's process group."""
        return await run_in_guest(lambda: self.call(handle, args))

    @asynccontextmanager
    async def stream(
        self, handle: CommandHandle | dict[str, Any] | str | os.PathLike[str], args: object = None
    ) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        """Run the call in the background and receive its output as events::

            async with executor.stream(handle, args) as events:
                async for event in events:
                    ...  # Event("stdout", b"..."), ..., Event("exit", result=...)

        Validation errors are raised on entry, before anything runs.
        """
        handle = self._prepare(handle)
        invocation = handle.render(args, self.policy)
        send, receive = trio.open_memory_channel[Event](16)

        async def produce() -> None:
            async with send:

                async def forward(kind: str, chunk: bytes) -> None:
                    await send.send(Event(kind, chunk))

                async with self._limiter:
                    result = await run_invocation(invocation, forward, self._count_spawn)
                result = replace(result, view=handle.shape_result(result.to_json()))
                await send.send(Event("exit", result=result))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce)
            try:
                async with receive:
                    yield receive
            finally:
                nursery.cancel_scope.cancel()


class _GuestPortal:
    """One trio guest run on an asyncio loop, serving every call made from that loop.

    trio allows one run per thread, so concurrent asyncio calls share this run.
    It starts on the first call and finishes when no call is left, so nothing
    outlives the asyncio program. All of this runs on the loop's thread.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pending = 0
        self.closed = False
        self.token: trio.lowlevel.TrioToken | None = None
        self.started: asyncio.Future[None] = loop.create_future()
        self.finished: asyncio.Future[None] = loop.create_future()
        self.send, self.receive = trio.open_memory_channel[_Job](math.inf)
        trio.lowlevel.start_guest_run(
            self._serve,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            done_callback=self._finished,
            host_uses_signal_set_wakeup_fd=False,
        )

    async def _serve(self) -> None:
        self.token = trio.lowlevel.current_trio_token()
        self.started.set_result(None)
        async with trio.open_nursery() as nursery, self.receive:
            async for job in self.receive:
                nursery.start_soon(self._run, job)

    async def _run(self, job: _Job) -> None:
        with job.scope:
            try:
                value = await job.make()
            except BaseException as exc:  # delivered to the asyncio caller
                if not job.future.done():
                    job.future.set_exception(exc if isinstance(exc, Exception) else _cancelled())
            else:
                if not job.future.done():
                    job.future.set_result(value)
        if not job.future.done():
            job.future.set_exception(_cancelled())
        self.pending -= 1
        if self.pending == 0:
            self.closed = True
            self.send.close()

    def _finished(self, outcome: Any) -> None:
        self.closed = True
        if _PORTALS.get(self.loop) is self:
            del _PORTALS[self.loop]
        if not self.started.done():
            self.started.set_exception(RuntimeError("the trio guest run ended before starting"))
        self.finished.set_result(None)

    def submit(self, job: _Job) -> None:
        assert self.token is not None
        self.pending += 1
        self.token.run_sync_soon(self.send.send_nowait, job)


@dataclass
class _Job:
    make: Callable[[], Awaitable[Any]]
    future: asyncio.Future[Any]
    scope: trio.CancelScope


def _cancelled() -> asyncio.CancelledError:
    return asyncio.CancelledError()


_PORTALS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _GuestPortal] = (
    weakref.WeakKeyDictionary()
)


async def run_in_guest(make: Callable[[], Awaitable[T]]) -> T:
    """Run a trio coroutine from asyncio through the loop's guest run.

    Cancelling the asyncio task cancels the trio call; this returns only after
    trio has cleaned up (the child's process group is killed), then re-raises.
    """
    loop = asyncio.get_running_loop()
    while True:
        portal = _PORTALS.get(loop)
        if portal is not None and portal.closed:
            await portal.finished  # one trio run per thread: let the idle one end first
            continue
        if portal is None:
            portal = _PORTALS[loop] = _GuestPortal(loop)
        await portal.started
        if not portal.closed:
            break
    job = _Job(make, loop.create_future(), trio.CancelScope())
    portal.submit(job)
    try:
        value: T = await asyncio.shield(job.future)
    except asyncio.CancelledError:
        if not job.future.done():
            assert portal.token is not None
            portal.token.run_sync_soon(job.scope.cancel)
            with contextlib.suppress(BaseException):
                await asyncio.shield(job.future)
        await _settle(portal)
        raise
    await _settle(portal)
    return value


async def _settle(portal: _GuestPortal) -> None:
    """If this call left the guest run idle, return only once it has ended, so an
    asyncio program that exits right after its last call leaves nothing behind."""
    if portal.closed:
        await asyncio.shield(portal.finished)
