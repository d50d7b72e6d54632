"""What every subcommand shares: reading arguments, the exit codes, signals."""

from __future__ import annotations

import argparse
import base64
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio

from .. import _json
from ..errors import CommandHandleError

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_REFUSED",
    "Signalled",
    "add_sandbox_flags",
    "UsageError",
    "printable",
    "read_json_argument",
    "read_object",
    "report",
    "run_interruptibly",
    "signals_stop",
    "sandbox_settings",
]

T = TypeVar("T")

# The one exit-code table (docs/handles.md, "The command line").
EXIT_OK = 0  # the program or tool succeeded
EXIT_FAILED = 1  # it ran and failed: non-zero exit, killed by a signal, timed out
EXIT_REFUSED = 2  # refused before anything ran, or a usage error; nothing ran
# 128 + n: this command was stopped by signal n (130 for Ctrl-C); its children are dead.

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class UsageError(Exception):
    """A mistake on the command line or a file that cannot be read: one line, exit 2."""


class Signalled(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def read_json_argument(text: str, what: str) -> object:
    """``--args`` takes JSON text, or ``@path`` to read it from a file (``@-``: stdin)."""
    if text.startswith("@"):
        name = text[1:]
        try:
            data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        except OSError as exc:
            raise UsageError(f"{what}: cannot read {name}: {exc.strerror}") from None
    else:
        data = text.encode("utf-8", "surrogateescape")
    try:
        return _json.loads(data)
    except _json.JSONDecodeError as exc:
        raise UsageError(f"{what} is not valid JSON: {exc.message}") from None


def read_object(text: str | None, what: str) -> dict[str, object]:
    value = {} if text is None else read_json_argument(text, what)
    if not isinstance(value, dict):
        raise UsageError(f"{what} must be a JSON object")
    return value


def printable(value: object) -> object:
    """Binary Values have no JSON form; show them as base64 text for the terminal."""
    if isinstance(value, bytes):
        return {"$binary": base64.b64encode(value).decode()}
    if isinstance(value, list):
        return [printable(v) for v in value]
    if isinstance(value, dict):
        return {k: printable(v) for k, v in value.items()}
    return value


def report(exc: CommandHandleError) -> int:
    print(f"command-handle: {type(exc).__name__}: {exc}", file=sys.stderr)
    return EXIT_REFUSED


@contextmanager
def signals_stop() -> Iterator[None]:
    """Within the block, SIGTERM, SIGINT and SIGHUP raise :class:`Signalled` in
    this thread, for blocking work that runs its own event loop (a Toolbox's
    discovery at load): the loop's tasks are cancelled as the exception leaves
    it, which kills the children's groups. By default SIGTERM would end the
    process at once and leave them running."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise Signalled(signum)

    previous = {signum: signal.signal(signum, stop) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_interruptibly(call: Callable[[], Awaitable[T]]) -> T:
    """Run ``call`` on an event loop that turns SIGTERM, SIGINT and SIGHUP into a
    cancellation: the children's groups are killed, then :class:`Signalled` is
    raised for the caller to exit with 128 + n, without a traceback."""
    received: list[int] = []
    outcome: list[T] = []

    async def main() -> None:
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                with anyio.open_signal_receiver(*SIGNALS) as signals:
                    async for signum in signals:
                        received.append(signum)
                        group.cancel_scope.cancel()
                        return

            async def work() -> None:
                outcome.append(await call())
                group.cancel_scope.cancel()

            group.start_soon(watch)
            group.start_soon(work)

    try:
        anyio.run(main)
    except BaseExceptionGroup as grouped:
        first: BaseException = grouped
        while isinstance(first, BaseExceptionGroup) and len(first.exceptions) == 1:
            first = first.exceptions[0]
        raise first from None
    if received:
        raise Signalled(received[0])
    return outcome[0]


def add_sandbox_flags(parser: Any) -> None:
    """``--sandbox MODE --workspace DIR [--network]``, the same on every command that runs."""
    parser.add_argument(
        "--sandbox",
        choices=("off", "read-only", "workspace-write"),
        default="off",
        help="confine the program (docs/sandbox.md)",
    )
    parser.add_argument(
        "--workspace", help="the workspace: writable with workspace-write, the default directory"
    )
    parser.add_argument(
        "--network",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="allow TCP connect and bind in a sandbox (off by default when sandboxed; "
        "--no-network overrides a configuration file)",
    )


def sandbox_settings(options: Any) -> dict[str, Any]:
    """The Policy fields the sandbox flags set."""
    return {
        "sandbox": options.sandbox,
        "workspace": options.workspace,
        "network": options.network,
    }
