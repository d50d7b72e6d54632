"""The Executor: validates, renders and runs Command Handles and plans under a Policy.

One Executor serves any mix of callers at once: trio tasks, asyncio tasks and
plain threads. ``call`` awaits natively under trio and under asyncio (no
guest run, no event loop underneath); ``call_sync`` blocks the calling
thread with no event loop at all. The concurrency limit is shared by all of
them. Only the waiting differs between these paths (see ``_drive``); the
checks, the caps, the kill sequence and the result are the same code.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import anyio

from ..errors import AfterRunError, CommandHandleError, HandleError
from ..handle import CommandHandle, Invocation
from ..plan import Plan
from ..policy import Policy, check_program
from . import _bubblewrap as bubblewrap
from ._call_plan import describe_invocation
from ._drive import ChunkCallback
from ._landlock import SandboxProfile
from ._plan_checks import PreparedPlan, prepare_plan
from ._plan_result import PlanResult
from ._process import run_invocation, run_invocation_sync
from ._result import CommandResult
from ._sandbox import call_tmpdir, call_tmpdir_async, profile_for, spawner_for
from ._slots import Slots
from ._spawn import Spawner

__all__ = ["Event", "EventStream", "Executor", "HandleSource"]

HandleSource = CommandHandle | dict[str, Any] | str | os.PathLike[str]
_CACHED_FILES = 256


@dataclass(frozen=True)
class Event:
    """A streaming event: ``kind`` is ``"stdout"`` or ``"stderr"`` with ``data``
    (raw bytes as they arrived), or ``"exit"`` with the final ``result``."""

    kind: str
    data: bytes = b""
    result: CommandResult | None = None


class EventStream:
    """The events of a streamed call, as an async iterator (trio or asyncio).

    Iteration ends after the ``"exit"`` event. A failure after the launch (the
    operating system refused the program, or the ``result`` template failed)
    is raised from the iteration, where the consumer is.
    """

    def __init__(self, receive: anyio.abc.ObjectReceiveStream[Event]) -> None:
        self._receive = receive
        self._failure: BaseException | None = None

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            failure, self._failure = self._failure, None
            if failure is not None:
                raise failure from None
            raise StopAsyncIteration from None

    async def receive(self) -> Event:
        """The next event; raises ``anyio.EndOfStream`` after the last one."""
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise anyio.EndOfStream from None


class Executor:
    """Runs Command Handles and plans. One Executor serves many concurrent calls,
    from trio, asyncio and threads alike; at most ``policy.max_concurrency``
    children (or plans) run at once, and further calls wait their turn.
    """

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy()
        self._slots = Slots(self.policy.max_concurrency)
        self._lock = threading.Lock()
        self._spawned = 0
        self._files: OrderedDict[tuple[str, int, int], CommandHandle] = OrderedDict()

    @property
    def spawned(self) -> int:
        """Launches attempted (a failed launch counts), for monitoring."""
        return self._spawned

    def _count_spawn(self) -> None:
        with self._lock:
            self._spawned += 1

    def _prepare(self, handle: HandleSource) -> CommandHandle:
        """A loaded handle. Files are cached by path, modification time and size;
        a dict is compiled on every call (load it once with
        :meth:`CommandHandle.load` to avoid that)."""
        if isinstance(handle, CommandHandle):
            return handle
        if isinstance(handle, dict):
            return CommandHandle.load(handle)
        path = os.fspath(handle)
        try:
            info = os.stat(path)
        except OSError:
            return CommandHandle.load(path)  # load() raises the refusal that says why
        key = (os.path.abspath(path), info.st_mtime_ns, info.st_size)
        with self._lock:
            cached = self._files.get(key)
            if cached is not None:
                self._files.move_to_end(key)
                return cached
        loaded = CommandHandle.load(path)
        with self._lock:
            self._files[key] = loaded
            while len(self._files) > _CACHED_FILES:
                self._files.popitem(last=False)
        return loaded

    @staticmethod
    def _shape(handle: CommandHandle, result: CommandResult) -> CommandResult:
        if not handle.has_result_template:
            return result
        try:
            view = handle.shape_result(result.to_json())
        except HandleError as exc:  # the program ran: its result is not lost
            raise AfterRunError(exc, result) from None
        return replace(result, view=view)

    # -- handles -------------------------------------------------------------

    async def call(self, handle: HandleSource, args: object = None) -> CommandResult:
        """Validate ``args``, evaluate the handle, run the command, return the result.

        Works under trio and under asyncio. Raises a
        :class:`~command_handle.errors.HandleError` (and spawns nothing) when a
        check fails; a non-zero exit, a signal or a timeout is a result.
        Cancelling the caller kills the child's process group before returning.
        """
        handle = self._prepare(handle)
        invocation = handle.render(args, self.policy)
        return self._shape(handle, await self._run(invocation, None, None, rendered_now=True))

    async def call_asyncio(self, handle: HandleSource, args: object = None) -> CommandResult:
        """The same as :meth:`call`, which is native under asyncio; kept for callers
        written against earlier versions."""
        return await self.call(handle, args)

    def call_sync(self, handle: HandleSource, args: object = None) -> CommandResult:
        """Blocking form of :meth:`call`, for threads: no event loop is started.
        Ctrl-C (KeyboardInterrupt) kills the child's group, then propagates."""
        handle = self._prepare(handle)
        invocation = handle.render(args, self.policy)
        return self._shape(handle, self._run_sync(invocation, None, rendered_now=True))

    def _check_again(self, invocation: Invocation, rendered_now: bool, waited: bool) -> None:
        """The program's checks, repeated once the slot is ours, just before the
        launch: a link swapped while the call waited is caught here. Not repeated
        when this call rendered the invocation and found a slot free, microseconds
        after the same checks."""
        if waited or not rendered_now:
            check_program(invocation.argv[0], self.policy, "/command")

    async def run(
        self,
        invocation: Invocation,
        on_chunk: ChunkCallback | None = None,
        *,
        on_started: Callable[[int], None] | None = None,
    ) -> CommandResult:
        """Run an already validated :class:`~command_handle.handle.Invocation`.

        ``on_started`` is called with the child's pid once it runs (it must not
        raise)."""
        return await self._run(invocation, on_chunk, on_started, rendered_now=False)

    async def _run(
        self,
        invocation: Invocation,
        on_chunk: ChunkCallback | None,
        on_started: Callable[[int], None] | None,
        *,
        rendered_now: bool,
    ) -> CommandResult:
        profile = profile_for(self.policy)  # a sandbox this kernel lacks: refused here
        waited = await self._slots.acquire()
        try:
            self._check_again(invocation, rendered_now, waited)
            if profile is None:
                return await run_invocation(
                    invocation, on_chunk, self._count_spawn, None, on_started
                )
            async with call_tmpdir_async(profile) as tmpdir:
                return await run_invocation(
                    _with_tmpdir(invocation, tmpdir, profile),
                    on_chunk,
                    self._count_spawn,
                    spawner_for(profile),
                    on_started,
                )
        finally:
            self._slots.release()

    def run_sync(
        self, invocation: Invocation, *, on_started: Callable[[int], None] | None = None
    ) -> CommandResult:
        """Blocking form of :meth:`run`."""
        return self._run_sync(invocation, on_started, rendered_now=False)

    def _run_sync(
        self,
        invocation: Invocation,
        on_started: Callable[[int], None] | None,
        *,
        rendered_now: bool,
    ) -> CommandResult:
        profile = profile_for(self.policy)
        waited = self._slots.acquire_sync()
        try:
            self._check_again(invocation, rendered_now, waited)
            if profile is None:
                return run_invocation_sync(invocation, self._count_spawn, None, on_started)
            with call_tmpdir(profile) as tmpdir:
                return run_invocation_sync(
                    _with_tmpdir(invocation, tmpdir, profile),
                    self._count_spawn,
                    spawner_for(profile),
                    on_started,
                )
        finally:
            self._slots.release()

    @asynccontextmanager
    async def stream(self, handle: HandleSource, args: object = None) -> AsyncIterator[EventStream]:
        """Run the call in the background and receive its output as events::

            async with executor.stream(handle, args) as events:
                async for event in events:
                    ...  # Event("stdout", b"..."), ..., Event("exit", result=...)

        Works under trio and asyncio. Validation errors are raised on entry,
        before anything runs. Leaving the block early kills the child's group.
        """
        handle = self._prepare(handle)
        invocation = handle.render(args, self.policy)
        send, receive = anyio.create_memory_object_stream[Event](16)
        events = EventStream(receive)

        async def produce() -> None:
            async with send:

                async def forward(kind: str, chunk: bytes) -> None:
                    await send.send(Event(kind, chunk))

                try:
                    run = self._run(invocation, forward, None, rendered_now=True)
                    result = self._shape(handle, await run)
                except CommandHandleError as exc:
                    events._failure = exc
                    return
                await send.send(Event("exit", result=result))

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(produce)
                try:
                    async with receive:
                        yield events
                finally:
                    group.cancel_scope.cancel()
        except BaseExceptionGroup as grouped:
            raise _sole(grouped) from None

    # -- plans ---------------------------------------------------------------

    async def run_plan(
        self,
        plan: Plan,
        arguments: Mapping[str, str],
        variables: Mapping[str, str] | None = None,
        *,
        on_started: Callable[[int, str], None] | None = None,
    ) -> PlanResult:
        """Run a translated plan (``mode="utcp"``) with its placeholders' text values.

        Everything that can be checked is checked first, over the whole plan,
        and a failure raises a :class:`~command_handle.errors.HandleError`
        before anything runs: missing or oversized arguments, the environment
        (with ``variables`` substituted into the plan's values), the working
        directory, every literal program (not found, set-user-ID, not on the
        allowlist). What can only be known at run time (a program computed
        from a variable) and is refused then raises
        :class:`~command_handle.errors.AfterRunError` carrying the steps that
        ran. The whole plan holds one concurrency slot and shares ``policy.timeout``.
        ``on_started`` gets each child's pid and program once it runs.
        """
        prepared = prepare_plan(plan, arguments, variables or {}, self.policy)
        return await self.run_prepared_plan(prepared, on_started=on_started)

    async def run_prepared_plan(
        self,
        prepared: PreparedPlan,
        *,
        on_started: Callable[[int, str], None] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> PlanResult:
        """Run a plan that :func:`prepare_plan` checked (under this executor's policy).
        ``on_chunk`` receives what the steps' programs write as it arrives."""
        profile = profile_for(self.policy)
        await self._slots.acquire()
        try:
            async with call_tmpdir_async(profile) as tmpdir:
                return await _run_plan()(
                    *self._plan_run(prepared, tmpdir, profile),
                    on_started=on_started,
                    on_chunk=on_chunk,
                )
        finally:
            self._slots.release()

    def _plan_run(
        self, prepared: PreparedPlan, tmpdir: str | None, profile: SandboxProfile | None
    ) -> tuple[PreparedPlan, Callable[[], None], Spawner | None, SandboxProfile | None]:
        """The arguments of the interpreter's ``run_plan`` for one call."""
        spawner = spawner_for(profile) if profile else None
        return _plan_with_tmpdir(prepared, tmpdir), self._count_spawn, spawner, profile

    def run_plan_sync(
        self,
        plan: Plan,
        arguments: Mapping[str, str],
        variables: Mapping[str, str] | None = None,
    ) -> PlanResult:
        """Blocking form of :meth:`run_plan`. A plan's pipelines run concurrently,
        so this runs an asyncio loop for the call's duration."""
        prepared = prepare_plan(plan, arguments, variables or {}, self.policy)
        return self.run_prepared_plan_sync(prepared)

    def run_prepared_plan_sync(
        self, prepared: PreparedPlan, *, on_started: Callable[[int, str], None] | None = None
    ) -> PlanResult:
        """Blocking form of :meth:`run_prepared_plan`."""
        profile = profile_for(self.policy)
        self._slots.acquire_sync()
        try:
            with call_tmpdir(profile) as tmpdir:
                run = _run_plan()
                args = self._plan_run(prepared, tmpdir, profile)
                return anyio.run(lambda: run(*args, on_started=on_started))
        finally:
            self._slots.release()

    # -- approval --------------------------------------------------------------

    def describe(self, invocation: Invocation) -> dict[str, Any]:
        """What ``invocation`` will do under this executor's policy, as JSON: the
        plan an approver sees. :func:`plan_hash` of it is stable across renderings."""
        return describe_invocation(invocation, self.policy)


PlanRunner = Callable[..., Awaitable[PlanResult]]


def _run_plan() -> PlanRunner:
    """The plan interpreter, loaded with the first plan rather than at import."""
    from ._interpreter import run_plan

    return run_plan


def _with_tmpdir(
    invocation: Invocation, tmpdir: str | None, profile: SandboxProfile | None = None
) -> Invocation:
    if tmpdir is None:
        return invocation
    invocation = replace(invocation, env={**invocation.env, "TMPDIR": tmpdir})
    if profile is not None and profile.backend == "bubblewrap":
        invocation = replace(
            invocation, bubblewrap=bubblewrap.prefix(profile, invocation.cwd, tmpdir)
        )
    return invocation


def _plan_with_tmpdir(prepared: PreparedPlan, tmpdir: str | None) -> PreparedPlan:
    if tmpdir is None:
        return prepared
    return replace(prepared, env={**prepared.env, "TMPDIR": tmpdir})


def _sole(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception inside ``group`` (nested groups unwrapped), else the group."""
    leaves: list[BaseException] = []

    def collect(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                collect(inner)
        else:
            leaves.append(exc)

    collect(group)
    return leaves[0] if len(leaves) == 1 else group
