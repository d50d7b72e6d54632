"""``--sandbox MODE --workspace DIR --network``: docs/sandbox.md."""

from __future__ import annotations

import argparse
from typing import Any

from .._common import add_sandbox_flags, sandbox_settings
from ._group import Settings

RUNNING_ONLY = True
CONFIG_KEYS = {
    "policy.sandbox": "sandbox",
    "policy.workspace": "workspace",
    "policy.network": "network",
}
CONFIG_PATHS = frozenset({"policy.workspace"})


def add(parser: Any) -> None:
    add_sandbox_flags(parser)


def settings(options: argparse.Namespace) -> Settings:
    if not hasattr(options, "sandbox"):
        return Settings()
    return Settings(policy=sandbox_settings(options))
