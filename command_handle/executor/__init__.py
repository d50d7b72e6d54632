"""The executor: the only part of the project that spawns processes.

:class:`Executor` runs the one prepared call every front end produces
(:class:`~command_handle.call.PreparedCall`): ``run`` (trio or asyncio),
``run_sync`` (threads) and ``stream``; ``call``, ``call_sync`` and
``stream(handle, args)`` render a Command Handle first.
"""

from ..call import CommandResult, PlanResult, PreparedCall, StepResult, plan_hash
from ._executor import Event, EventStream, Executor, HandleSource, OnStarted
from ._landlock import support as sandbox_support

__all__ = [
    "CommandResult",
    "Event",
    "EventStream",
    "Executor",
    "HandleSource",
    "OnStarted",
    "PlanResult",
    "PreparedCall",
    "StepResult",
    "plan_hash",
    "sandbox_support",
]
