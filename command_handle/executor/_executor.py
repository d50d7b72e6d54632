"""The Executor: runs prepared calls under a Policy.

Every front end turns its document into one :class:`~command_handle.call.PreparedCall`;
:meth:`Executor.run`, :meth:`Executor.run_sync` and :meth:`Executor.stream`
run that one type, whatever produced it, so the slot, the re-check, the
sandbox, the TMPDIR and the result are the same code for every tool.
``call``, ``call_sync`` and ``stream(handle, args)`` are conveniences that
render a Command Handle first.

One Executor serves any mix of callers at once: trio tasks, asyncio tasks and
plain threads. The async methods await natively under trio and under asyncio;
the sync ones block the calling thread. The concurrency limit is shared by all
of them. Only the waiting differs between these paths (see ``_drive``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

import anyio
import anyio.to_thread

from .._json import cache_key
from .._loops import run_to_completion
from ..call import CommandResult, Invocation, PlanResult, PreparedCall, Terminal
from ..errors import AfterRunError, CommandHandleError, HandleError, PolicyError, ProcessError
from ..handle import CommandHandle
from ..policy import Policy
from . import _bubblewrap as bubblewrap
from ._call_plan import describe
from ._drive import ChunkCallback, SyncChunkCallback
from ._ki import held, open_chunk, open_started, protect
from ._landlock import SandboxProfile
from ._process import launch_error, run_invocation, run_invocation_sync
from ._sandbox import call_tmpdir, call_tmpdir_async, profile_for, spawner_for
from ._slots import Claim, Slots
from ._spawn import Spawner, launch_async, launch_sync

if TYPE_CHECKING:
    from ._session import Process, ProcessRun

__all__ = ["ANY_OWNER", "Event", "EventStream", "Executor", "HandleSource", "OnStarted"]

HandleSource = CommandHandle | dict[str, Any] | str | os.PathLike[str]
# Called with each child's pid and program once it runs; it must not raise.
OnStarted = Callable[[int, str], None]
R = TypeVar("R", CommandResult, PlanResult)
K = TypeVar("K")
_CACHED_FILES = 256  # handles loaded from files, and from dicts, each
KEEP_BWRAP_PARENT = True  # (a test turns it off to see the failure it prevents)
_KEPT_ENDED = 64  # ended processes whose last output nobody read, kept per executor
ANY_OWNER: Any = object()  # processes(owner=ANY_OWNER): whoever started them
_EXECUTORS: weakref.WeakSet[Executor] = weakref.WeakSet()


@atexit.register
def _stop_every_process() -> None:
    """At the interpreter's exit, no process started here runs on (they lead
    sessions of their own, so nothing else would end them)."""
    for executor in list(_EXECUTORS):
        executor.stop_processes(reason="close")


@dataclass(frozen=True)
class Event:
    """A streaming event: ``kind`` is ``"stdout"`` or ``"stderr"`` with ``data``
    (raw bytes as they arrived), or ``"exit"`` with the final ``result``."""

    kind: str
    data: bytes = b""
    result: CommandResult | PlanResult | None = None


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
    """Runs prepared calls. One Executor serves many concurrent calls, from trio,
    asyncio and threads alike; at most ``policy.max_concurrency`` children (or
    plans) run at once, and further calls wait their turn.
    """

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy()
        self._slots = Slots(self.policy.max_concurrency)
        self._lock = threading.Lock()
        self._spawned = 0
        self._files: OrderedDict[tuple[str, int, int], CommandHandle] = OrderedDict()
        self._dicts: OrderedDict[str, CommandHandle] = OrderedDict()
        self._processes: dict[str, Process] = {}
        _EXECUTORS.add(self)

    def with_policy(self, policy: Policy) -> Executor:
        """An Executor that runs calls under ``policy`` (another workspace, say)
        but shares this one's limits: its concurrency slots and its processes,
        which either lists, stops and counts against ``max_sessions`` and
        ``max_sessions_per_owner``. A server that makes one per client workspace
        thus keeps one bound on children and processes, not one per workspace."""
        executor = Executor(policy)
        executor._slots = self._slots
        executor._lock = self._lock
        executor._processes = self._processes
        return executor

    @property
    def spawned(self) -> int:
        """Launches attempted (a failed launch counts), for monitoring."""
        return self._spawned

    def _count_spawn(self) -> None:
        with self._lock:
            self._spawned += 1

    def _load(self, handle: HandleSource) -> CommandHandle:
        """A loaded handle. Files are cached by path, modification time and size;
        dicts by their JSON text (a handle compiled from its own copy,
        so changing the dict later changes nothing cached)."""
        if isinstance(handle, CommandHandle):
            return handle
        if isinstance(handle, dict):
            text = cache_key(handle)
            if text is None:  # not plain JSON (a tuple, say): compiled as it is
                return CommandHandle.load(handle)
            return self._cached(self._dicts, text, lambda: CommandHandle.load(json.loads(text)))
        path = os.fspath(handle)
        try:
            info = os.stat(path)
        except OSError:
            return CommandHandle.load(path)  # load() raises the refusal that says why
        key = (os.path.abspath(path), info.st_mtime_ns, info.st_size)
        return self._cached(self._files, key, lambda: CommandHandle.load(path))

    def _cached(
        self, cache: OrderedDict[K, CommandHandle], key: K, load: Callable[[], CommandHandle]
    ) -> CommandHandle:
        with self._lock:
            cached = cache.get(key)
            if cached is not None:
                cache.move_to_end(key)
                return cached
        loaded = load()
        with self._lock:
            cache[key] = loaded
            while len(cache) > _CACHED_FILES:
                cache.popitem(last=False)
        return loaded

    def prepare(self, handle: HandleSource, args: object = None) -> PreparedCall[CommandResult]:
        """Validate ``args`` and render ``handle`` under this executor's policy,
        without running anything. Raises a :class:`~command_handle.errors.HandleError`."""
        return self._load(handle).prepare(args, self.policy)

    @staticmethod
    def _shape(handle: CommandHandle, result: CommandResult) -> CommandResult:
        if not handle.has_result_template:
            return result
        try:
            view = handle.shape_result(result.to_json())
        except HandleError as exc:  # the program ran: its result is not lost
            raise AfterRunError(exc, result) from None
        return replace(result, view=view)

    # -- a Command Handle, rendered here --------------------------------------

    async def call(self, handle: HandleSource, args: object = None) -> CommandResult:
        """Validate ``args``, evaluate the handle, run the command, return the result.

        Works under trio and under asyncio. Raises a
        :class:`~command_handle.errors.HandleError` (and spawns nothing) when a
        check fails; a non-zero exit, a signal or a timeout is a result.
        Cancelling the caller kills the child's process group before returning.
        """
        loaded = self._load(handle)
        prepared = loaded.prepare(args, self.policy)
        result = await self._run(prepared, None, None, fresh=True)
        return self._shape(loaded, cast(CommandResult, result))

    async def call_asyncio(self, handle: HandleSource, args: object = None) -> CommandResult:
        """The same as :meth:`call`, which is native under asyncio; kept for callers
        written against earlier versions."""
        return await self.call(handle, args)

    def call_sync(self, handle: HandleSource, args: object = None) -> CommandResult:
        """Blocking form of :meth:`call`, for threads: no event loop is started.
        Ctrl-C (KeyboardInterrupt) kills the child's group, then propagates."""
        loaded = self._load(handle)
        prepared = loaded.prepare(args, self.policy)
        result = self._run_sync(prepared, None, None, fresh=True)
        return self._shape(loaded, cast(CommandResult, result))

    # -- the one run path --------------------------------------------------------

    def _accept(self, prepared: PreparedCall[R] | Invocation) -> PreparedCall[Any]:
        """``prepared`` as a call of this executor's policy. A bare Invocation (one
        rendered elsewhere, after an approval say) must have been checked under
        an equal Policy, or, built by hand, carry this policy's limits."""
        call: PreparedCall[Any]
        if isinstance(prepared, Invocation):
            call = PreparedCall.command(prepared, self.policy)
        else:
            call = prepared
            if call.policy is not self.policy and call.policy != self.policy:
                raise PolicyError(
                    f"the call to {call.tool!r} was prepared under a different Policy "
                    "than this executor's; prepare it with this executor's policy"
                )
        invocation = call.invocation
        problem = None if invocation is None else invocation.policy_problem(self.policy)
        if problem is not None:
            raise PolicyError(
                f"the call to {call.tool!r} cannot run on this executor: {problem}; "
                "render it with this executor's policy"
            )
        return call

    @overload
    async def run(
        self,
        prepared: Invocation,
        on_chunk: ChunkCallback | None = None,
        *,
        on_started: OnStarted | None = None,
    ) -> CommandResult: ...

    @overload
    async def run(
        self,
        prepared: PreparedCall[R],
        on_chunk: ChunkCallback | None = None,
        *,
        on_started: OnStarted | None = None,
    ) -> R: ...

    async def run(
        self,
        prepared: PreparedCall[Any] | Invocation,
        on_chunk: ChunkCallback | None = None,
        *,
        on_started: OnStarted | None = None,
    ) -> CommandResult | PlanResult:
        """Run a prepared call (trio or asyncio) and return its result: a
        :class:`CommandResult` for a command, a :class:`PlanResult` for a plan.

        The program and the handle's ``paths`` are checked again once the call
        holds its slot. ``on_chunk(stream, data)`` is awaited with the output as
        it arrives; ``on_started(pid, program)`` is called once each child runs.
        A refusal at launch raises a :class:`~command_handle.errors.HandleError`;
        one after a plan's earlier steps ran raises
        :class:`~command_handle.errors.AfterRunError` carrying them.
        """
        # The caller's callbacks stay open to Ctrl-C inside the held call (see _ki).
        return await self._run(
            self._accept(prepared), open_chunk(on_chunk), open_started(on_started), fresh=False
        )

    @held
    async def _run(
        self,
        prepared: PreparedCall[Any],
        on_chunk: ChunkCallback | None,
        on_started: OnStarted | None,
        *,
        fresh: bool,
    ) -> CommandResult | PlanResult:
        protect()  # from here a Ctrl-C under trio waits for a checkpoint (see _ki)
        profile = profile_for(self.policy)  # a sandbox this kernel lacks: refused here
        waited = await self._slots.acquire()
        try:
            # Repeated once the slot is ours: a link swapped while the call waited
            # is caught here. Not when this call prepared it and found a slot free,
            # microseconds after the same checks.
            if waited or not fresh:
                prepared.recheck()
            if profile is None:  # no TMPDIR to make: no context manager on every call
                return await self._run_in(prepared, None, None, on_chunk, on_started)
            async with call_tmpdir_async(profile) as tmpdir:
                return await self._run_in(prepared, tmpdir, profile, on_chunk, on_started)
        finally:
            self._slots.release()

    async def _run_in(
        self,
        prepared: PreparedCall[Any],
        tmpdir: str | None,
        profile: SandboxProfile | None,
        on_chunk: ChunkCallback | None,
        on_started: OnStarted | None,
    ) -> CommandResult | PlanResult:
        """The call, holding its slot, with its TMPDIR when confined."""
        spawner = spawner_for(self.policy, profile, tmpdir)
        if prepared.kind == "plan":
            return await _run_plan()(
                prepared,
                _plan_with_tmpdir(prepared, tmpdir),
                self._count_spawn,
                spawner,
                profile,
                on_started,
                on_chunk,
            )
        assert prepared.invocation is not None
        result = await run_invocation(
            _with_tmpdir(prepared.invocation, tmpdir, profile),
            on_chunk,
            self._count_spawn,
            spawner,
            _with_program(on_started, prepared.program),
        )
        return PlanResult.one_step(result) if prepared.kind == "one-step" else result

    @overload
    def run_sync(
        self,
        prepared: Invocation,
        on_chunk: SyncChunkCallback | None = None,
        *,
        on_started: OnStarted | None = None,
    ) -> CommandResult: ...

    @overload
    def run_sync(
        self,
        prepared: PreparedCall[R],
        on_chunk: SyncChunkCallback | None = None,
        *,
        on_started: OnStarted | None = None,
    ) -> R: ...

    def run_sync(
        self,
        prepared: PreparedCall[Any] | Invocation,
        on_chunk: SyncChunkCallback | None = None,
        *,
        on_started: OnStarted | None = None,
    ) -> CommandResult | PlanResult:
        """Blocking form of :meth:`run`, for threads; ``on_chunk(stream, data)`` is
        called in this thread as output arrives. A command runs with no event
        loop; a plan's pipelines run concurrently, on a private event loop in
        this thread for the call's duration. Ctrl-C kills what runs, then propagates."""
        return self._run_sync(self._accept(prepared), on_chunk, on_started, fresh=False)

    def _run_sync(
        self,
        prepared: PreparedCall[Any],
        on_chunk: SyncChunkCallback | None,
        on_started: OnStarted | None,
        *,
        fresh: bool,
    ) -> CommandResult | PlanResult:
        if prepared.kind == "plan":
            return _run_plan_sync(self, prepared, on_chunk, on_started)
        profile = profile_for(self.policy)
        claim = Claim()
        try:
            waited = self._slots.acquire_sync(claim)
            if waited or not fresh:
                prepared.recheck()
            assert prepared.invocation is not None
            if profile is None:  # no TMPDIR to make: no context manager on every call
                result = run_invocation_sync(
                    prepared.invocation,
                    self._count_spawn,
                    spawner_for(self.policy, None, None),
                    _with_program(on_started, prepared.program),
                    on_chunk,
                )
            else:
                with call_tmpdir(profile) as tmpdir:
                    result = run_invocation_sync(
                        _with_tmpdir(prepared.invocation, tmpdir, profile),
                        self._count_spawn,
                        spawner_for(self.policy, profile, tmpdir),
                        _with_program(on_started, prepared.program),
                        on_chunk,
                    )
        finally:
            self._slots.release_claim(claim)
        return PlanResult.one_step(result) if prepared.kind == "one-step" else result

    @asynccontextmanager
    async def stream(
        self, handle: HandleSource | PreparedCall[Any] | Invocation, args: object = None
    ) -> AsyncIterator[EventStream]:
        """Run a call in the background and receive its output as events::

            async with executor.stream(handle, args) as events:
                async for event in events:
                    ...  # Event("stdout", b"..."), ..., Event("exit", result=...)

        ``handle`` is a Command Handle (rendered here with ``args``), a
        prepared call or an Invocation. Works under trio and asyncio. Validation errors are
        raised on entry, before anything runs. Leaving the block early kills
        the child's group.
        """
        loaded: CommandHandle | None = None
        if isinstance(handle, (PreparedCall, Invocation)):
            prepared, fresh = self._accept(handle), False
        else:
            loaded = self._load(handle)
            prepared, fresh = loaded.prepare(args, self.policy), True
        send, receive = anyio.create_memory_object_stream[Event](16)
        events = EventStream(receive)

        async def produce() -> None:
            async with send:

                async def forward(kind: str, chunk: bytes) -> None:
                    await send.send(Event(kind, chunk))

                try:
                    result = await self._run(prepared, forward, None, fresh=fresh)
                    if loaded is not None:
                        assert isinstance(result, CommandResult)
                        result = self._shape(loaded, result)
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

    # -- processes that outlive their call ----------------------------------------

    def start_sync(
        self,
        prepared: PreparedCall[Any] | Invocation,
        *,
        owner: object = None,
        lifetime: float | None = None,
        terminal: Terminal | None = None,
        ready: str | None = None,
    ) -> Process:
        """Start a prepared command and return it running, as a :class:`Process`
        to read, write, wait for and stop later, from any thread or event loop.

        It is confined, limited and killed as any call (its TMPDIR lasts as long
        as it does), but its ``timeout`` does not apply: it runs until it exits,
        is stopped, reaches ``lifetime`` seconds (capped by the Policy's
        ``session_lifetime``) or stays unread and unwritten for the Policy's
        ``session_idle`` seconds. ``terminal`` runs it on a pseudo-terminal of
        that type and size; ``ready`` is a regular expression that
        :meth:`Process.wait_ready_sync` waits for in its output. ``owner``
        (compared with ``==``) counts against ``max_sessions_per_owner``.
        Raises a :class:`~command_handle.errors.HandleError` (nothing started)
        when a check or the launch fails, and a
        :class:`~command_handle.errors.ProcessError` when a limit is reached.
        """
        process, run, cleanup, spawner = self._process_for(
            prepared, owner, lifetime, terminal, ready
        )
        try:
            self._count_spawn()
            child = launch_sync(run.launch, run.handle_run.invocation.no_new_privs, spawner)
        except OSError as exc:
            self._launch_failed(process, run, cleanup)
            raise launch_error(exc, run.handle_run.invocation.cwd, "/directory") from None
        except BaseException:
            self._launch_failed(process, run, cleanup)
            raise
        return self._begin(process, run, child, cleanup, spawner)

    @held
    async def start(
        self,
        prepared: PreparedCall[Any] | Invocation,
        *,
        owner: object = None,
        lifetime: float | None = None,
        terminal: Terminal | None = None,
        ready: str | None = None,
    ) -> Process:
        """:meth:`start_sync` under trio or asyncio."""
        protect()
        process, run, cleanup, spawner = self._process_for(
            prepared, owner, lifetime, terminal, ready
        )
        try:
            self._count_spawn()
            no_new_privs = run.handle_run.invocation.no_new_privs
            child = await launch_async(run.launch, no_new_privs, spawner)
        except OSError as exc:
            self._launch_failed(process, run, cleanup)
            raise launch_error(exc, run.handle_run.invocation.cwd, "/directory") from None
        except BaseException:
            self._launch_failed(process, run, cleanup)
            raise
        return self._begin(process, run, child, cleanup, spawner)

    def _process_for(
        self,
        prepared: PreparedCall[Any] | Invocation,
        owner: object,
        lifetime: float | None,
        terminal: Terminal | None,
        ready: str | None,
    ) -> tuple[Process, ProcessRun, ExitStack, Spawner | None]:
        """A process reserved under the limits, its TMPDIR and its pipes: all but the launch."""
        from ._session import Process, ProcessRun

        call = self._accept(prepared)
        if call.kind != "command" or call.invocation is None:
            raise PolicyError(
                f"the call to {call.tool!r} is a plan; only a single command can outlive its call"
            )
        policy = self.policy
        profile = profile_for(policy)
        call.recheck()
        invocation = call.invocation
        if terminal is not None:
            invocation = replace(invocation, env={**invocation.env, "TERM": terminal.term})
        process = Process(
            invocation,
            tool=call.tool,
            owner=owner,
            lifetime=min(lifetime or policy.session_lifetime, policy.session_lifetime),
            idle=policy.session_idle,
            output_limit=min(invocation.max_output, policy.session_output),
            terminal=terminal,
            ready=None if ready is None else re.compile(ready),
        )
        self._reserve(process)
        cleanup = ExitStack()
        try:
            tmpdir = cleanup.enter_context(call_tmpdir(profile))
            invocation = _with_tmpdir(invocation, tmpdir, profile)
            run = ProcessRun(invocation, process)
            run.open_pipes()
        except BaseException:
            self._release(process)
            cleanup.close()
            raise
        spawner = spawner_for(policy, profile, tmpdir)
        if invocation.bubblewrap and KEEP_BWRAP_PARENT:
            from ._session import Keeper

            spawner = Keeper(invocation.no_new_privs)
        return process, run, cleanup, spawner

    def _reserve(self, process: Process) -> None:
        policy = self.policy
        with self._lock:
            live = [each for each in self._processes.values() if each.running]
            if len(live) >= policy.max_sessions:
                raise ProcessError(
                    f"{len(live)} processes are running, the most this application allows "
                    f"(max_sessions); stop one with process_stop first. Nothing was started."
                )
            own = sum(1 for each in live if each.owner == process.owner)
            if own >= policy.max_sessions_per_owner:
                raise ProcessError(
                    f"you have {own} processes running, the most allowed per caller "
                    "(max_sessions_per_owner); stop one with process_stop first. "
                    "Nothing was started."
                )
            self._processes[process.id] = process

    def _release(self, process: Process) -> None:
        with self._lock:
            self._processes.pop(process.id, None)

    def _launch_failed(self, process: Process, run: ProcessRun, cleanup: ExitStack) -> None:
        run.close_all()
        self._release(process)
        cleanup.close()

    def _begin(
        self,
        process: Process,
        run: ProcessRun,
        child: Any,
        cleanup: ExitStack,
        spawner: Spawner | None,
    ) -> Process:
        process._begin(run, child, cleanup, self._ended)
        from ._session import Keeper

        if isinstance(spawner, Keeper):
            spawner.keep(process)  # bwrap dies with the thread that started it
        stdin = run.handle_run.invocation.stdin
        if stdin:  # the handle's own input first; the process's input stays open
            with contextlib.suppress(ProcessError):  # it ended, or does not read
                process.write_sync(stdin)
        return process

    def _ended(self, process: Process) -> None:
        """Keep a few ended processes whose last output nobody has read yet."""
        with self._lock:
            ended = [each for each in self._processes.values() if not each.running]
            for each in ended[: max(0, len(ended) - _KEPT_ENDED)]:
                del self._processes[each.id]

    def process(self, process_id: str) -> Process | None:
        """The process of that id, running or ended and not yet forgotten."""
        with self._lock:
            return self._processes.get(process_id)

    def processes(self, owner: object = ANY_OWNER) -> list[Process]:
        """The processes started here (of ``owner``, when given), oldest first."""
        with self._lock:
            every = list(self._processes.values())
        if owner is ANY_OWNER:
            return every
        return [each for each in every if each.owner == owner]

    def forget(self, process: Process) -> None:
        """Drop an ended process whose last output was read."""
        if not process.running:
            self._release(process)

    def stop_processes(self, owner: object = ANY_OWNER, reason: str = "close") -> int:
        """Stop every running process (of ``owner``, when given) and wait until
        they and their groups are gone; returns how many were stopped."""
        running = [each for each in self.processes(owner) if each.running]
        for each in running:
            each.request_stop(reason)
        for each in running:
            each.wait_sync()
        return len(running)

    async def stop_processes_async(self, owner: object = ANY_OWNER, reason: str = "close") -> int:
        """:meth:`stop_processes` under trio or asyncio; it finishes even when
        the caller is cancelled."""
        stopped = 0
        with anyio.CancelScope(shield=True):
            stopped = await anyio.to_thread.run_sync(partial(self.stop_processes, owner, reason))
        return stopped

    # -- approval --------------------------------------------------------------

    def describe(self, prepared: PreparedCall[Any] | Invocation) -> dict[str, Any]:
        """What the call will do under this executor's policy, as JSON: the plan
        an approver sees. :func:`~command_handle.call.plan_hash` of it is stable
        across renderings."""
        return describe(self._accept(prepared))


