"""Per-call limits: ``--timeout``, ``--max-output``, ``--kill-grace``,
``--max-concurrency``, the children's resource limits and ``--cgroup-per-call``."""

from __future__ import annotations

import argparse
from typing import Any

from ._group import Settings

RUNNING_ONLY = True

# Policy field -> (flag, type, help)
_NUMBERS: dict[str, tuple[str, type, str]] = {
    "timeout": ("--timeout", float, "seconds per call, and the cap on a handle's timeout"),
    "max_output": ("--max-output", int, "bytes kept per output stream"),
    "kill_grace": ("--kill-grace", float, "seconds between SIGTERM and SIGKILL"),
    "max_concurrency": ("--max-concurrency", int, "programs run at once"),
    "max_cpu_seconds": ("--max-cpu-seconds", int, "CPU seconds per program (RLIMIT_CPU)"),
    "max_memory": ("--max-memory", int, "bytes of address space per program (RLIMIT_AS)"),
    "max_processes": ("--max-processes", int, "processes of the user (RLIMIT_NPROC)"),
}
CONFIG_KEYS = {f"policy.{field}": field for field in (*_NUMBERS, "cgroup_per_call")}


def add(parser: Any) -> None:
    for field, (flag, kind, text) in _NUMBERS.items():
        parser.add_argument(flag, dest=field, type=kind, metavar="N", help=text)
    parser.add_argument(
        "--cgroup-per-call",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a cgroup per call, killed with it (cgroup v2)",
    )


def settings(options: argparse.Namespace) -> Settings:
    fields = (*_NUMBERS, "cgroup_per_call")
    given = {field: getattr(options, field, None) for field in fields}
    return Settings(policy={field: value for field, value in given.items() if value is not None})
