"""The executor: the only part of the project that spawns processes.

:class:`Executor` is the entry point: ``call`` (trio or asyncio), ``call_sync``
(threads), ``stream``, and ``run_plan``/``run_plan_sync`` for translated plans.
"""

from ._call_plan import describe_invocation, describe_prepared_plan, plan_hash
from ._executor import Event, EventStream, Executor, HandleSource
from ._landlock import support as sandbox_support
from ._plan_checks import PreparedPlan, plan_environment, prepare_plan
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
    "PreparedPlan",
    "StepResult",
    "describe_invocation",
    "describe_prepared_plan",
    "plan_environment",
    "plan_hash",
    "prepare_plan",
    "run_invocation",
    "run_invocation_sync",
    "sandbox_support",
]
