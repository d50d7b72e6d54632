"""A worker that serves a Toolbox on a task queue.

:func:`tool_worker` builds the SDK's ``Worker`` for an application's own
process; :func:`run_worker` is what ``command-handle worker`` runs: it
connects, polls the shared queue and a queue of its own (for approved calls,
which run where their plan was described), and on ``stop`` shuts down: new
tasks stop, running calls get ``shutdown_grace`` seconds to finish, then are
cancelled, which kills their process trees.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from ..errors import CommandHandleError
from ._activities import ToolActivities
from ._call import HEARTBEAT_THROTTLE, HEARTBEAT_TIMEOUT
from ._payload import DEFAULT_MAX_PAYLOAD
from ._workflow import ToolCallWorkflow

if TYPE_CHECKING:
    from ..toolbox import Toolbox

__all__ = ["DEFAULT_SHUTDOWN_GRACE", "WorkerFailed", "run_worker", "tool_worker", "workflow_runner"]

DEFAULT_SHUTDOWN_GRACE = 10.0


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandbox with this package passed through: its workflow code is
    deterministic, and loading it again in every sandbox would be slow."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules("command_handle")
    )


def tool_worker(
    client: Client,
    task_queue: str,
    activities: ToolActivities,
    *,
    workflows: bool | Sequence[type] = True,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
    **worker_options: Any,
) -> Worker:
    """A ``Worker`` that runs ``activities`` and hosts workflows (``True``:
    :class:`ToolCallWorkflow`; or the application's own list; ``False``: none),
    with the heartbeat throttle lowered so that a cancel reaches a running call
    within seconds. Other ``Worker`` options pass through."""
    worker_options.setdefault(
        "max_heartbeat_throttle_interval", timedelta(seconds=HEARTBEAT_THROTTLE)
    )
    worker_options.setdefault(
        "default_heartbeat_throttle_interval", timedelta(seconds=HEARTBEAT_THROTTLE)
    )
    if workflows:
        hosted = [ToolCallWorkflow] if workflows is True else list(workflows)
        worker_options["workflows"] = hosted
        worker_options.setdefault("workflow_runner", workflow_runner())
    return Worker(
        client,
        task_queue=task_queue,
        activities=list(activities.all),
        graceful_shutdown_timeout=timedelta(seconds=shutdown_grace),
        **worker_options,
    )


async def run_worker(
    toolbox: Toolbox,
    *,
    address: str,
    task_queue: str,
    stop: asyncio.Event,
    namespace: str = "default",
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT,
    max_payload: int = DEFAULT_MAX_PAYLOAD,
    max_concurrent: int | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``toolbox`` on ``task_queue`` until ``stop`` is set, then shut down
    as the module says. ``on_ready`` gets the worker's own queue once polling."""
    client = await Client.connect(address, namespace=namespace)
    own_queue = f"{task_queue}/{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
    activities = ToolActivities(
        toolbox,
        max_payload=max_payload,
        heartbeat_timeout=heartbeat_timeout,
        own_task_queue=own_queue,
    )
    limits: dict[str, Any] = {}
    if max_concurrent is not None:
        limits["max_concurrent_activities"] = max_concurrent
    shared = tool_worker(client, task_queue, activities, shutdown_grace=shutdown_grace, **limits)
    pinned = tool_worker(
        client, own_queue, activities, workflows=False, shutdown_grace=shutdown_grace, **limits
    )
    runs = [asyncio.create_task(worker.run()) for worker in (shared, pinned)]
    stopped = asyncio.create_task(stop.wait())
    try:
        if on_ready is not None:
            on_ready(own_queue)
        # A worker's run ends early only when it failed (the server went away
        # for good): then stop too, and say why.
        await asyncio.wait([*runs, stopped], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        # Both at once: each waits up to the grace for its running calls.
        await asyncio.gather(shared.shutdown(), pinned.shutdown(), return_exceptions=True)
        await asyncio.gather(*runs, return_exceptions=True)
        # Whatever the Toolbox still runs (a program started past its call by
        # the application's own use of it) ends with the worker.
        await toolbox.aclose()
    for run in runs:
        if run.done() and not run.cancelled() and run.exception() is not None:
            raise WorkerFailed(str(run.exception())) from run.exception()


class WorkerFailed(CommandHandleError):
    """A worker stopped polling for a reason of its own (the server is gone)."""
