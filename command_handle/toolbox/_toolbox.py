"""The Toolbox: tools loaded from files, described for any LLM, called by name.

A call goes through one flow, whichever way it is awaited:

1. find the tool; parse arguments given as JSON text; drop the nulls that
   stand for absent optional properties (OpenAI strict mode);
2. resolve the Credential Object, when the tool needs one, with this call's
   principal (nothing is cached);
3. validate and render; a refusal becomes an ``is_error`` result whose text
   names the parameter, and nothing is spawned;
4. describe the plan and hash it; ask the ``approve`` hook, if any;
5. run it, and shape the result for the model.

The flow is a generator that yields what it needs done (call a hook, run the
command); :meth:`Toolbox.call` answers under trio or asyncio, and
:meth:`Toolbox.call_sync` in the calling thread, so the three share one
implementation, as the executor's drivers do.
"""

from __future__ import annotations

import codecs
import dataclasses
import inspect
import os
import threading
import uuid
from collections.abc import Awaitable, Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import anyio

from .. import _json, _jsonschema
from .._loops import run_to_completion
from .._secrets import MIN_REDACTED, redact, redact_cut, secret_values
from ..call import CommandResult, PlanResult, Session, Terminal, plan_hash
from ..errors import AfterRunError, CommandHandleError, HandleError, ProcessError
from ..handle import MAX_ARGUMENT_DEPTH, CommandHandle, check_arguments
from ..policy import Policy
from ._arguments import after_run_message, drop_nulls, model_message
from ._calls import PreparedToolCall
from ._events import Emitter, EventSink
from ._formats import describe_tool
from ._load import ToolLoadError, load_tools
from ._printable import printable
from ._processes import (
    PROCESS_LIST,
    PROCESS_READ,
    PROCESS_STOP,
    PROCESS_WRITE,
    ProcessRecord,
    builtin_tools,
    list_view,
    output_view,
    unknown_process,
)
from ._result import ToolResult, command_content, shown_result
from ._tool import Tool
from ._variables import Variables, check_descriptions, discover

if TYPE_CHECKING:
    from ..executor import Executor, Process

__all__ = [
    "ApprovalRequest",
    "Approver",
    "CredentialResolver",
    "Denied",
    "ToolPreview",
    "Toolbox",
]

CredentialResolver = Callable[
    [Any, CommandHandle], Mapping[str, Any] | Awaitable[Mapping[str, Any]]
]


@dataclass(frozen=True)
class ApprovalRequest:
    """What the ``approve`` hook decides on: the fully rendered ``plan`` (program,
    argv, environment with credentials masked, cwd, stdin size and digest,
    limits, sandbox) and its ``plan_hash``, with the call's ``tool``,
    ``principal`` and ``arguments`` (after null removal). ``stdin`` is what the
    program will read, in full, and ``environment`` every variable it gets,
    each with only the credential masked (``********``), so a person approving
    an API call sees the endpoint and body the model chose (None and empty for
    a UTCP tool, whose commands are in ``plan``)."""

    tool: str
    call_id: str
    principal: Any
    arguments: Mapping[str, Any]
    plan: Mapping[str, Any]
    plan_hash: str
    summary: str = ""
    stdin: bytes | None = None
    environment: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Denied:
    """An ``approve`` hook's no, with the reason the model is told
    (``Denied("use the staging endpoint")``). It is false, as a plain no is."""

    reason: str

    def __bool__(self) -> bool:
        return False


Approver = Callable[[ApprovalRequest], bool | Denied | Awaitable[bool | Denied]]

DEFAULT_MAX_CONTENT = 30_000
ANY: Any = object()  # close(owner=ANY): every owner's processes
_BUILTINS = {tool.name: tool for tool in builtin_tools()}
_LISTED = 20  # tool names an "unknown tool" answer lists
_SUMMARY = 1000  # characters of a summary line


@dataclass(frozen=True)
class _Ask:
    """Call an application hook; its value may be awaitable."""

    hook: Callable[[], object]


@dataclass(frozen=True)
class _Run:
    call: PreparedToolCall
    emit: Emitter
    secrets: tuple[str, ...] = ()
    quiet: bool = False  # a bash tool's preview or error: its output is no call output
    subcommand: str = ""  # which one, in its events (an auditor must not read it as the run)


@dataclass(frozen=True)
class _Start:
    """Start the call's program as a process that may outlive the call."""

    call: PreparedToolCall
    emit: Emitter
    secrets: tuple[str, ...]
    session: Session
    owner: Any


OutputLine = Callable[[str, str], Awaitable[None]]
SyncOutputLine = Callable[[str, str], None]


class _Lines:
    """Output chunks to complete lines, with credential values redacted, for an
    ``on_output`` callback. A partial line waits for its end, so a secret split
    across chunks is still redacted. A line is redacted whole before it is cut
    to its last :data:`MAX_LINE` characters; a partial line longer than that
    keeps only its end (and as much again, so that a secret across the drop is
    seen whole), and its start is checked for the end of a secret. Chunks are
    decoded with the program's encoding (UTF-8 for binary output and plans):
    a secret is found in the text the program wrote, not in a misreading of it."""

    MAX_LINE = 4096

    def __init__(
        self,
        callback: OutputLine | None,
        secrets: tuple[str, ...],
        encoding: str = "utf-8",
        sync_callback: SyncOutputLine | None = None,
    ) -> None:
        self.callback = callback
        self.sync_callback = sync_callback
        # A line holds at most one line of a secret that spans several (a PEM
        # key): each of its lines is redacted as a secret of its own.
        parts = {
            part.rstrip("\r")
            for secret in secrets
            if "\n" in secret
            for part in secret.split("\n")
            if len(part.rstrip("\r")) >= MIN_REDACTED
        }
        self.secrets = tuple(sorted({*secrets, *parts}, key=len, reverse=True))
        self.codec = _text_codec(encoding)
        self.keep = self.MAX_LINE + max((len(secret) for secret in secrets), default=0)
        self.pending: dict[str, str] = {}
        self.dropped: set[str] = set()  # streams whose pending line lost its start
        self.decoders: dict[str, Any] = {}

    async def __call__(self, stream: str, chunk: bytes) -> None:
        assert self.callback is not None
        for line in self.lines(stream, chunk):
            await self.callback(stream, line)

    def feed(self, stream: str, chunk: bytes) -> None:
        """The same for a sync caller (``call_sync``), in its thread."""
        assert self.sync_callback is not None
        for line in self.lines(stream, chunk):
            self.sync_callback(stream, line)

    def lines(self, stream: str, chunk: bytes) -> list[str]:
        """The complete lines ``chunk`` ends, redacted and cut, as shown."""
        shown: list[str] = []
        decoder = self.decoders.get(stream)
        if decoder is None:
            decoder = self.decoders[stream] = self.codec.incrementaldecoder("replace")
        text = self.pending.get(stream, "") + decoder.decode(chunk)
        *lines, rest = text.split("\n")
        cut = stream in self.dropped
        for line in lines:
            shown.append(self._shown(line, cut))
            cut = False
        if len(rest) > self.keep:
            rest, cut = rest[-self.keep :], True
        self.pending[stream] = rest
        if cut:
            self.dropped.add(stream)
        else:
            self.dropped.discard(stream)
        return shown

    def _shown(self, line: str, cut: bool) -> str:
        """The line redacted, then cut to its last MAX_LINE characters."""
        line = redact_cut(line, self.secrets, cut_before=cut)
        if len(line) <= self.MAX_LINE:
            return line
        return redact_cut(line[-self.MAX_LINE :], self.secrets, cut_before=True)


