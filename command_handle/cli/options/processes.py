"""Limits on programs that outlive their call (tools with a ``session``), and
their terminal: ``--max-processes``, ``--max-processes-per-client``,
``--process-output``, ``--process-idle``, ``--process-lifetime``, ``--term``
and ``--terminal-size``."""

from __future__ import annotations

import argparse
import re
from typing import Any

from ._group import Settings

RUNNING_ONLY = True


def _size(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d{1,4})x(\d{1,4})", text)
    if match is None or not all(1 <= int(part) <= 1000 for part in match.groups()):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not COLUMNSxROWS from 1x1 to 1000x1000, such as 120x40"
        )
    return int(match.group(1)), int(match.group(2))


def _term(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9._+-]{1,64}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a terminal type, such as xterm")
    return text


def add(parser: Any) -> None:
    group = parser.add_argument_group("processes that outlive their call")
    group.add_argument(
        "--max-processes", type=int, metavar="N", help="at most N running at once (default 16)"
    )
    group.add_argument(
        "--max-processes-per-client",
        type=int,
        metavar="N",
        help="at most N running per client or MCP session (default 4)",
    )
    group.add_argument(
        "--process-output",
        type=int,
        metavar="BYTES",
        help="bytes kept per stream between two reads (default 1 MiB)",
    )
    group.add_argument(
        "--process-idle",
        type=float,
        metavar="SECONDS",
        help="stop one nobody read or wrote for this long (default 1800)",
    )
    group.add_argument(
        "--process-lifetime",
        type=float,
        metavar="SECONDS",
        help="stop one after this long (default 14400)",
    )
    group.add_argument(
        "--term", type=_term, metavar="TYPE", help="TERM of programs on a terminal (default dumb)"
    )
    group.add_argument(
        "--terminal-size",
        type=_size,
        metavar="COLUMNSxROWS",
        help="their terminal's size (default 80x24)",
    )


_POLICY = {
    "max_processes": "max_sessions",
    "max_processes_per_client": "max_sessions_per_owner",
    "process_output": "session_output",
    "process_idle": "session_idle",
    "process_lifetime": "session_lifetime",
}


def settings(options: argparse.Namespace) -> Settings:
    policy = {
        field: getattr(options, flag)
        for flag, field in _POLICY.items()
        if getattr(options, flag, None) is not None
    }
    toolbox: dict[str, Any] = {}
    term = getattr(options, "term", None)
    size = getattr(options, "terminal_size", None)
    if term is not None or size is not None:
        from ...call import Terminal

        columns, rows = size if size is not None else (80, 24)
        toolbox["terminal"] = Terminal(term or "dumb", rows, columns)
    return Settings(policy=policy, toolbox=toolbox)
