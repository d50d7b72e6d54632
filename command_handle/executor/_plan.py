"""Plans: checks before the first step, the run, and the results (one entry point)."""

from ._interpreter import run_plan
from ._plan_checks import BASH_DEFAULT_PATH, PreparedPlan, plan_environment, prepare_plan
from ._plan_result import PlanResult, StepResult

__all__ = [
    "BASH_DEFAULT_PATH",
    "PlanResult",
    "PreparedPlan",
    "StepResult",
    "plan_environment",
    "prepare_plan",
    "run_plan",
]
