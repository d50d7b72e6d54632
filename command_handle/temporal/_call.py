"""What crosses Temporal: the call, the options of its activity, the names.

Only the standard library here: workflow code imports this module inside
Temporal's sandbox, where it must be deterministic and cheap to load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CALL_ACTIVITY",
    "DEFAULT_MAX_PAYLOAD",
    "HEARTBEAT_INTERVAL",
    "HEARTBEAT_THROTTLE",
    "HEARTBEAT_TIMEOUT",
    "OPTIONS_ACTIVITY",
    "PREVIEW_ACTIVITY",
    "START_MARGIN",
    "WORKER_SHUTDOWN",
    "WORKFLOW_NAME",
    "ToolCall",
    "ToolCallOptions",
]

# Activity and workflow type names: stable strings, so that a worker in another
# language, or a later version of this package, can serve the same queue.
CALL_ACTIVITY = "command_handle.call_tool"
PREVIEW_ACTIVITY = "command_handle.preview_tool"
OPTIONS_ACTIVITY = "command_handle.tool_options"
WORKFLOW_NAME = "command_handle.ToolCallWorkflow"
# The error type of a call stopped because its worker shut down.
WORKER_SHUTDOWN = "WorkerShutdown"

# A running call heartbeats every HEARTBEAT_INTERVAL seconds. The SDK sends at
# most one heartbeat per throttle interval (0.8 x the heartbeat timeout unless
# the worker lowers it), and a worker learns of a cancel only from a heartbeat's
# answer: the worker's throttle is lowered to HEARTBEAT_THROTTLE so that a
# cancel reaches the call within about two seconds, whatever the timeout.
HEARTBEAT_INTERVAL = 0.5
HEARTBEAT_THROTTLE = 1.0
# Without a heartbeat for this long, the server declares the worker lost. Ten
# times the throttle: a busy worker is not mistaken for a dead one.
HEARTBEAT_TIMEOUT = 10.0
# Start-to-close is the tool's own timeout, plus its kill grace, plus this:
# the executor stops the tool first, and the result still has time to travel.
START_MARGIN = 30.0
# A result's JSON is cut to this many bytes: under the SDK's warning size (512
# KiB) with room for the payload's metadata; the server refuses 2 MiB.
DEFAULT_MAX_PAYLOAD = 500_000


@dataclass
class ToolCall:
    """One call of a tool, as a workflow's input or an activity's.

    ``tool`` and ``arguments`` (an object, or its JSON text) come from the model;
    ``context`` (the values ``$context`` reads) and ``principal`` (whose
    credentials the worker resolves) come from the application, and the model
    never sets them. All of it is recorded in the workflow's history, so none of
    it may be a secret: credentials are resolved on the worker, from the
    principal. ``expect_plan`` runs the call only if it would run exactly the
    plan with that hash. ``require_approval`` makes :class:`ToolCallWorkflow`
    wait for an ``approve`` signal carrying the plan hash (at most
    ``approval_timeout_s`` seconds, when given) before anything runs.
    """

    tool: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    context: dict[str, Any] | None = None
    principal: Any = None
    expect_plan: str | None = None
    require_approval: bool = False
    approval_timeout_s: float | None = None


@dataclass
class ToolCallOptions:
    """How the worker's Toolbox says to schedule a call of one tool: its timeout
    and kill grace (seconds), whether it is idempotent (its ``idempotentHint``
    annotation), and the heartbeat timeout the worker was started with."""

    timeout_s: float
    kill_grace_s: float
    idempotent: bool = False
    heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT
