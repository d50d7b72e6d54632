"""Workflow code: :func:`execute_tool_call` for workflow authors, and
:class:`ToolCallWorkflow` for applications that are not writing workflows.

This module runs inside Temporal's workflow sandbox: it imports only the
standard library, temporalio and :mod:`._call`.
"""

from __future__ import annotations

import dataclasses
from builtins import TimeoutError as TimeoutError_  # not Temporal's
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType

with workflow.unsafe.imports_passed_through():
    from ._call import (
        CALL_ACTIVITY,
        OPTIONS_ACTIVITY,
        PREVIEW_ACTIVITY,
        START_MARGIN,
        WORKER_SHUTDOWN,
        WORKFLOW_NAME,
        ToolCall,
        ToolCallOptions,
    )

__all__ = ["IDEMPOTENT_ATTEMPTS", "ToolCallWorkflow", "execute_tool_call"]

# An idempotent tool is tried this often; any other tool once, since running a
# command twice may not be safe.
IDEMPOTENT_ATTEMPTS = 3
# The short activities (options, preview) describe and never run: retrying is safe.
_DESCRIBE = timedelta(seconds=60)
_DESCRIBE_RETRIES = RetryPolicy(maximum_attempts=5)
# A call pinned to the worker that described its plan waits this long for it.
_PINNED_START = timedelta(seconds=60)


def _error(content: str, **structured: Any) -> dict[str, Any]:
    return {"is_error": True, "content": content, "structured": structured or None}


async def execute_tool_call(
    call: ToolCall,
    *,
    options: ToolCallOptions | None = None,
    task_queue: str | None = None,
) -> dict[str, Any]:
    """Run ``call`` as an activity, from workflow code; return what
    ``ToolResult.to_json()`` returns. The defaults come from the worker's own
    Toolbox (one short ``tool_options`` activity, unless ``options`` is given):
    a start-to-close timeout of the tool's timeout plus its kill grace and a
    margin; a heartbeat timeout that the running call's heartbeats keep; one
    attempt unless the tool is annotated ``idempotentHint``. Cancelling the
    workflow cancels the call and waits until the tool's processes are killed.
    A call whose worker was lost (no heartbeat in time) comes back as an
    ``is_error`` result saying so; it is not run again."""
    if options is None:
        options = await workflow.execute_activity(
            OPTIONS_ACTIVITY,
            call.tool,
            task_queue=task_queue,
            retry_policy=_DESCRIBE_RETRIES,
            result_type=ToolCallOptions,
            start_to_close_timeout=_DESCRIBE,
        )
    attempts = IDEMPOTENT_ATTEMPTS if options.idempotent else 1
    limit = options.timeout_s + options.kill_grace_s + START_MARGIN
    try:
        result: dict[str, Any] = await workflow.execute_activity(
            CALL_ACTIVITY,
            call,
            task_queue=task_queue,
            start_to_close_timeout=timedelta(seconds=limit),
            schedule_to_start_timeout=_PINNED_START if task_queue else None,
            heartbeat_timeout=timedelta(seconds=options.heartbeat_timeout_s),
            retry_policy=RetryPolicy(maximum_attempts=attempts),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            result_type=dict,
        )
    except ActivityError as exc:
        cause = exc.cause
        if isinstance(cause, ApplicationError) and cause.type == WORKER_SHUTDOWN:
            return _error(
                f"{cause.message} {_again(attempts)}", error="worker shut down", timeout=None
            )
        if not isinstance(cause, TimeoutError):
            raise
        return _lost(call.tool, cause.type, options, attempts, limit)
    return result


def _lost(
    tool: str, kind: TimeoutType | None, options: ToolCallOptions, attempts: int, limit: float
) -> dict[str, Any]:
    if kind == TimeoutType.HEARTBEAT:
        why = (
            f"the worker running it sent no heartbeat for {options.heartbeat_timeout_s:g} s "
            "(it stopped or lost its connection)"
        )
    elif kind == TimeoutType.SCHEDULE_TO_START:
        why = "the worker that described its plan did not take it (it stopped)"
    else:
        why = f"it did not finish within {limit:g} s"
    return _error(
        f"The call to `{tool}` was lost: {why}. {_again(attempts)}",
        error="lost",
        timeout=None if kind is None else kind.name.lower(),
    )


def _again(attempts: int) -> str:
    if attempts == 1:
        return (
            "It was not run again: running a command twice may not be safe, so check "
            "what it did before calling it again."
        )
    return f"It was tried {attempts} times."


@workflow.defn(name=WORKFLOW_NAME)
class ToolCallWorkflow:
    """One tool call as a workflow: ``run(call)`` returns what
    ``ToolResult.to_json()`` returns. With ``call.require_approval``, the plan is
    described first (query ``plan``), and the call waits for the signal
    ``approve(plan_hash)``, then runs exactly that plan or nothing, on the
    worker that described it; ``deny(reason)`` ends it with nothing run."""

    def __init__(self) -> None:
        self._preview: dict[str, Any] | None = None
        self._decision: tuple[bool, str] | None = None

    @workflow.run
    async def run(self, call: ToolCall) -> dict[str, Any]:
        if not call.require_approval:
            return await execute_tool_call(call)
        preview: dict[str, Any] = await workflow.execute_activity(
            PREVIEW_ACTIVITY,
            call,
            retry_policy=_DESCRIBE_RETRIES,
            result_type=dict,
            start_to_close_timeout=_DESCRIBE,
        )
        if preview.get("plan_hash") is None:
            return _error(str(preview.get("error") or "The call would be refused."))
        self._preview = preview
        wait = call.approval_timeout_s
        try:
            await workflow.wait_condition(
                lambda: self._decision is not None,
                timeout=None if wait is None else timedelta(seconds=wait),
            )
        except TimeoutError_:
            return _error(
                f"No approval for the call to `{call.tool}` arrived within {wait:g} s; "
                "nothing ran.",
                error="not approved",
            )
        assert self._decision is not None
        approved, value = self._decision
        if not approved:
            reason = f" ({value})" if value else ""
            return _error(
                f"The application declined to run this call to `{call.tool}`{reason}; nothing ran.",
                error="denied",
            )
        approved_call = dataclasses.replace(call, expect_plan=value, require_approval=False)
        return await execute_tool_call(approved_call, task_queue=preview.get("task_queue"))

    @workflow.signal(name="approve")
    def approve(self, plan_hash: str) -> None:
        """Run the call if it still renders to the plan with ``plan_hash``."""
        if self._decision is None:
            self._decision = (True, plan_hash)

    @workflow.signal(name="deny")
    def deny(self, reason: str = "") -> None:
        if self._decision is None:
            self._decision = (False, reason)

    @workflow.query(name="plan")
    def plan(self) -> dict[str, Any] | None:
        """``{"plan", "plan_hash", "task_queue"}`` once described; None before."""
        return self._preview
