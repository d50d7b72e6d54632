"""The one prepared call, and what running it returns.

Every front end (:mod:`command_handle.handle`, :mod:`command_handle.utcp`)
turns its document and the model's arguments into a :class:`PreparedCall`;
:class:`~command_handle.Executor` runs that one type and returns a
:class:`CommandResult` (one program) or a :class:`PlanResult` (a plan's
steps). Nothing in this package spawns a process or belongs to a front end.
"""

from ._command_result import CommandResult
from ._invocation import MASK, Invocation, MaskedView, ShownFields, StreamMode
from ._plan_result import PlanResult, StepResult
from ._prepared import CallKind, PreparedCall, PreparedPlan, plan_hash
from ._session import Session, Terminal

__all__ = [
    "MASK",
    "CallKind",
    "CommandResult",
    "Invocation",
    "MaskedView",
    "PlanResult",
    "PreparedCall",
    "PreparedPlan",
    "Session",
    "ShownFields",
    "StepResult",
    "StreamMode",
    "Terminal",
    "plan_hash",
]
