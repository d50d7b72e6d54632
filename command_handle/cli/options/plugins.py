"""``--allow-bash-tools``: load bash tool plugins (off by default).

It changes which tools load, so ``tools`` and ``validate`` take it too.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._group import Settings

TOOLBOX_ONLY = True
CONFIG_KEYS = {"plugins.allow_bash_tools": "allow_bash_tools"}


def add(parser: Any) -> None:
    parser.add_argument(
        "--allow-bash-tools",
        action="store_true",
        help="load bash tool plugins (.bash files, agent_plugin.json folders, configs' plugins)",
    )


def settings(options: argparse.Namespace) -> Settings:
    if not getattr(options, "allow_bash_tools", False):
        return Settings()
    return Settings(toolbox={"allow_bash_tools": True})