PlanRunner = Callable[..., Awaitable[PlanResult]]


def _run_plan() -> PlanRunner:
    """The plan interpreter, loaded with the first plan rather than at import."""
    from ._interpreter import run_plan

    return run_plan


def _run_plan_sync(
    executor: Executor,
    prepared: PreparedCall[Any],
    on_chunk: SyncChunkCallback | None,
    on_started: OnStarted | None,
) -> PlanResult:
    """A plan for a sync caller: its pipelines need a scheduler, so it runs on a
    private event loop in the calling thread (docs/decisions.md), or in a helper
    thread when the calling thread already runs one."""
    forward: ChunkCallback | None = None
    if on_chunk is not None:
        chunk_callback = on_chunk

        async def forward(stream: str, data: bytes) -> None:
            chunk_callback(stream, data)

    async def run() -> PlanResult:
        result = await executor._run(prepared, forward, on_started, fresh=False)
        return cast(PlanResult, result)

    return run_to_completion(run)


def _with_program(on_started: OnStarted | None, program: str) -> Callable[[int], None] | None:
    if on_started is None:
        return None
    return lambda pid: on_started(pid, program)


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


def _plan_with_tmpdir(prepared: PreparedCall[Any], tmpdir: str | None) -> dict[str, str]:
    """The plan's starting environment, with the call's TMPDIR when confined."""
    assert prepared.plan is not None
    if tmpdir is None:
        return prepared.plan.env
    return {**prepared.plan.env, "TMPDIR": tmpdir}


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
