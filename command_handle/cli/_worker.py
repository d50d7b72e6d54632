"""The ``worker`` subcommand: serve folders of tools as Temporal activities.

It runs until SIGTERM or SIGINT; then it stops polling, lets running calls
finish for ``--shutdown-grace`` seconds, cancels the rest (their process trees
are killed), and exits 0. The exit is ``os._exit`` after flushing: the SDK's
native threads have been seen to abort the interpreter's own exit
(``PyGILState_Release``), and nothing is left to finalise once the worker
has shut down.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import traceback
from typing import Any

from ._common import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, UsageError
from .options import add_toolbox_flags, load_toolbox

__all__ = ["add_worker_parser"]


def _cmd_worker(options: argparse.Namespace) -> int:
    try:
        import temporalio  # noqa: F401
    except ImportError:
        raise UsageError(
            "the worker needs the Temporal SDK: pip install 'command-handle[temporal]'"
        ) from None
    from ..temporal import DEFAULT_MAX_PAYLOAD, HEARTBEAT_TIMEOUT

    if options.heartbeat_timeout is None:
        options.heartbeat_timeout = HEARTBEAT_TIMEOUT
    if options.max_payload is None:
        options.max_payload = DEFAULT_MAX_PAYLOAD
    for name, value in (
        ("--shutdown-grace", options.shutdown_grace),
        ("--heartbeat-timeout", options.heartbeat_timeout),
    ):
        if not value > 0:
            raise UsageError(f"{name} must be a positive number of seconds")
    _check_address(options.temporal_address)
    if options.max_payload < 4096:
        raise UsageError("--max-payload must be at least 4096 bytes")
    toolbox = load_toolbox(options)
    try:
        code = _serve(toolbox, options)
    except BaseException:  # said here: nothing may run after the worker's exit
        traceback.print_exc()
        code = EXIT_FAILED
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


def _check_address(address: str) -> None:
    """HOST:PORT, said before anything connects: the SDK rejects other forms
    with a traceback, and accepts a URL only with a deprecation warning."""
    host, _, port = address.rpartition(":")
    if "://" in address or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(
            f"--temporal-address must be HOST:PORT (a port from 1 to 65535), not {address!r}"
        )


def _serve(toolbox: Any, options: argparse.Namespace) -> int:
    import asyncio

    from ..temporal import WorkerFailed, run_worker

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)

        def ready(own_queue: str) -> None:
            print(
                f"command-handle: worker {os.getpid()} serving {len(toolbox)} tools on task "
                f"queue {options.task_queue!r} at {options.temporal_address} "
                f"(namespace {options.namespace!r}; its own queue {own_queue!r})",
                file=sys.stderr,
                flush=True,
            )

        try:
            await run_worker(
                toolbox,
                address=options.temporal_address,
                task_queue=options.task_queue,
                namespace=options.namespace,
                stop=stop,
                shutdown_grace=options.shutdown_grace,
                heartbeat_timeout=options.heartbeat_timeout,
                max_payload=options.max_payload,
                max_concurrent=options.max_concurrent,
                on_ready=ready,
            )
        except RuntimeError as exc:  # the SDK's connection errors
            if stop.is_set():
                return EXIT_OK
            print(
                f"command-handle: cannot serve on {options.temporal_address}: {exc}",
                file=sys.stderr,
            )
            return EXIT_REFUSED
        except WorkerFailed as exc:
            print(f"command-handle: the worker stopped: {exc}", file=sys.stderr)
            return EXIT_FAILED
        print("command-handle: worker stopped", file=sys.stderr, flush=True)
        return EXIT_OK

    return asyncio.run(main())


def add_worker_parser(commands: Any) -> None:
    worker = commands.add_parser(
        "worker", help="run tool files and folders as Temporal activities (docs/temporal.md)"
    )
    worker.add_argument("paths", nargs="+", metavar="PATH", help="tool files and folders")
    worker.add_argument(
        "--temporal-address", required=True, metavar="HOST:PORT", help="the Temporal frontend"
    )
    worker.add_argument("--task-queue", required=True, metavar="NAME", help="the queue to poll")
    worker.add_argument("--namespace", default="default", help="the namespace (default 'default')")
    worker.add_argument(
        "--shutdown-grace",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="on SIGTERM/SIGINT, how long running calls may finish before they are "
        "cancelled (default 10)",
    )
    worker.add_argument(
        "--heartbeat-timeout",
        type=float,
        default=None,  # command_handle.temporal's, loaded only when the worker runs
        metavar="SECONDS",
        help="declare a call's worker lost after this long without a heartbeat (default 10)",
    )
    worker.add_argument(
        "--max-payload",
        type=int,
        default=None,
        metavar="BYTES",
        help="cut a result's JSON to this size for the history (default 500000)",
    )
    worker.add_argument(
        "--max-concurrent",
        type=int,
        default=None,
        metavar="N",
        help="calls this worker runs at once (the Policy's max_concurrency also applies)",
    )
    add_toolbox_flags(worker)
    worker.set_defaults(run=_cmd_worker)
