"""The executor: the only part of the project that spawns processes."""

from ._executor import Event, Executor, run_in_guest
from ._plan import PlanResult, StepResult
from ._process import run_invocation
from ._result import CommandResult

__all__ = [
    "CommandResult",
    "Event",
    "Executor",
    "PlanResult",
    "StepResult",
    "run_in_guest",
    "run_invocation",
]
