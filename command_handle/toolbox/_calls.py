"""One prepared call of each kind: what it will do (its plan), how to run it, and
what the model is shown afterwards.

The Toolbox's flow is the same for every tool; these two classes are where a
Command Handle and a UTCP template differ.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from .._secrets import redact_value
from ..executor import (
    CommandResult,
    Executor,
    PlanResult,
    describe_prepared_plan,
    prepare_plan,
)
from ..handle import CommandHandle, Invocation
from ..utcp import PreparedCall, output_value
from ._result import command_content, plan_content, shown

__all__ = ["CommandCall", "Outcome", "PlanCall", "PreparedToolCall"]

OnStarted = Callable[[int, str], None]
OnChunk = Callable[[str, bytes], Awaitable[None]]
# (is_error, content, structured)
Outcome = tuple[bool, str, object]


class PreparedToolCall(Protocol):
    @property
    def plan(self) -> dict[str, Any]:
        """What will run, as JSON (computed when first asked for)."""
        ...

    @property
    def timeout(self) -> float: ...

    async def run(
        self, executor: Executor, on_started: OnStarted, on_chunk: OnChunk | None = None
    ) -> CommandResult | PlanResult:
        """``on_chunk`` gets output as it arrives (a plan's: what its programs write)."""
        ...

    def run_sync(self, executor: Executor, on_started: OnStarted) -> CommandResult | PlanResult: ...

    def outcome(
        self, result: CommandResult | PlanResult, secrets: tuple[str, ...], budget: int
    ) -> Outcome:
        """Raises a HandleError when the handle's result template fails."""
        ...


class CommandCall:
    """A rendered Command Handle."""

    def __init__(self, handle: CommandHandle, invocation: Invocation, executor: Executor) -> None:
        self.handle = handle
        self.invocation = invocation
        self._executor = executor
        self._plan: dict[str, Any] | None = None

    @property
    def plan(self) -> dict[str, Any]:
        if self._plan is None:
            self._plan = self._executor.describe(self.invocation)
        return self._plan

    @property
    def timeout(self) -> float:
        return self.invocation.timeout

    def _started(self, on_started: OnStarted) -> Callable[[int], None]:
        program = self.invocation.argv[0]
        return lambda pid: on_started(pid, program)

    async def run(
        self, executor: Executor, on_started: OnStarted, on_chunk: OnChunk | None = None
    ) -> CommandResult:
        return await executor.run(self.invocation, on_chunk, on_started=self._started(on_started))

    def run_sync(self, executor: Executor, on_started: OnStarted) -> CommandResult:
        return executor.run_sync(self.invocation, on_started=self._started(on_started))

    def outcome(
        self, result: CommandResult | PlanResult, secrets: tuple[str, ...], budget: int
    ) -> Outcome:
        assert isinstance(result, CommandResult)
        is_error = not result.ok
        if self.handle.has_result_template:
            content, structured = shown(self.handle.shape_result(result.to_json()), secrets)
            return is_error, content, structured
        text = command_content(result, self.invocation.timeout, budget, secrets)
        data = result.to_json()
        del data["argv"]  # never shown by default: it holds nothing the model lacks
        return is_error, text, redact_value(data, secrets)


class PlanCall:
    """A UTCP template: a checked plan, or a 0.x provider's one invocation."""

    def __init__(
        self, prepared: PreparedCall, variables: Mapping[str, str], executor: Executor
    ) -> None:
        self.prepared = prepared
        self._executor = executor
        self._plan: dict[str, Any] | None = None
        self.checked = (
            None
            if prepared.invocation is not None
            else prepare_plan(prepared.plan, prepared.arguments, variables, executor.policy)
        )

    @property
    def plan(self) -> dict[str, Any]:
        if self._plan is None:
            if self.checked is None:
                assert self.prepared.invocation is not None
                self._plan = self._executor.describe(self.prepared.invocation)
            else:
                self._plan = describe_prepared_plan(self.checked)
        return self._plan

    @property
    def timeout(self) -> float:
        if self.prepared.invocation is not None:
            return self.prepared.invocation.timeout
        return self._executor.policy.timeout

    async def run(
        self, executor: Executor, on_started: OnStarted, on_chunk: OnChunk | None = None
    ) -> PlanResult:
        invocation = self.prepared.invocation
        if invocation is not None:
            program = invocation.argv[0]
            result = await executor.run(
                invocation, on_chunk, on_started=lambda p: on_started(p, program)
            )
            return self.prepared.result_of(result)
        assert self.checked is not None
        return await executor.run_prepared_plan(
            self.checked, on_started=on_started, on_chunk=on_chunk
        )

    def run_sync(self, executor: Executor, on_started: OnStarted) -> PlanResult:
        invocation = self.prepared.invocation
        if invocation is not None:
            program = invocation.argv[0]
            result = executor.run_sync(invocation, on_started=lambda p: on_started(p, program))
            return self.prepared.result_of(result)
        assert self.checked is not None
        return executor.run_prepared_plan_sync(self.checked, on_started=on_started)

    def outcome(
        self, result: CommandResult | PlanResult, secrets: tuple[str, ...], budget: int
    ) -> Outcome:
        assert isinstance(result, PlanResult)
        value = redact_value(output_value(self.prepared.plan, result), secrets)
        return not result.ok, plan_content(value, result, self.timeout, secrets), value
