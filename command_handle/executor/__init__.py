"""The executor: the only part of the project that spawns processes.

:class:`Executor` runs the one prepared call every front end produces
(:class:`~command_handle.call.PreparedCall`): ``run`` (trio or asyncio),
``run_sync`` (threads) and ``stream``; ``call``, ``call_sync`` and
``stream(handle, args)`` render a Command Handle first. ``start`` and
``start_sync`` start one that outlives the call, as a ``Process``
(docs/processes.md).
"""

from typing import TYPE_CHECKING

from ..call import CommandResult, PlanResult, PreparedCall, StepResult, plan_hash
from ._executor import ANY_OWNER, Event, EventStream, Executor, HandleSource, OnStarted
from ._landlock import support as sandbox_support

if TYPE_CHECKING:
    from ._session import Process, ProcessOutput

__all__ = [
    "ANY_OWNER",
    "CommandResult",
    "Event",
    "EventStream",
    "Executor",
    "HandleSource",
    "OnStarted",
    "PlanResult",
    "PreparedCall",
    "Process",
    "ProcessOutput",
    "StepResult",
    "plan_hash",
    "sandbox_support",
]


def __getattr__(name: str) -> object:
    # The process machinery loads with the first process, not with the executor.
    if name in ("Process", "ProcessOutput"):
        from . import _session

        return getattr(_session, name)
    raise AttributeError(name)
