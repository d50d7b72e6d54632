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
import inspect
import os
import uuid
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio

from .. import _json, _jsonschema, utcp
from .._secrets import redact, secret_values
from ..errors import AfterRunError, HandleError
from ..executor import CommandResult, Executor, PlanResult, plan_hash
from ..handle import CommandHandle
from ..policy import Policy
from ._arguments import drop_nulls, model_message
from ._calls import CommandCall, PlanCall, PreparedToolCall
from ._events import Emitter, EventSink
from ._formats import describe_tool
from ._load import load_tools
from ._result import ToolResult, command_content
from ._tool import Tool

__all__ = ["ApprovalRequest", "Approver", "CredentialResolver", "ToolPreview", "Toolbox"]

CredentialResolver = Callable[
    [Any, CommandHandle], Mapping[str, Any] | Awaitable[Mapping[str, Any]]
]


@dataclass(frozen=True)
class ApprovalRequest:
    """What the ``approve`` hook decides on: the fully rendered ``plan`` (program,
    argv, environment with credentials masked, cwd, stdin size and digest,
    limits, sandbox) and its ``plan_hash``, with the call's ``tool``,
    ``principal`` and ``arguments`` (after null removal)."""

    tool: str
    call_id: str
    principal: Any
    arguments: Mapping[str, Any]
    plan: Mapping[str, Any]
    plan_hash: str


Approver = Callable[[ApprovalRequest], bool | Awaitable[bool]]

DEFAULT_MAX_CONTENT = 30_000
_LISTED = 20  # tool names an "unknown tool" answer lists


@dataclass(frozen=True)
class _Ask:
    """Call an application hook; its value may be awaitable."""

    hook: Callable[[], object]


@dataclass(frozen=True)
class _Run:
    call: PreparedToolCall
    emit: Emitter
    secrets: tuple[str, ...] = ()


OutputLine = Callable[[str, str], Awaitable[None]]


class _Lines:
    """Output chunks to complete lines, with credential values redacted, for an
    ``on_output`` callback. A partial line waits for its end (at most
    :data:`MAX_LINE` characters are kept), so a secret split across chunks is
    still redacted."""

    MAX_LINE = 4096

    def __init__(self, callback: OutputLine, secrets: tuple[str, ...]) -> None:
        self.callback = callback
        self.secrets = secrets
        self.pending: dict[str, str] = {}
        self.decoders: dict[str, Any] = {}

    async def __call__(self, stream: str, chunk: bytes) -> None:
        decoder = self.decoders.get(stream)
        if decoder is None:
            decoder = self.decoders[stream] = codecs.getincrementaldecoder("utf-8")("replace")
        text = self.pending.get(stream, "") + decoder.decode(chunk)
        *lines, rest = text.split("\n")
        self.pending[stream] = rest[-self.MAX_LINE :]
        for line in lines:
            await self.callback(stream, redact(line[-self.MAX_LINE :], self.secrets))


@dataclass(frozen=True)
class ToolPreview:
    """What a call would run: the ``plan`` (credentials masked) and its
    ``plan_hash``; or, when it would be refused, ``error`` (the text the model
    would get) and no plan."""

    tool: str
    call_id: str
    plan: Mapping[str, Any] | None
    plan_hash: str | None
    error: str | None


_Flow = Generator["_Ask | _Run", Any, "ToolResult | ToolPreview"]


