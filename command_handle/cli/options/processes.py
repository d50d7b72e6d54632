"""Limits on programs that outlive their call (tools with a ``session``), and
their terminal: ``--max-sessions``, ``--max-sessions-per-client``,
``--session-output``, ``--session-idle``, ``--session-lifetime`` (the Policy
fields of those names; ``--max-processes`` is RLIMIT_NPROC, see limits.py),
``--term`` and ``--terminal-size``. In the configuration file: the same
``[policy]`` keys, and ``[terminal]`` ``type`` and ``size``."""

from __future__ import annotations

import argparse
import re
from typing import Any

from .._common import UsageError
from ._group import Settings

RUNNING_ONLY = True
TOOLBOX_ONLY = True  # processes are the Toolbox's (``run`` has no process tools)

_POLICY = {
    "max_sessions": ("--max-sessions", int, "N", "at most N running at once (default 16)"),
    "max_sessions_per_owner": (
        "--max-sessions-per-client",
        int,
        "N",
        "at most N running per client or MCP session (default 4)",
    ),
    "session_output": (
        "--session-output",
        int,
        "BYTES",
        "bytes kept per stream between two reads (default 1 MiB)",
    ),
    "session_idle": (
        "--session-idle",
        float,
        "SECONDS",
        "stop one nobody read or wrote for this long (default 1800)",
    ),
    "session_lifetime": (
        "--session-lifetime",
        float,
        "SECONDS",
        "stop one after this long (default 14400)",
    ),
}
CONFIG_KEYS = {
    **{f"policy.{field}": field for field in _POLICY},
    "terminal.type": "term",
    "terminal.size": "terminal_size",
}


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
    for field, (flag, kind, metavar, text) in _POLICY.items():
        group.add_argument(flag, dest=field, type=kind, metavar=metavar, help=text)
    group.add_argument(
        "--term", type=_term, metavar="TYPE", help="TERM of programs on a terminal (default dumb)"
    )
    group.add_argument(
        "--terminal-size",
        type=_size,
        metavar="COLUMNSxROWS",
        help="their terminal's size (default 80x24)",
    )


def settings(options: argparse.Namespace) -> Settings:
    policy = {
        field: getattr(options, field)
        for field in _POLICY
        if getattr(options, field, None) is not None
    }
    toolbox: dict[str, Any] = {}
    term = getattr(options, "term", None)
    size = getattr(options, "terminal_size", None)
    if isinstance(size, str):  # from the configuration file
        try:
            size = _size(size)
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"[terminal] size: {exc}") from None
    if term is not None:
        try:
            term = _term(term)
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"[terminal] type: {exc}") from None
    if term is not None or size is not None:
        from ...call import Terminal

        columns, rows = size if size is not None else (80, 24)
        toolbox["terminal"] = Terminal(term or "dumb", rows, columns)
    return Settings(policy=policy, toolbox=toolbox)
