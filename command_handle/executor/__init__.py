"""The executor: the only part of the project that spawns processes."""

from ._executor import Event, Executor
from ._process import run_invocation
from ._result import CommandResult

__all__ = ["CommandResult", "Event", "Executor", "run_invocation"]
