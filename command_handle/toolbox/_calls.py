"""A tool's prepared call: what it will do (its plan), how to run it, and what
the model is shown afterwards.

Every tool, a Command Handle or a UTCP template, is prepared into the one
:class:`~command_handle.call.PreparedCall` and run by the same executor
methods; only what the model is shown of the result differs by kind.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .._secrets import redact_value
from ..call import CommandResult, PlanResult, PreparedCall
from ..handle import CommandHandle
from ._result import command_content, plan_content, shown, shown_result

if TYPE_CHECKING:
    from ..executor import Executor

__all__ = ["Outcome", "PreparedToolCall"]

OnStarted = Callable[[int, str], None]
OnChunk = Callable[[str, bytes], Awaitable[None]]
SyncOnChunk = Callable[[str, bytes], None]
# (is_error, content, structured)
Outcome = tuple[bool, str, object]


class PreparedToolCall:
    """A prepared call of one tool, with the handle whose ``result`` template
    shapes its output (None for a UTCP template)."""

    def __init__(
        self,
        prepared: PreparedCall[CommandResult] | PreparedCall[PlanResult],
        executor: Executor,
        handle: CommandHandle | None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.prepared = prepared
        self.handle = handle
        self.secrets = secrets  # redacted from the plan (a UTCP plan's environment)
        self._executor = executor
        self._plan: dict[str, Any] | None = None

    @property
    def plan(self) -> dict[str, Any]:
        """What will run, as JSON (computed when first asked for)."""
        if self._plan is None:
            plan = self._executor.describe(self.prepared)
            if self.secrets:
                redacted = redact_value(plan, self.secrets)
                assert isinstance(redacted, dict)
                plan = redacted
            self._plan = plan
        return self._plan

    @property
    def timeout(self) -> float:
        return self.prepared.timeout

    @property
    def encoding(self) -> str:
        """What the program's output is text in ("binary" for bytes; a plan's is UTF-8)."""
        invocation = self.prepared.invocation
        return "utf-8" if invocation is None else invocation.encoding

    async def run(
        self, on_started: OnStarted, on_chunk: OnChunk | None = None
    ) -> CommandResult | PlanResult:
        """``on_chunk`` gets output as it arrives (a plan's: what its programs write)."""
        return await self._executor.run(self.prepared, on_chunk, on_started=on_started)

    def run_sync(
        self, on_started: OnStarted, on_chunk: SyncOnChunk | None = None
    ) -> CommandResult | PlanResult:
        return self._executor.run_sync(self.prepared, on_chunk, on_started=on_started)

    def outcome(
        self, result: CommandResult | PlanResult, secrets: tuple[str, ...], budget: int
    ) -> Outcome:
        """What the model is shown, all of it made from the run with the secrets
        redacted (:func:`shown_result`). Raises a HandleError when the handle's
        result template fails."""
        result = shown_result(result, secrets)
        if isinstance(result, PlanResult):
            assert self.prepared.plan is not None
            from ..utcp import output_value

            value = redact_value(output_value(self.prepared.plan.plan, result), secrets)
            return not result.ok, plan_content(value, result, self.timeout, secrets), value
        success = result.ok if self.handle is None else self.handle.succeeded(result)
        if self.handle is not None and self.handle.has_result_template:
            is_error, value = self.handle.outcome(result.to_json())
            content, structured = shown(value, secrets)
            return is_error, content, structured
        is_error = not success
        text = command_content(result, self.timeout, budget, secrets, success=success)
        data = result.to_json()
        del data["argv"]  # never shown by default: it holds nothing the model lacks
        return is_error, text, redact_value(data, secrets)