def _text_codec(encoding: str) -> codecs.CodecInfo:
    """The codec of ``encoding`` when it decodes bytes to text, else UTF-8."""
    try:
        codec = codecs.lookup(encoding)
    except LookupError:  # "binary"
        return codecs.lookup("utf-8")
    return codec if getattr(codec, "_is_text_encoding", True) else codecs.lookup("utf-8")


@dataclass(frozen=True)
class ToolPreview:
    """What a call would run: the ``plan`` (credentials masked) and its
    ``plan_hash``; or, when it would be refused, ``error`` (the text the model
    would get) and no plan. ``summary`` is one line for a person: a bash
    tool's ``preview`` output, a command's argv, a plan's steps."""

    tool: str
    call_id: str
    plan: Mapping[str, Any] | None
    plan_hash: str | None
    error: str | None
    summary: str = ""


_Flow = Generator["_Ask | _Run | _Start", Any, "ToolResult | ToolPreview"]


class _Refusal(Exception):
    """Inside the flow: the call ends here with ``text`` for the model, and the
    audit event ``event`` with ``details``. Nothing ran."""

    def __init__(self, text: str, *, event: str = "refused", **details: Any) -> None:
        super().__init__(text)
        self.text = text
        self.event = event
        self.details = details


class _CallState:
    """One call's identity and what it learned on the way: the credential's
    secrets (redacted from everything shown) and the plan's hash."""

    __slots__ = ("call_id", "digest", "emit", "secrets", "tool")

    def __init__(self, tool: str, call_id: str, emit: Emitter) -> None:
        self.tool = tool
        self.call_id = call_id
        self.emit = emit
        self.secrets: tuple[str, ...] = ()
        self.digest: str | None = None

    def result(
        self,
        *,
        is_error: bool,
        content: str,
        structured: object = None,
        result: CommandResult | PlanResult | None = None,
    ) -> ToolResult:
        return ToolResult(
            is_error=is_error,
            content=content,
            structured=structured,
            result=result,
            tool=self.tool,
            call_id=self.call_id,
            plan_hash=self.digest,
        )


