"""The activities: a Toolbox's calls, run on a worker.

:class:`ToolActivities` holds the worker's Toolbox; its three methods are the
activities a worker registers (``ToolActivities(toolbox).all``):

- ``command_handle.call_tool`` runs one :class:`ToolCall` with
  :meth:`Toolbox.call` and returns ``ToolResult.to_json()``, cut to the payload
  limit. While it runs it heartbeats the latest output line (redacted by the
  Toolbox); a cancel delivered with a heartbeat's answer cancels the call, and
  the executor kills the tool's process tree.
- ``command_handle.preview_tool`` returns the plan and its hash, for approval.
- ``command_handle.tool_options`` says how to schedule a call of a tool.

Credentials are resolved here, on the worker, from the call's principal: the
history sees the principal, never the credential. An unexpected error is
reported by its type alone (its message and chained causes may hold anything),
and logged on the worker.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ._call import (
    CALL_ACTIVITY,
    HEARTBEAT_INTERVAL,
    HEARTBEAT_TIMEOUT,
    OPTIONS_ACTIVITY,
    PREVIEW_ACTIVITY,
    WORKER_SHUTDOWN,
    ToolCall,
    ToolCallOptions,
)
from ._payload import DEFAULT_MAX_PAYLOAD, fit_result

if TYPE_CHECKING:
    from ..toolbox import Toolbox

__all__ = ["MAX_PROGRESS_LINE", "WORKER_SHUTDOWN", "ToolActivities"]

logger = logging.getLogger("command_handle.temporal")

# A heartbeat carries the latest output line, cut to its end: heartbeats are
# frequent and each one is a payload.
MAX_PROGRESS_LINE = 1024


class _Progress:
    """The latest output line and how many there were, for the heartbeat."""

    def __init__(self) -> None:
        self.lines = 0
        self.stream = ""
        self.last = ""

    async def __call__(self, stream: str, line: str) -> None:
        self.lines += 1
        self.stream = stream
        self.last = line[-MAX_PROGRESS_LINE:]

    def details(self) -> dict[str, Any]:
        return {"lines": self.lines, "stream": self.stream, "line": self.last}


class ToolActivities:
    """The activities of one worker's Toolbox. ``max_payload`` bounds a result's
    JSON in bytes; ``heartbeat_timeout`` is what ``tool_options`` tells the
    workflow to schedule with (keep it several times the worker's heartbeat
    throttle interval). ``own_task_queue``, when the worker also polls a queue
    of its own, is returned with a preview: the approved call then runs on the
    worker that described its plan (a plan names the program file's device and
    inode, which differ from host to host)."""

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        max_payload: int = DEFAULT_MAX_PAYLOAD,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT,
        own_task_queue: str | None = None,
    ) -> None:
        self.toolbox = toolbox
        self.max_payload = max_payload
        self.heartbeat_timeout = heartbeat_timeout
        self.own_task_queue = own_task_queue

    @property
    def all(self) -> Sequence[Callable[..., Any]]:
        """The activity functions, for ``Worker(activities=...)``."""
        return [self.call_tool, self.preview_tool, self.tool_options]

    def keeps_running(self, name: str) -> str | None:
        """Why a call of ``name`` is refused here, when its tool has a ``session``:
        its program would outlive the call on this worker, while the queue may
        send the next call (``process_read``, ``process_stop``) to any other,
        and nothing would stop it."""
        if name not in self.toolbox or self.toolbox[name].session is None:
            return None
        return (
            f"The tool `{name}` keeps its program running after the call returns, which "
            "a call through Temporal cannot offer: the next call may reach another worker, "
            "and nothing would stop the program. Nothing ran; serve this tool with "
            "`command-handle mcp` instead."
        )

    @activity.defn(name=CALL_ACTIVITY)
    async def call_tool(self, call: ToolCall) -> dict[str, Any]:
        refused = self.keeps_running(call.tool)
        if refused is not None:
            return {"is_error": True, "content": refused, "structured": {"error": "session"}}
        progress = _Progress()

        async def beat() -> None:
            while True:
                activity.heartbeat(progress.details())
                await asyncio.sleep(HEARTBEAT_INTERVAL)

        beating = asyncio.create_task(beat())
        try:
            result = await self.toolbox.call(
                call.tool,
                call.arguments,
                call.principal,
                context=call.context,
                expect_plan=call.expect_plan,
                on_output=progress,
            )
        except asyncio.CancelledError:
            # The executor has killed the tool's process tree. A cancel the
            # workflow asked for is reported as such; one of a worker shutting
            # down is a failure the workflow can tell apart.
            if activity.is_worker_shutdown():
                raise ApplicationError(
                    f"The worker running the call to `{call.tool}` shut down before it "
                    "finished; the tool was stopped.",
                    type=WORKER_SHUTDOWN,
                ) from None
            raise
        except Exception as exc:
            raise _opaque(exc, call.tool) from None
        finally:
            beating.cancel()
        return fit_result(result.to_json(), self.max_payload)

    @activity.defn(name=PREVIEW_ACTIVITY)
    async def preview_tool(self, call: ToolCall) -> dict[str, Any]:
        """``{"plan", "plan_hash", "error", "task_queue"}``: the plan (credentials
        masked) and its hash, or why the call would be refused; and the queue of
        the worker that made it, if it has one."""
        refused = self.keeps_running(call.tool)
        if refused is not None:
            return {"plan": None, "plan_hash": None, "error": refused, "task_queue": None}
        try:
            shown = await self.toolbox.preview(
                call.tool, call.arguments, call.principal, context=call.context
            )
        except Exception as exc:
            raise _opaque(exc, call.tool) from None
        return {
            "plan": None if shown.plan is None else dict(shown.plan),
            "plan_hash": shown.plan_hash,
            "error": shown.error,
            "task_queue": self.own_task_queue,
        }

    @activity.defn(name=OPTIONS_ACTIVITY)
    async def tool_options(self, name: str) -> ToolCallOptions:
        """The tool's timeout (its own, capped by the Policy), the Policy's kill
        grace, whether the tool is idempotent, and the heartbeat timeout. An
        unknown tool gets the Policy's timeout: the call itself says it is unknown."""
        policy = self.toolbox.policy
        timeout = policy.timeout
        idempotent = False
        if name in self.toolbox:
            tool = self.toolbox[name]
            own = tool.handle.timeout if tool.handle is not None else None
            if own:
                timeout = min(own, policy.timeout)
            idempotent = bool((tool.annotations or {}).get("idempotentHint", False))
        return ToolCallOptions(
            timeout_s=timeout,
            kill_grace_s=policy.kill_grace,
            idempotent=idempotent,
            heartbeat_timeout_s=self.heartbeat_timeout,
        )


def _opaque(exc: Exception, tool: str) -> ApplicationError:
    """An error for the history that names the type alone; the worker logs the rest."""
    # The traceback's frames, not the message: a message may quote anything.
    frames = "".join(traceback.format_tb(exc.__traceback__))
    logger.error("the call of %s raised %s\n%s", tool, type(exc).__name__, frames)
    return ApplicationError(
        f"The worker could not run the call of `{tool}` ({type(exc).__name__}); "
        "its log has the details.",
        type=type(exc).__name__,
        non_retryable=True,
    )
