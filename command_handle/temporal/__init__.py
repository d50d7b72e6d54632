"""Tool calls as Temporal activities, on workers anywhere (the ``temporal`` extra).

For applications that are not writing workflows, start
:class:`ToolCallWorkflow` with a :class:`ToolCall`; its result is what
``ToolResult.to_json()`` returns::

    result = await client.execute_workflow(
        ToolCallWorkflow.run, ToolCall("word-count", {"text": "a b"}),
        id="call-1", task_queue="tools",
    )

Workflow authors call :func:`execute_tool_call` from their own workflows.
Workers run ``command-handle worker PATH... --temporal-address HOST:PORT
--task-queue NAME``, or, in an application's own process, :func:`tool_worker`
with :class:`ToolActivities`. docs/temporal.md tells the whole story.

Names load on first use: workflow code imports this package inside Temporal's
sandbox, where only :mod:`._call` and :mod:`._workflow` are needed.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._activities import MAX_PROGRESS_LINE, ToolActivities
    from ._call import (
        CALL_ACTIVITY,
        DEFAULT_MAX_PAYLOAD,
        HEARTBEAT_INTERVAL,
        HEARTBEAT_THROTTLE,
        HEARTBEAT_TIMEOUT,
        OPTIONS_ACTIVITY,
        PREVIEW_ACTIVITY,
        START_MARGIN,
        WORKER_SHUTDOWN,
        WORKFLOW_NAME,
        ToolCall,
        ToolCallOptions,
    )
    from ._payload import encoded_size, fit_result
    from ._worker import (
        DEFAULT_SHUTDOWN_GRACE,
        WorkerFailed,
        run_worker,
        tool_worker,
        workflow_runner,
    )
    from ._workflow import IDEMPOTENT_ATTEMPTS, ToolCallWorkflow, execute_tool_call

_WHERE = {
    "MAX_PROGRESS_LINE": "_activities",
    "ToolActivities": "_activities",
    "CALL_ACTIVITY": "_call",
    "HEARTBEAT_INTERVAL": "_call",
    "HEARTBEAT_THROTTLE": "_call",
    "HEARTBEAT_TIMEOUT": "_call",
    "OPTIONS_ACTIVITY": "_call",
    "PREVIEW_ACTIVITY": "_call",
    "START_MARGIN": "_call",
    "WORKFLOW_NAME": "_call",
    "WORKER_SHUTDOWN": "_call",
    "ToolCall": "_call",
    "ToolCallOptions": "_call",
    "DEFAULT_MAX_PAYLOAD": "_call",
    "encoded_size": "_payload",
    "fit_result": "_payload",
    "DEFAULT_SHUTDOWN_GRACE": "_worker",
    "WorkerFailed": "_worker",
    "run_worker": "_worker",
    "tool_worker": "_worker",
    "workflow_runner": "_worker",
    "IDEMPOTENT_ATTEMPTS": "_workflow",
    "ToolCallWorkflow": "_workflow",
    "execute_tool_call": "_workflow",
}

__all__ = [
    "CALL_ACTIVITY",
    "DEFAULT_MAX_PAYLOAD",
    "DEFAULT_SHUTDOWN_GRACE",
    "HEARTBEAT_INTERVAL",
    "HEARTBEAT_THROTTLE",
    "HEARTBEAT_TIMEOUT",
    "IDEMPOTENT_ATTEMPTS",
    "MAX_PROGRESS_LINE",
    "OPTIONS_ACTIVITY",
    "PREVIEW_ACTIVITY",
    "START_MARGIN",
    "WORKER_SHUTDOWN",
    "WORKFLOW_NAME",
    "ToolActivities",
    "ToolCall",
    "ToolCallOptions",
    "ToolCallWorkflow",
    "WorkerFailed",
    "encoded_size",
    "execute_tool_call",
    "fit_result",
    "run_worker",
    "tool_worker",
    "workflow_runner",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