class Toolbox:
    """Tools by name: describe them for an LLM, call them with the model's arguments.

    Load with :meth:`load`. ``policy`` governs every call (one
    :class:`~command_handle.Executor` is shared by all, from trio, asyncio
    and threads). ``credentials(principal, handle)`` returns the Credential
    Object for a tool that declares ``security`` or reads ``$credential``;
    ``approve(request)`` returns whether a rendered call may run (only ``True``
    runs it; ``False``, a :class:`Denied` or any other answer does not); ``events``
    receives each :class:`AuditEvent`. Each hook may be sync or async.
    ``max_content`` bounds the default text shown to the model, per stream.

    UTCP templates read ``${NAME}`` in ``env_vars`` from ``variables`` and the
    dotenv ``variable_files`` (read at each call; the mapping wins over the
    files, an earlier file over a later one; a call's ``context`` over both),
    namespaced by manual as in UTCP. Never from the model or the host. The
    values of the names in ``secret_variables`` are redacted like credentials
    from everything shown.

    ``terminal`` is the pseudo-terminal (type and size) of tools whose
    ``session`` asks for one. When a tool has a ``session``, the Toolbox also
    holds the built-in ``process_read``, ``process_write``, ``process_stop``
    and ``process_list`` (docs/processes.md); :meth:`close` stops every
    process it started.
    """

    def __init__(
        self,
        tools: list[Tool],
        *,
        policy: Policy | None = None,
        credentials: CredentialResolver | None = None,
        approve: Approver | None = None,
        events: EventSink | None = None,
        max_content: int = DEFAULT_MAX_CONTENT,
        skipped: list[str] | None = None,
        tool_config: Mapping[str, Any] | None = None,
        variables: Mapping[str, str] | None = None,
        variable_files: Sequence[str | os.PathLike[str]] = (),
        secret_variables: Iterable[str] = (),
        terminal: Terminal | None = None,
    ) -> None:
        self._tools = {tool.name: tool for tool in tools}
        # UTCP's ``manual.tool`` spelling of a manual's tool finds it too, and is
        # its MCP name: two tools must not share it.
        self._aliases: dict[str, str] = {}
        for tool in tools:
            if tool.utcp_name is None:
                continue
            if tool.utcp_name in self._aliases:
                other = self._tools[self._aliases[tool.utcp_name]]
                raise ToolLoadError(
                    tool.source,
                    f"the tool {tool.utcp_name!r} is also defined in {other.source} "
                    "(manual names are made of letters, digits and _)",
                    "/name",
                )
            self._aliases[tool.utcp_name] = tool.name
        if len(self._tools) != len(tools):
            names = [tool.name for tool in tools]
            twice = next(tool for tool in tools if names.count(tool.name) > 1)
            raise ToolLoadError(
                twice.source, f"two tools have the same name {twice.name!r}", "/name"
            )
        self.policy = policy or Policy()
        self._executor: Executor | None = None
        self._executor_lock = threading.Lock()
        self._credentials = credentials
        self._approve = approve
        self._events = events
        self.max_content = max_content
        self.skipped = list(skipped or [])  # what was not loaded, with why
        # The application's configuration for bash tools (working_directory and
        # config_keys values); a call's context adds to it. Never the model's.
        self.tool_config = dict(tool_config or {})
        self._output_validators: dict[str, Any] = {}
        self._input_validators: dict[str, Any] = {}
        self._variables = {str(k): str(v) for k, v in (variables or {}).items()}
        self._manuals = frozenset(t.utcp_manual for t in tools if t.utcp_manual is not None)
        self.variable_files = tuple(os.fspath(path) for path in variable_files)
        self.secret_variables = frozenset(secret_variables)
        self.terminal = terminal or Terminal()
        # Shared with with_policy's Toolboxes, as their Executors share one table.
        self._records: dict[str, ProcessRecord] = {}
        self._builtins: dict[str, Tool] = {}
        if any(tool.session is not None for tool in tools):
            self._builtins = {tool.name: tool for tool in builtin_tools()}
            clash = next((tool for tool in tools if tool.name in self._builtins), None)
            if clash is not None:
                raise ToolLoadError(
                    clash.source,
                    f"the tool name {clash.name!r} is the built-in tool's that reads, writes "
                    "or stops the processes of tools with a session; rename the tool",
                    "/name",
                )
        for tool in tools:
            emit = Emitter(events, tool.name, "")
            emit("loaded", source=tool.source, kind=tool.kind)
            emit.settle_sync()

    @property
    def executor(self) -> Executor:
        """The Executor every call runs on, made on the first call: a server
        that has only listed its tools has not imported the executor."""
        executor = self._executor
        if executor is None:
            with self._executor_lock:  # two threads' first calls share one executor
                if self._executor is None:
                    from ..executor import Executor

                    self._executor = Executor(self.policy)
                executor = self._executor
        return executor

    @classmethod
    def load(
        cls,
        *paths: str | os.PathLike[str],
        policy: Policy | None = None,
        credentials: CredentialResolver | None = None,
        approve: Approver | None = None,
        events: EventSink | None = None,
        max_content: int = DEFAULT_MAX_CONTENT,
        allow_bash_tools: bool = False,
        tool_config: Mapping[str, Any] | None = None,
        plugin_cache: str | os.PathLike[str] | None = None,
        variables: Mapping[str, str] | None = None,
        variable_files: Sequence[str | os.PathLike[str]] = (),
        secret_variables: Iterable[str] = (),
        terminal: Terminal | None = None,
    ) -> Toolbox:
        """Load files and folders (recursively) of Command Handles, UTCP
        documents and bash tool plugins, recognised by their content. Raises
        :class:`~command_handle.toolbox.ToolLoadError` naming the file and the
        JSON Pointer; two tools with one name name both files.

        Bash tools load only with ``allow_bash_tools`` (or their config's
        ``plugin_policy``); ``tool_config`` is their configuration
        (``working_directory``, the ``config_keys`` values); ``plugin_cache``
        holds their schemas and git clones (default
        ``$XDG_CACHE_HOME/command-handle``). A UTCP client configuration's
        ``manual_call_templates`` are discovered now: their commands run under
        ``policy`` (its timeout) with ``variables``, and print the manuals."""
        resolver = Variables(variables, variable_files)
        tools, skipped = load_tools(
            paths,
            allow_bash_tools=allow_bash_tools,
            policy=policy,
            plugin_cache=plugin_cache,
            discover=partial(discover, policy or Policy(), resolver),
        )
        check_descriptions(tools, resolver, secret_variables)
        return cls(
            tools,
            policy=policy,
            credentials=credentials,
            approve=approve,
            events=events,
            max_content=max_content,
            skipped=skipped,
            tool_config=tool_config,
            variables=variables,
            variable_files=variable_files,
            secret_variables=secret_variables,
            terminal=terminal,
        )

    def with_policy(self, policy: Policy) -> Toolbox:
        """A Toolbox of the same tools and hooks under another Policy (an MCP
        client's workspace, say). It shares this one's limits and processes:
        its Executor counts children and processes with this one's
        (:meth:`Executor.with_policy <command_handle.Executor.with_policy>`),
        and a process either started is read, written, stopped and listed
        through either, so a client whose workspace changed still reaches
        the processes it started before. Closing this Toolbox closes it too."""
        box = Toolbox.__new__(Toolbox)
        box.__dict__.update(self.__dict__)  # the records and their lock are shared
        box.policy = policy
        box._executor = self.executor.with_policy(policy)
        return box

    @property
    def holds_processes(self) -> bool:
        """Whether a process it (or a Toolbox it shares them with) started is
        running or has output left to read."""
        return bool(self._records)

    # -- the collection ----------------------------------------------------------

    # The built-in process tools are among the tools when a tool has a session.

    def names(self) -> list[str]:
        return [*self._tools, *self._builtins]

    def __getitem__(self, name: str) -> Tool:
        """The tool ``name``; a UTCP manual's tool also as ``manual.tool``."""
        tool = self._tools.get(self._aliases.get(name, name))
        return self._builtins[name] if tool is None else tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools or name in self._aliases or name in self._builtins

    def __iter__(self) -> Iterator[Tool]:
        return iter([*self._tools.values(), *self._builtins.values()])

    def __len__(self) -> int:
        return len(self._tools) + len(self._builtins)

    def describe(self, format: str = "mcp") -> list[dict[str, Any]]:
        """The tool definitions in ``format``: ``"mcp"``, ``"openai"``,
        ``"openai-strict"``, ``"anthropic"`` or ``"tool-handle"``; the built-in
        process tools follow when a tool has a ``session``."""
        return [describe_tool(tool, format) for tool in self]

    # -- calling -----------------------------------------------------------------

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        principal: Any = None,
        *,
        context: Mapping[str, Any] | None = None,
        expect_plan: str | None = None,
        on_output: OutputLine | None = None,
        owner: Any = None,
    ) -> ToolResult:
        """Call the tool ``name`` with the model's ``arguments`` (an object, or its
        JSON text); under trio or asyncio. Every refusal, denial and failure is
        an ``is_error`` result the model can act on; only the application's own
        errors (an approve hook that raises) propagate. ``context`` holds the
        values ``$context`` reads, which the model never sees. With
        ``expect_plan`` (a hash from :meth:`preview`), the call runs only if
        it would still run exactly that plan. ``on_output(stream, line)`` is
        awaited with each complete line the program writes, credentials
        redacted (for a UTCP plan, what its programs and builtins such as
        ``echo`` write into its steps). A process a ``session`` tool leaves
        running belongs to ``owner`` (default: ``principal``)."""
        owner = principal if owner is None else owner
        if name in self._builtins and name not in self._tools:
            return await self._process_tool(name, arguments, owner)
        call = self._start(name)
        flow = self._flow(call, arguments, principal, context, expect_plan, owner=owner)
        result = await self._drive(flow, call, on_output)
        assert isinstance(result, ToolResult)
        return result

    def call_sync(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        principal: Any = None,
        *,
        context: Mapping[str, Any] | None = None,
        expect_plan: str | None = None,
        on_output: SyncOutputLine | None = None,
        owner: Any = None,
    ) -> ToolResult:
        """Blocking form of :meth:`call`, for threads; no event loop is started
        unless a hook is async (it is then awaited in a short asyncio run).
        ``on_output(stream, line)`` is called in this thread with each complete
        line, credentials redacted, as in :meth:`call`."""
        owner = principal if owner is None else owner
        if name in self._builtins and name not in self._tools:
            return self._process_tool_sync(name, arguments, owner)
        call = self._start(name)
        flow = self._flow(call, arguments, principal, context, expect_plan, owner=owner)
        result = self._drive_sync(flow, call, on_output)
        assert isinstance(result, ToolResult)
        return result

    async def preview(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        principal: Any = None,
        *,
        context: Mapping[str, Any] | None = None,
    ) -> ToolPreview:
        """What the call would run, without running it or asking the approve hook:
        the plan (credentials masked) and its hash, or the refusal. Pass the
        hash to ``call(..., expect_plan=...)`` to run exactly what was shown."""
        call = self._start(name)
        flow = self._flow(call, arguments, principal, context, preview=True)
        return _as_preview(await self._drive(flow, call))

    def preview_sync(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        principal: Any = None,
        *,
        context: Mapping[str, Any] | None = None,
    ) -> ToolPreview:
        """Blocking form of :meth:`preview`."""
        call = self._start(name)
        flow = self._flow(call, arguments, principal, context, preview=True)
        return _as_preview(self._drive_sync(flow, call))

    def _start(self, name: str) -> _CallState:
        call_id = uuid.uuid4().hex[:16]
        return _CallState(name, call_id, Emitter(self._events, name, call_id))

    async def _drive(
        self, flow: _Flow, call: _CallState, on_output: OutputLine | None = None
    ) -> ToolResult | ToolPreview:
        """Answer the flow's requests under trio or asyncio; an async events sink
        is awaited as the call goes, and before it returns."""
        try:
            request: _Ask | _Run | _Start = next(flow)
            while True:
                if isinstance(request, _Ask):
                    try:
                        answer = request.hook()
                        if inspect.isawaitable(answer):
                            answer = await answer
                    except Exception as exc:
                        request = flow.throw(exc)
                        continue
                elif isinstance(request, _Start):
                    try:
                        answer = await self._start_process(request)
                    except CommandHandleError as exc:  # refused at launch, or a limit
                        request = flow.throw(exc)
                        continue
                else:
                    try:
                        answer = await self._run(request, on_output)
                    except CommandHandleError as exc:  # refused at launch or mid-plan
                        request = flow.throw(exc)
                        continue
                await call.emit.settle()
                request = flow.send(answer)
        except StopIteration as done:
            outcome: ToolResult | ToolPreview = done.value
            return outcome
        finally:
            with anyio.CancelScope(shield=True):
                await call.emit.settle()

    async def _run(self, request: _Run, on_output: OutputLine | None) -> CommandResult | PlanResult:
        on_chunk = (
            None
            if on_output is None or request.quiet
            else _Lines(on_output, request.secrets, request.call.encoding)
        )
        try:
            return await request.call.run(_spawned(request.emit, request.subcommand), on_chunk)
        except anyio.get_cancelled_exc_class():
            request.emit("killed", reason="cancelled")
            raise

    def _drive_sync(
        self, flow: _Flow, call: _CallState, on_output: SyncOutputLine | None = None
    ) -> ToolResult | ToolPreview:
        """Answer the flow's requests in the calling thread."""
        try:
            request: _Ask | _Run | _Start = next(flow)
            while True:
                if isinstance(request, _Ask):
                    try:
                        answer = _settle(request.hook())
                    except Exception as exc:
                        request = flow.throw(exc)
                        continue
                elif isinstance(request, _Start):
                    try:
                        answer = self._start_process_sync(request)
                    except CommandHandleError as exc:  # refused at launch, or a limit
                        request = flow.throw(exc)
                        continue
                else:
                    try:
                        lines = None
                        if on_output is not None and not request.quiet:
                            lines = _Lines(
                                None, request.secrets, request.call.encoding, on_output
                            ).feed
                        answer = request.call.run_sync(
                            _spawned(request.emit, request.subcommand), lines
                        )
                    except CommandHandleError as exc:  # refused at launch or mid-plan
                        request = flow.throw(exc)
                        continue
                    except KeyboardInterrupt:
                        request.emit("killed", reason="interrupted")
                        raise
                request = flow.send(answer)
        except StopIteration as done:
            outcome: ToolResult | ToolPreview = done.value
            return outcome
        finally:
            call.emit.settle_sync()

    # -- the flow ----------------------------------------------------------------

    def _flow(
        self,
        call: _CallState,
        arguments: Mapping[str, Any] | str | None,
        principal: Any,
        context: Mapping[str, Any] | None,
        expect_plan: str | None = None,
        preview: bool = False,
        owner: Any = None,
    ) -> _Flow:
        """One call, from the model's arguments to its result. Every refusal on
        the way, before the run, at the launch or during a plan's later steps,
        becomes an ``is_error`` result here, in one place, with its event."""
        name = call.tool
        args: dict[str, Any] | None = None
        try:
            tool = self._tool(name)
            args = self._arguments(tool, arguments)
            credential = yield from self._credential(tool, principal, call)
            variables = self._utcp_variables(tool, context, call)
            prepared = self._prepare(tool, args, context, credential, variables, call.secrets)
            summary = ""
            if preview or expect_plan is not None or self._approve is not None:
                # The plan is described and hashed only when someone looks at it: it
                # is work (the sandbox profile, RFC 8785) that a plain call skips.
                call.digest = plan_hash(prepared.plan)
            if preview or self._approve is not None:
                summary = yield from self._summary(tool, args, context, credential, prepared, call)
                summary = printable(summary)
            if preview:
                return ToolPreview(name, call.call_id, prepared.plan, call.digest, None, summary)
            yield from self._clear(tool, args, principal, prepared, expect_plan, call, summary)
            if tool.bash_tool is not None and self._approve is not None:
                # The script may have been edited while the approver looked at its plan.
                tool.bash_tool.check_unchanged()
            if tool.session is not None and prepared.prepared.kind == "command":
                start = _Start(prepared, call.emit, call.secrets, tool.session, owner)
                process = yield start
                if process.running:
                    return self._process_started(process, call)
                ended = self._ended_in_call(process)  # within yield_after: a plain result
                _report(call.emit, ended)
                return self._outcome(tool, prepared, ended, call)
            ran = yield _Run(prepared, call.emit, call.secrets)
            _report(call.emit, ran)
            outcome = self._outcome(tool, prepared, ran, call)
            if tool.bash_tool is not None and isinstance(ran, CommandResult) and not ran.ok:
                message = yield from self._bash_error(
                    tool, args, context, credential, ran, prepared.timeout, call
                )
                if message:
                    outcome = dataclasses.replace(outcome, content=message)
            return outcome
        except _Refusal as refusal:
            call.emit(refusal.event, **refusal.details)
            return call.result(is_error=True, content=refusal.text)
        except ProcessError as exc:  # a limit on processes: nothing started
            call.emit("refused", reason=exc.message, error="ProcessError")
            return call.result(is_error=True, content=f"The call to `{name}` was refused: {exc}")
        except AfterRunError as exc:  # a plan's later step was refused: what ran is kept
            call.emit(
                "refused",
                reason=redact(exc.message, call.secrets),
                pointer=exc.pointer,
                error=type(exc.error).__name__,
                after_run=True,
            )
            ran = exc.result if isinstance(exc.result, (CommandResult, PlanResult)) else None
            shown = None if ran is None else shown_result(ran, call.secrets)
            text = after_run_message(name, exc.error, shown)
            return call.result(is_error=True, content=redact(text, call.secrets), result=ran)
        except CommandHandleError as exc:
            error = exc if isinstance(exc, HandleError) else HandleError(str(exc))
            call.emit(
                "refused",
                reason=redact(error.message, call.secrets),
                pointer=error.pointer,
                error=type(exc).__name__,
            )
            return call.result(
                is_error=True, content=redact(model_message(name, error, args), call.secrets)
            )

    # -- processes that outlive their call ----------------------------------------

    def _start_options(self, request: _Start) -> dict[str, Any]:
        session = request.session
        return {
            "owner": request.owner,
            "lifetime": session.max_lifetime,
            "terminal": self.terminal if session.terminal else None,
            "ready": session.ready,
        }

    async def _start_process(self, request: _Start) -> Process:
        """Start the program, then wait for ``ready``, its end, or ``yield_after``."""
        prepared = request.call.prepared
        process = await self.executor.start(prepared, **self._start_options(request))
        self._track(process, request)
        try:
            await process.wait_ready(request.session.yield_after)
        except BaseException:  # the caller gave up: nobody would learn its id
            process.request_stop()
            raise
        return process

    def _start_process_sync(self, request: _Start) -> Process:
        prepared = request.call.prepared
        process = self.executor.start_sync(prepared, **self._start_options(request))
        self._track(process, request)
        try:
            process.wait_ready_sync(request.session.yield_after)
        except BaseException:
            process.request_stop()
            raise
        return process

    def _track(self, process: Process, request: _Start) -> None:
        """Keep what showing its output needs; record its start, and its end."""
        emit = request.emit
        record = ProcessRecord(process, request.secrets, request.session.secret_input, emit.call_id)
        with self._executor_lock:
            executor = self.executor
            for stale in [key for key in self._records if executor.process(key) is None]:
                del self._records[stale]
            self._records[process.id] = record
        emit("spawned", pid=process.pid, program=process.program)
        emit("process_started", process_id=process.id, terminal=process.terminal is not None)
        process.on_end(lambda ended: self._process_ended(record))

    def _process_ended(self, record: ProcessRecord) -> None:
        """On the process's supervising thread, once it and its group are gone."""
        process = record.process
        result = process.result
        emit = record.emitter(self._events)
        emit(
            "process_ended",
            process_id=process.id,
            ended_by=process.ended_by,
            exit_code=None if result is None else result.exit_code,
            signal=None if result is None else result.signal_name,
            duration_s=None if result is None else round(result.duration_s, 6),
        )
        emit.settle_sync()

    def _ended_in_call(self, process: Process) -> CommandResult:
        """The result of a process that ended before its call returned; forgotten."""
        result = process.result
        assert result is not None
        self.executor.forget(process)
        with self._executor_lock:
            self._records.pop(process.id, None)
        return result

    def _process_started(self, process: Process, call: _CallState) -> ToolResult:
        record = self._records[process.id]
        content, structured = output_view(
            record, process.read_sync(), self.max_content, started=True
        )
        return call.result(is_error=False, content=content, structured=structured)

    def _own(self, process_id: object, owner: Any) -> ProcessRecord:
        """The caller's process of that id; another owner's is unknown to it."""
        record = self._records.get(process_id) if isinstance(process_id, str) else None
        if record is None or record.process.owner != owner:
            mine = [
                each.process for each in list(self._records.values()) if each.process.owner == owner
            ]
            raise _Refusal(unknown_process(str(process_id), mine), reason="unknown process")
        return record

    def _delivered(self, record: ProcessRecord) -> None:
        """An ended process whose last output was read is forgotten."""
        if record.process.delivered:
            self.executor.forget(record.process)
            with self._executor_lock:
                self._records.pop(record.process.id, None)

    def _process_request(
        self, name: str, arguments: Mapping[str, Any] | str | None, owner: Any, call: _CallState
    ) -> tuple[ProcessRecord | None, dict[str, Any]]:
        args = self._arguments(self._builtins.get(name) or _BUILTINS[name], arguments)
        if name == PROCESS_LIST:
            return None, args
        return self._own(args["process_id"], owner), args

    def _process_act(
        self, name: str, record: ProcessRecord | None, args: dict[str, Any], owner: Any
    ) -> tuple[str, dict[str, Any]]:
        """The blocking part of a process tool, and its text and structured value."""
        if record is None:
            mine = [each.process for each in list(self._records.values())]
            return list_view([each for each in mine if each.owner == owner])
        process = record.process
        if name == PROCESS_READ:
            output = process.read_sync(float(args.get("wait_seconds", 0)))
        elif name == PROCESS_STOP:
            output = process.stop_sync()
        else:
            text = args["input"]
            written = process.write_sync(text, close=bool(args.get("end_input", False)))
            emit = record.emitter(self._events)
            details: dict[str, Any] = {"process_id": process.id, "bytes": written}
            if not record.secret_input:
                details["input"] = text
            emit("process_write", **details)
            emit.settle_sync()
            content = f"Sent {written} bytes to process `{process.id}`"
            if args.get("end_input"):
                content += " and closed its input"
            content += "; read its answer with process_read."
            return content, {"process_id": process.id, "bytes_written": written}
        content, structured = output_view(record, output, self.max_content)
        self._delivered(record)
        return content, structured

    def _process_tool_sync(
        self, name: str, arguments: Mapping[str, Any] | str | None, owner: Any
    ) -> ToolResult:
        call = self._start(name)
        try:
            record, args = self._process_request(name, arguments, owner, call)
            content, structured = self._process_act(name, record, args, owner)
        except _Refusal as refusal:
            call.emit(refusal.event, **refusal.details)
            call.emit.settle_sync()
            return call.result(is_error=True, content=refusal.text)
        except ProcessError as exc:
            call.emit("refused", reason=exc.message, error="ProcessError")
            call.emit.settle_sync()
            return call.result(is_error=True, content=exc.message)
        return call.result(is_error=False, content=content, structured=structured)

    async def _process_tool(
        self, name: str, arguments: Mapping[str, Any] | str | None, owner: Any
    ) -> ToolResult:
        """A process tool under trio or asyncio. A read and a stop wait in the
        task (many waiting reads hold no threads); a write, which may wait a few
        seconds for the program to take its input, runs in a thread."""
        if name == PROCESS_WRITE:
            call_in_thread = partial(self._process_tool_sync, name, arguments, owner)
            written: ToolResult = await anyio.to_thread.run_sync(
                call_in_thread, abandon_on_cancel=True
            )
            return written
        if name not in (PROCESS_READ, PROCESS_STOP):
            return self._process_tool_sync(name, arguments, owner)
        call = self._start(name)
        try:
            record, args = self._process_request(name, arguments, owner, call)
        except _Refusal as refusal:
            call.emit(refusal.event, **refusal.details)
            await call.emit.settle()
            return call.result(is_error=True, content=refusal.text)
        assert record is not None
        process = record.process
        if name == PROCESS_READ:
            output = await process.read(float(args.get("wait_seconds", 0)))
        else:
            with anyio.CancelScope(shield=True):  # a stop asked for is seen through
                output = await process.stop()
        content, structured = output_view(record, output, self.max_content)
        self._delivered(record)
        return call.result(is_error=False, content=content, structured=structured)

    async def read_process(
        self, process_id: str, principal: Any = None, *, wait: float = 0.0
    ) -> ToolResult:
        """``process_read`` for ``principal`` (the owner): its output since the last read."""
        arguments = {"process_id": process_id, "wait_seconds": wait}
        return await self._process_tool(PROCESS_READ, arguments, principal)

    def read_process_sync(
        self, process_id: str, principal: Any = None, *, wait: float = 0.0
    ) -> ToolResult:
        arguments = {"process_id": process_id, "wait_seconds": wait}
        return self._process_tool_sync(PROCESS_READ, arguments, principal)

    async def write_process(
        self, process_id: str, input: str, principal: Any = None, *, end_input: bool = False
    ) -> ToolResult:
        """``process_write``: ``input`` to its stdin or terminal."""
        arguments = {"process_id": process_id, "input": input, "end_input": end_input}
        return await self._process_tool(PROCESS_WRITE, arguments, principal)

    def write_process_sync(
        self, process_id: str, input: str, principal: Any = None, *, end_input: bool = False
    ) -> ToolResult:
        arguments = {"process_id": process_id, "input": input, "end_input": end_input}
        return self._process_tool_sync(PROCESS_WRITE, arguments, principal)

    async def stop_process(self, process_id: str, principal: Any = None) -> ToolResult:
        """``process_stop``: end its process group; its last output."""
        return await self._process_tool(PROCESS_STOP, {"process_id": process_id}, principal)

    def stop_process_sync(self, process_id: str, principal: Any = None) -> ToolResult:
        return self._process_tool_sync(PROCESS_STOP, {"process_id": process_id}, principal)

    def processes(self, principal: Any = None) -> ToolResult:
        """``process_list``: ``principal``'s processes."""
        return self._process_tool_sync(PROCESS_LIST, {}, principal)

    def close(self, owner: Any = ANY) -> int:
        """Stop every process this Toolbox started (of ``owner``, when given),
        and every one of the Toolboxes it shares them with (:meth:`with_policy`),
        with everything they started, and wait until they are gone; returns
        how many were running. The Toolbox remains usable."""
        if self._executor is None:
            return 0
        from ..executor import ANY_OWNER

        return self._executor.stop_processes(ANY_OWNER if owner is ANY else owner)

    async def aclose(self, owner: Any = ANY) -> int:
        """:meth:`close` under trio or asyncio; it finishes even when cancelled."""
        if self._executor is None:
            return 0
        from ..executor import ANY_OWNER

        executor = self._executor
        return await executor.stop_processes_async(ANY_OWNER if owner is ANY else owner)

    def __enter__(self) -> Toolbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Toolbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _tool(self, name: str) -> Tool:
        tool = self._tools.get(self._aliases.get(name, name))
        if tool is not None:
            return tool
        names = list(self._tools)
        known = ", ".join(f"`{n}`" for n in names[:_LISTED]) or "none"
        if len(names) > _LISTED:
            known += f" and {len(names) - _LISTED} more"
        shown = name if len(name) <= 64 else name[:64] + "..."
        raise _Refusal(
            f"There is no tool named `{shown}`. The tools are: {known}.", reason="unknown tool"
        )

    def _arguments(self, tool: Tool, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        """The model's arguments as an object, nulls for absent optional properties
        dropped, checked against the schema the tool advertises."""
        args: object = {} if arguments is None else arguments
        if isinstance(args, str):
            try:
                args = _json.loads(args) if args.strip() else {}
            except _json.JSONDepthError:
                raise _Refusal(
                    f"The arguments for `{tool.name}` are nested deeper than the limit of "
                    f"{MAX_ARGUMENT_DEPTH} levels; nothing ran.",
                    reason="nested too deeply",
                ) from None
            except _json.JSONDecodeError:
                raise _Refusal(
                    f"The arguments for `{tool.name}` are not valid JSON; nothing ran.",
                    reason="invalid JSON",
                ) from None
        if not isinstance(args, Mapping):
            raise _Refusal(
                f"The arguments for `{tool.name}` must be a JSON object; nothing ran.",
                reason="not an object",
            )
        checked = drop_nulls(tool.parameters, dict(args))
        assert isinstance(checked, dict)
        if not tool.checks_own_arguments:  # the others check the same schema when prepared
            check_arguments(self._validator(tool), checked)
        return checked

    def _validator(self, tool: Tool) -> Any:
        validator = self._input_validators.get(tool.name)
        if validator is None:
            validator = _jsonschema.validator(tool.parameters)
            self._input_validators[tool.name] = validator
        return validator

    def _credential(
        self, tool: Tool, principal: Any, call: _CallState
    ) -> Generator[_Ask, Any, Mapping[str, Any] | None]:
        """The Credential Object, when the tool needs one, from this call's principal
        (nothing is cached); its values are redacted from everything shown."""
        if not (tool.uses_credentials and tool.handle is not None):
            return None
        why = "no credential resolver is configured"
        credential: Mapping[str, Any] | None = None
        if self._credentials is not None:
            try:
                credential = yield _Ask(partial(self._credentials, principal, tool.handle))
                why = "" if isinstance(credential, Mapping) else "not a mapping"
            except Exception as exc:  # the resolver signalled an error (Tool Handle 3.2)
                why = f"the resolver raised {type(exc).__name__}"
        if why:
            raise _Refusal(
                f"The credentials for `{tool.name}` could not be obtained; nothing ran.",
                reason="credential resolution failed",
                detail=why,
            )
        call.secrets = call.emit.secrets = secret_values(credential)
        return credential

    def _clear(
        self,
        tool: Tool,
        args: Mapping[str, Any],
        principal: Any,
        prepared: PreparedToolCall,
        expect_plan: str | None,
        call: _CallState,
        summary: str = "",
    ) -> Generator[_Ask, Any, None]:
        """The plan the caller expects, and the approve hook's yes."""
        digest = call.digest
        if expect_plan is not None and digest != expect_plan.strip().lower():
            raise _Refusal(
                f"The call to `{tool.name}` was not run: what it would run changed since it "
                "was approved. Nothing ran.",
                reason="the plan changed",
                plan_hash=digest,
                expected=expect_plan,
            )
        if self._approve is None:
            return
        assert digest is not None
        invocation = prepared.prepared.invocation
        request = ApprovalRequest(
            tool.name,
            call.call_id,
            principal,
            args,
            prepared.plan,
            digest,
            summary,
            stdin=None if invocation is None else invocation.shown_stdin(),
            environment={} if invocation is None else invocation.shown_environment(),
        )
        allowed = yield _Ask(partial(self._approve, request))
        # Only True runs: a hook that answers "no" or "deny: ..." as text, or
        # None by falling off its end, has not said yes.
        if allowed is not True:
            reason = str(allowed.reason).strip() if isinstance(allowed, Denied) else ""
            if reason:
                reason = redact(reason, call.secrets)
                raise _Refusal(
                    f"The application declined to run this call to `{tool.name}`: "
                    f"{reason.rstrip('.')}. Nothing ran.",
                    event="denied",
                    plan_hash=digest,
                    reason=reason,
                )
            raise _Refusal(
                f"The application declined to run this call to `{tool.name}`; nothing ran.",
                event="denied",
                plan_hash=digest,
            )
        call.emit("approved", plan_hash=digest)

    def _outcome(
        self,
        tool: Tool,
        prepared: PreparedToolCall,
        ran: CommandResult | PlanResult,
        call: _CallState,
    ) -> ToolResult:
        """What the model is shown of what ran."""
        try:
            is_error, content, structured = prepared.outcome(ran, call.secrets, self.max_content)
        except HandleError as exc:  # the result template failed: show the default view
            call.emit(
                "refused",
                reason=redact(exc.message, call.secrets),
                pointer=exc.pointer,
                after_run=True,
            )
            assert isinstance(ran, CommandResult)  # only a handle has a result template
            shown = shown_result(ran, call.secrets)
            text = command_content(shown, prepared.timeout, self.max_content, call.secrets)
            return call.result(
                is_error=True,
                content=f"{text}\n\n(The tool's result template failed; this is the plain output.)",
                result=ran,
            )
        problem = self._output_problem(tool, structured)
        if problem:
            call.emit("refused", reason=problem, after_run=True)
            content = f"{content}\n\n(The result does not match the tool's output schema.)"
            is_error = True
        return call.result(is_error=is_error, content=content, structured=structured, result=ran)

    def _summary(
        self,
        tool: Tool,
        args: dict[str, Any],
        context: Mapping[str, Any] | None,
        credential: Mapping[str, Any] | None,
        prepared: PreparedToolCall,
        call: _CallState,
    ) -> Generator[_Run, Any, str]:
        """One line for a person: a bash tool's ``preview`` (empty when it fails,
        as its contract says), else what the plan runs."""
        if tool.bash_tool is None:
            return plan_summary(prepared.plan)
        ran = yield from self._bash_subcommand("preview", tool, args, context, credential, call)
        if ran is None or ran.exit_code != 0 or ran.timed_out:
            return ""
        lines = redact(_text(ran.stdout), call.secrets).strip().splitlines()
        return lines[0][:_SUMMARY] if lines else ""

    def _bash_error(
        self,
        tool: Tool,
        args: dict[str, Any],
        context: Mapping[str, Any] | None,
        credential: Mapping[str, Any] | None,
        ran: CommandResult,
        timeout: float,
        call: _CallState,
    ) -> Generator[_Run, Any, str]:
        """A bash tool's ``error`` subcommand after a failed or timed-out run: its
        output is the message when it exits 0 and prints something, else ""."""
        if ran.timed_out:
            code = 124  # as timeout(1) reports it
        elif ran.exit_code is None:
            code = 128 + (ran.signal or 0)
        else:
            code = ran.exit_code
        answer = yield from self._bash_subcommand(
            "error",
            tool,
            args,
            context,
            credential,
            call,
            exit_code=code,
            timed_out=timeout if ran.timed_out else None,
        )
        if answer is None or answer.exit_code != 0:
            return ""
        text = redact(_text(answer.stdout), call.secrets).strip("\n")
        return text[: self.max_content] if text.strip() else ""

    def _bash_subcommand(
        self,
        subcommand: Literal["preview", "error"],
        tool: Tool,
        args: dict[str, Any],
        context: Mapping[str, Any] | None,
        credential: Mapping[str, Any] | None,
        call: _CallState,
        **extra: Any,
    ) -> Generator[_Run, Any, CommandResult | None]:
        """Run a bash tool's ``preview`` or ``error``: quiet (no call output), its
        events marked with the subcommand; None when it could not run."""
        assert tool.bash_tool is not None
        try:
            prepared = tool.bash_tool.prepare(
                subcommand,
                args,
                self.policy,
                config=self._config(context),
                credential=credential,
                **extra,
            )
            ran = yield _Run(
                PreparedToolCall(prepared, self.executor, None),
                call.emit,
                call.secrets,
                quiet=True,
                subcommand=subcommand,
            )
        except CommandHandleError:
            return None
        _report(call.emit, ran, subcommand=subcommand)
        return ran if isinstance(ran, CommandResult) else None

    def _config(self, context: Mapping[str, Any] | None) -> dict[str, Any]:
        """A bash tool's configuration: the Toolbox's, with this call's context over it."""
        return {**self.tool_config, **(context or {})}

    def _utcp_variables(
        self, tool: Tool, context: Mapping[str, Any] | None, call: _CallState
    ) -> dict[str, str]:
        """The variables a UTCP tool's ``${NAME}`` read, for this call: the files
        (read now), the mapping, then the call's ``context``; the secret ones'
        values join the call's secrets."""
        if tool.utcp is None:
            return {}
        try:
            variables = Variables(self._variables, self.variable_files, self._manuals).resolve(
                tool.utcp_manual
            )
        except HandleError as exc:
            raise _Refusal(
                f"The variables for `{tool.name}` could not be read; nothing ran.",
                reason="variables unavailable",
                detail=exc.message,
            ) from None
        for key, value in (context or {}).items():
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                variables[key] = str(value)
        if self.secret_variables:
            secret = {name: variables[name] for name in self.secret_variables if name in variables}
            prefix = (tool.utcp_manual or "").replace("_", "__") + "_"
            secret.update(
                {
                    name: variables[name.removeprefix(prefix)]
                    for name in self.secret_variables
                    if name.startswith(prefix) and name.removeprefix(prefix) in variables
                }
            )
            found = secret_values(secret)
            if found:
                call.secrets = call.emit.secrets = tuple(
                    sorted({*call.secrets, *found}, key=len, reverse=True)
                )
        return variables

    def _prepare(
        self,
        tool: Tool,
        args: dict[str, Any],
        context: Mapping[str, Any] | None,
        credential: Mapping[str, Any] | None,
        variables: Mapping[str, str] | None = None,
        secrets: tuple[str, ...] = (),
    ) -> PreparedToolCall:
        if tool.bash_tool is not None:
            run = tool.bash_tool.prepare(
                "run", args, self.policy, config=self._config(context), credential=credential
            )
            return PreparedToolCall(run, self.executor, None)
        if tool.handle is not None:
            prepared = tool.handle.prepare(
                args, self.policy, context=context, credential=credential
            )
            return PreparedToolCall(prepared, self.executor, tool.handle)
        assert tool.utcp is not None
        from .. import utcp

        plan = utcp.prepare(tool.utcp, args, variables=variables or {}, policy=self.policy)
        return PreparedToolCall(plan, self.executor, None, secrets)

    def _output_problem(self, tool: Tool, structured: object) -> str:
        if tool.output_schema is None:
            return ""
        validator = self._output_validators.get(tool.name)
        if validator is None:
            validator = _jsonschema.validator(tool.output_schema)
            self._output_validators[tool.name] = validator
        error = next(iter(validator.iter_errors(structured)), None)
        if error is None:
            return ""
        where = "".join(f"/{part}" for part in error.absolute_path) or "/"
        return f"the structured result fails output_schema at {where} ({error.validator})"


def _text(value: str | bytes | None) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value or ""


def plan_summary(plan: Mapping[str, Any]) -> str:
    """A plan in one line: a command's argv as a shell would quote it, a UTCP
    plan's steps; credentials are masked in the plan already."""
    import shlex

    argv = plan.get("argv")
    if isinstance(argv, list):
        return shlex.join(str(word) for word in argv)[:_SUMMARY]
    steps = plan.get("steps")
    if isinstance(steps, list):
        return "; ".join(str(step) for step in steps)[:_SUMMARY]
    return ""


def _as_preview(outcome: ToolResult | ToolPreview) -> ToolPreview:
    """A preview, or, for a call that would be refused, why (and no plan)."""
    if isinstance(outcome, ToolResult):
        return ToolPreview(outcome.tool, outcome.call_id, None, None, outcome.content)
    return outcome


def _spawned(emit: Emitter, subcommand: str = "") -> Callable[[int, str], None]:
    extra = {"subcommand": subcommand} if subcommand else {}
    return lambda pid, program: emit("spawned", pid=pid, program=program, **extra)


def _report(emit: Emitter, result: CommandResult | PlanResult, subcommand: str = "") -> None:
    """``timed_out``, ``killed`` and ``exited`` for a finished run (a bash
    tool's ``preview`` or ``error`` run names its ``subcommand``)."""
    extra = {"subcommand": subcommand} if subcommand else {}
    if isinstance(result, CommandResult):
        if result.timed_out:
            emit("timed_out", duration_s=round(result.duration_s, 6), **extra)
        if result.signal is not None:
            emit("killed", signal=result.signal_name, **extra)
        emit(
            "exited",
            **extra,
            exit_code=result.exit_code,
            signal=result.signal_name,
            duration_s=round(result.duration_s, 6),
            stdout_bytes=result.stdout_bytes,
            stderr_bytes=result.stderr_bytes,
            stdout_truncated=result.stdout_truncated,
            stderr_truncated=result.stderr_truncated,
        )
        return
    if result.timed_out:
        emit("timed_out", duration_s=round(result.duration_s, 6))
    last = result.steps[-1] if result.steps else None
    emit(
        "exited",
        exit_code=None if last is None else last.status,
        steps=len(result.steps),
        duration_s=round(result.duration_s, 6),
        output_bytes=sum(len(step.output) for step in result.steps),
        truncated=any(step.truncated for step in result.steps),
    )


def _settle(value: object) -> object:
    """``value``, awaited in a short asyncio run when a sync caller got an awaitable."""
    if not inspect.isawaitable(value):
        return value
    awaitable = value

    async def wait() -> object:
        return await awaitable

    return run_to_completion(wait)
