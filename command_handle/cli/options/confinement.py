"""What a sandbox keeps out and lets in: ``--deny-read PATH``,
``--writable-root DIR``, ``--sandbox-backend``, ``--no-sandbox-required``
(docs/sandbox.md)."""

from __future__ import annotations

import argparse
from typing import Any

from ._group import Settings

RUNNING_ONLY = True

CONFIG_KEYS = {
    "policy.deny_read": "deny_read",
    "policy.writable_roots": "writable_root",
    "policy.sandbox_backend": "sandbox_backend",
    "policy.sandbox_required": "sandbox_required",
}
CONFIG_PATHS = frozenset({"policy.deny_read", "policy.writable_roots"})


def add(parser: Any) -> None:
    parser.add_argument(
        "--deny-read",
        action="append",
        metavar="PATH",
        help="a path a confined program may not read (~ is the home directory); repeat",
    )
    parser.add_argument(
        "--writable-root",
        action="append",
        metavar="DIR",
        help="another directory workspace-write may write; repeat",
    )
    parser.add_argument(
        "--sandbox-backend",
        choices=("landlock", "bubblewrap"),
        help="landlock (default) or bubblewrap (new PID and network namespaces)",
    )
    parser.add_argument(
        "--sandbox-required",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="refuse to run where the sandbox cannot be enforced (default: yes)",
    )


def settings(options: argparse.Namespace) -> Settings:
    policy: dict[str, Any] = {}
    for field, dest in (("deny_read", "deny_read"), ("writable_roots", "writable_root")):
        value = getattr(options, dest, None)
        if value:
            policy[field] = tuple(value)
    for field in ("sandbox_backend", "sandbox_required"):
        value = getattr(options, field, None)
        if value is not None:
            policy[field] = value
    return Settings(policy=policy)
