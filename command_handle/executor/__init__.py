"""The executor: the only part of the project that spawns processes.

:class:`Executor` is the entry point: ``call`` (trio or asyncio), ``call_sync``
(threads), ``stream``, and ``run_plan``/``run_plan_sync`` for translated plans.
"""

from ._executor import Event, EventStream, Executor, HandleSource
from ._landlock import support as sandbox_support
from ._plan_checks import plan_environment, prepare_plan
from ._plan_result import PlanResult, StepResult
from ._process import run_invocation, run_invocation_sync
from ._result import CommandResult

__all__ = [
    "CommandResult",
    "Event",
    "EventStream",
    "Executor",
    "HandleSource",
    "PlanResult",
    "StepResult",
    "plan_environment",
    "prepare_plan",
    "run_invocation",
    "run_invocation_sync",
    "sandbox_support",
]