class Toolbox:
    """Tools by name: describe them for an LLM, call them with the model's arguments.

    Load with :meth:`load`. ``policy`` governs every call (one
    :class:`~command_handle.Executor` is shared by all, from trio, asyncio
    and threads). ``credentials(principal, handle)`` returns the Credential
    Object for a tool that declares ``security`` or reads ``$credential``;
    ``approve(request)`` returns whether a rendered call may run; ``events``
    receives each :class:`AuditEvent`. Each hook may be sync or async.
    ``max_content`` bounds the default text shown to the model, per stream.
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
    ) -> None:
        self._tools = {tool.name: tool for tool in tools}
        if len(self._tools) != len(tools):
            raise ValueError("two tools have the same name")
        self.executor = Executor(policy)
        self.policy = self.executor.policy
        self._credentials = credentials
        self._approve = approve
        self._events = events
        self.max_content = max_content
        self.skipped = list(skipped or [])  # UTCP tools of other protocols, with why
        self._output_validators: dict[str, Any] = {}
        for tool in tools:
            Emitter(events, tool.name, "")("loaded", source=tool.source, kind=tool.kind)

    @classmethod
    def load(
        cls,
        *paths: str | os.PathLike[str],
        policy: Policy | None = None,
        credentials: CredentialResolver | None = None,
        approve: Approver | None = None,
        events: EventSink | None = None,
        max_content: int = DEFAULT_MAX_CONTENT,
    ) -> Toolbox:
        """Load files and folders (recursively) of Command Handles and UTCP
        documents, recognised by their content. Raises
        :class:`~command_handle.toolbox.ToolLoadError` naming the file and the
        JSON Pointer; two tools with one name name both files."""
        tools, skipped = load_tools(paths)
        return cls(
            tools,
            policy=policy,
            credentials=credentials,
            approve=approve,
            events=events,
            max_content=max_content,
            skipped=skipped,
        )

    # -- the collection ----------------------------------------------------------

    def names(self) -> list[str]:
        return list(self._tools)

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def describe(self, format: str = "mcp") -> list[dict[str, Any]]:
        """The tool definitions in ``format``: ``"mcp"``, ``"openai"``,
        ``"openai-strict"``, ``"anthropic"`` or ``"tool-handle"``."""
        return [describe_tool(tool, format) for tool in self._tools.values()]

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
        ``echo`` write into its steps)."""
        flow = self._flow(name, arguments, principal, context, expect_plan)
        result = await self._drive(flow, on_output)
        assert isinstance(result, ToolResult)
        return result

    # The same coroutine function: call is native under asyncio as under trio.
    call_asyncio = call

    def call_sync(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        principal: Any = None,
        *,
        context: Mapping[str, Any] | None = None,
        expect_plan: str | None = None,
    ) -> ToolResult:
        """Blocking form of :meth:`call`, for threads; no event loop is started
        unless a hook is async (it is then awaited in a short asyncio run)."""
        result = self._drive_sync(self._flow(name, arguments, principal, context, expect_plan))
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
        return _as_preview(
            await self._drive(self._flow(name, arguments, principal, context, preview=True))
        )

    def preview_sync(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        principal: Any = None,
        *,
        context: Mapping[str, Any] | None = None,
    ) -> ToolPreview:
        """Blocking form of :meth:`preview`."""
        return _as_preview(
            self._drive_sync(self._flow(name, arguments, principal, context, preview=True))
        )

    async def _drive(
        self, flow: _Flow, on_output: OutputLine | None = None
    ) -> ToolResult | ToolPreview:
        """Answer the flow's requests under trio or asyncio."""
        try:
            request: _Ask | _Run = next(flow)
            while True:
                if isinstance(request, _Ask):
                    try:
                        answer = request.hook()
                        if inspect.isawaitable(answer):
                            answer = await answer
                    except Exception as exc:
                        request = flow.throw(exc)
                        continue
                else:
                    answer = await self._run(request, on_output)
                request = flow.send(answer)
        except StopIteration as done:
            outcome: ToolResult | ToolPreview = done.value
            return outcome

    async def _run(
        self, request: _Run, on_output: OutputLine | None
    ) -> CommandResult | PlanResult | HandleError:
        on_chunk = None if on_output is None else _Lines(on_output, request.secrets)
        try:
            return await request.call.run(self.executor, _spawned(request.emit), on_chunk)
        except HandleError as exc:
            return exc
        except anyio.get_cancelled_exc_class():
            request.emit("killed", reason="cancelled")
            raise

    def _drive_sync(self, flow: _Flow) -> ToolResult | ToolPreview:
        """Answer the flow's requests in the calling thread."""
        try:
            request: _Ask | _Run = next(flow)
            while True:
                if isinstance(request, _Ask):
                    try:
                        answer = _settle(request.hook())
                    except Exception as exc:
                        request = flow.throw(exc)
                        continue
                else:
                    try:
                        answer = request.call.run_sync(self.executor, _spawned(request.emit))
                    except HandleError as exc:
                        answer = exc
                    except KeyboardInterrupt:
                        request.emit("killed", reason="interrupted")
                        raise
                request = flow.send(answer)
        except StopIteration as done:
            outcome: ToolResult | ToolPreview = done.value
            return outcome

    # -- the flow ----------------------------------------------------------------

    def _flow(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None,
        principal: Any,
        context: Mapping[str, Any] | None,
        expect_plan: str | None = None,
        preview: bool = False,
    ) -> _Flow:
        call_id = uuid.uuid4().hex[:16]
        emit = Emitter(self._events, name, call_id)

        def refused(text: str, reason: str, **details: Any) -> ToolResult:
            emit("refused", reason=reason, **details)
            return ToolResult(True, text, None, None, name, call_id)

        tool = self._tools.get(name)
        if tool is None:
            names = list(self._tools)
            known = ", ".join(f"`{n}`" for n in names[:_LISTED]) or "none"
            if len(names) > _LISTED:
                known += f" and {len(names) - _LISTED} more"
            shown = name if len(name) <= 64 else name[:64] + "..."
            return refused(
                f"There is no tool named `{shown}`. The tools are: {known}.", "unknown tool"
            )
        args: object = {} if arguments is None else arguments
        if isinstance(args, str):
            try:
                args = _json.loads(args) if args.strip() else {}
            except _json.JSONDecodeError:
                return refused(
                    f"The arguments for `{name}` are not valid JSON; nothing ran.", "invalid JSON"
                )
        if not isinstance(args, Mapping):
            return refused(
                f"The arguments for `{name}` must be a JSON object; nothing ran.", "not an object"
            )
        args = drop_nulls(tool.parameters, dict(args))
        assert isinstance(args, dict)

        credential: Mapping[str, Any] | None = None
        if tool.uses_credentials and tool.handle is not None:
            why = "no credential resolver is configured"
            if self._credentials is not None:
                try:
                    credential = yield _Ask(partial(self._credentials, principal, tool.handle))
                    why = "" if isinstance(credential, Mapping) else "not a mapping"
                except Exception as exc:  # the resolver signalled an error (Tool Handle 3.2)
                    why = f"the resolver raised {type(exc).__name__}"
            if why:
                return refused(
                    f"The credentials for `{name}` could not be obtained; nothing ran.",
                    "credential resolution failed",
                    detail=why,
                )
        secrets = secret_values(credential)
        emit.secrets = secrets

        try:
            prepared = self._prepare(tool, args, context, credential)
        except HandleError as exc:
            return refused(
                redact(model_message(name, exc), secrets),
                redact(exc.message, secrets),
                pointer=exc.pointer,
                error=type(exc).__name__,
            )
        digest: str | None = None
        if preview or expect_plan is not None or self._approve is not None:
            # The plan is described and hashed only when someone looks at it: it
            # is work (the sandbox profile, RFC 8785) that a plain call skips.
            digest = plan_hash(prepared.plan)
        if preview:
            assert digest is not None
            return ToolPreview(name, call_id, prepared.plan, digest, None)
        if expect_plan is not None and digest != expect_plan.strip().lower():
            emit("refused", reason="the plan changed", plan_hash=digest, expected=expect_plan)
            return ToolResult(
                True,
                f"The call to `{name}` was not run: what it would run changed since it "
                "was approved. Nothing ran.",
                None,
                None,
                name,
                call_id,
                digest,
            )

        if self._approve is not None:
            assert digest is not None
            request = ApprovalRequest(name, call_id, principal, args, prepared.plan, digest)
            allowed = yield _Ask(partial(self._approve, request))
            if not allowed:
                emit("denied", plan_hash=digest)
                return ToolResult(
                    True,
                    f"The application declined to run this call to `{name}`; nothing ran.",
                    None,
                    None,
                    name,
                    call_id,
                    digest,
                )
            emit("approved", plan_hash=digest)

        ran = yield _Run(prepared, emit, secrets)
        if isinstance(ran, HandleError):  # refused at launch (a re-check, the sandbox)
            return refused(
                redact(model_message(name, ran), secrets),
                redact(ran.message, secrets),
                pointer=ran.pointer,
                error=type(ran).__name__,
            )
        _report(emit, ran)
        try:
            is_error, content, structured = prepared.outcome(ran, secrets, self.max_content)
        except HandleError as exc:  # the result template failed: show the default view
            emit(
                "refused", reason=redact(exc.message, secrets), pointer=exc.pointer, after_run=True
            )
            if not isinstance(ran, CommandResult):
                raise AfterRunError(exc, ran) from None
            text = command_content(ran, prepared.timeout, self.max_content, secrets)
            return ToolResult(
                True,
                f"{text}\n\n(The tool's result template failed; this is the plain output.)",
                None,
                ran,
                name,
                call_id,
                digest,
            )
        problem = self._output_problem(tool, structured)
        if problem:
            emit("refused", reason=problem, after_run=True)
            content = f"{content}\n\n(The result does not match the tool's output schema.)"
            is_error = True
        return ToolResult(is_error, content, structured, ran, name, call_id, digest)

    def _prepare(
        self,
        tool: Tool,
        args: dict[str, Any],
        context: Mapping[str, Any] | None,
        credential: Mapping[str, Any] | None,
    ) -> PreparedToolCall:
        if tool.handle is not None:
            invocation = tool.handle.render(
                args, self.policy, context=context, credential=credential
            )
            return CommandCall(tool.handle, invocation, self.executor)
        assert tool.utcp is not None
        # UTCP ${NAME} variables come from the application's context.
        variables = {
            key: str(value)
            for key, value in (context or {}).items()
            if isinstance(value, (str, int, float)) and not isinstance(value, bool)
        }
        prepared = utcp.prepare(tool.utcp, args, variables=variables, policy=self.policy)
        return PlanCall(prepared, variables, self.executor)

    def _output_problem(self, tool: Tool, structured: object) -> str:
        if tool.output_schema is None:
            return ""
        validator = self._output_validators.get(tool.name)
        if validator is None:
            validator = _jsonschema.load().Draft202012Validator(tool.output_schema)
            self._output_validators[tool.name] = validator
        error = next(iter(validator.iter_errors(structured)), None)
        if error is None:
            return ""
        where = "".join(f"/{part}" for part in error.absolute_path) or "/"
        return f"the structured result fails output_schema at {where} ({error.validator})"


def _as_preview(outcome: ToolResult | ToolPreview) -> ToolPreview:
    """A preview, or, for a call that would be refused, why (and no plan)."""
    if isinstance(outcome, ToolResult):
        return ToolPreview(outcome.tool, outcome.call_id, None, None, outcome.content)
    return outcome


def _spawned(emit: Emitter) -> Callable[[int, str], None]:
    return lambda pid, program: emit("spawned", pid=pid, program=program)


def _report(emit: Emitter, result: CommandResult | PlanResult) -> None:
    """``timed_out``, ``killed`` and ``exited`` for a finished run."""
    if isinstance(result, CommandResult):
        if result.timed_out:
            emit("timed_out", duration_s=round(result.duration_s, 6))
        if result.signal is not None:
            emit("killed", signal=result.signal_name)
        emit(
            "exited",
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

    return anyio.run(wait)
