"""The ``command-handle`` command line: one entry point, :func:`main`.

Exit codes (one table for every subcommand, docs/handles.md): 0 success; 1
the program or tool ran and failed; 2 refused before anything ran, a usage
error, or an invalid file; 128 + n when stopped by signal n, after the
children were killed (141 when the reader of stdout went away); the servers
(``mcp``, ``worker``) exit 0 on the signals that stop them.
``run --raw`` exits with the program's own code instead.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from ..errors import AfterRunError, CommandHandleError
from ._common import EXIT_FAILED, EXIT_REFUSED, Signalled, UsageError, report
from ._handles import add_handle_parsers
from ._mcp import add_mcp_parser
from ._tools import add_tools_parsers
from ._utcp import add_utcp_parser
from ._worker import add_worker_parser

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="command-handle",
        description="Run command-line programs for AI agents safely.",
        epilog="exit codes: 0 success, 1 the program or tool failed, "
        "2 refused or usage error, 128+n stopped by signal n",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"command-handle {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    add_handle_parsers(commands)
    add_tools_parsers(commands)
    add_mcp_parser(commands)
    add_utcp_parser(commands)
    add_worker_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, where a closed pipe can still be caught
    except BrokenPipeError:
        return _closed_pipe()
    return code


def _closed_pipe() -> int:
    """The reader went away (``render ... | head``): exit quietly, as a program
    killed by SIGPIPE would, with nothing more written to the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush finds no pipe
    except (OSError, ValueError):
        pass
    return 128 + signal.SIGPIPE


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    arguments = None if argv is None else list(argv)
    options = parser.parse_args(arguments)
    try:
        if getattr(options, "config", None):
            from .options import apply_config

            options = apply_config(parser, arguments, options)
        code: int = options.run(options)
    except AfterRunError as exc:  # it ran; what came after failed
        print(f"command-handle: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except CommandHandleError as exc:
        return report(exc)
    except UsageError as exc:
        print(f"command-handle: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except BrokenPipeError:
        raise  # main() exits quietly
    except OSError as exc:  # a file named on the command line
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"command-handle: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_REFUSED
    except Signalled as stop:
        return 128 + stop.signum
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
