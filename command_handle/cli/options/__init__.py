"""The options every toolbox command takes (``tools``, ``validate``, ``call``,
``mcp``, and later ``worker``), as a table of small groups.

Each group is one module with ``add(parser)`` and ``settings(options)``; the
settings name the part they go to: ``policy`` (Policy fields) or ``toolbox``
(keyword arguments of :meth:`Toolbox.load`). A new setting is one new module
added to :data:`GROUPS`, and every command that loads a toolbox gets it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from . import credentials, environment, plugins, sandbox, tool_config
from ._group import OptionGroup, Settings

if TYPE_CHECKING:
    from ...policy import Policy
    from ...toolbox import Toolbox

__all__ = [
    "GROUPS",
    "OptionGroup",
    "Settings",
    "add_toolbox_flags",
    "load_settings",
    "load_toolbox",
    "policy_of",
]

GROUPS: tuple[OptionGroup, ...] = (sandbox, environment, credentials, plugins, tool_config)


def add_toolbox_flags(parser: Any, *, running: bool = True) -> None:
    """Add every group's flags; ``running=False`` (``tools``, ``validate``) adds
    only the groups that change which tools load, not how they run."""
    for group in GROUPS:
        if running or not getattr(group, "RUNNING_ONLY", False):
            group.add(parser)


def _collected(options: argparse.Namespace) -> Settings:
    merged = Settings()
    for group in GROUPS:
        merged.update(group.settings(options))
    return merged


def policy_of(options: argparse.Namespace) -> Policy:
    from ...policy import Policy

    return Policy(**_collected(options).policy)


def load_settings(options: argparse.Namespace) -> dict[str, Any]:
    """What decides which tools load (for ``validate``): the Policy the bash
    tools' schemas run under, and whether bash tools may load."""
    from ...policy import Policy

    settings = _collected(options)
    return {
        "policy": Policy(**settings.policy),
        "allow_bash_tools": bool(settings.toolbox.get("allow_bash_tools", False)),
    }


def load_toolbox(
    options: argparse.Namespace, paths: list[str] | None = None, **extra: Any
) -> Toolbox:
    """The Toolbox the flags describe, loaded from ``paths`` (default
    ``options.paths``); ``extra`` are more keyword arguments of ``Toolbox.load``."""
    from ...policy import Policy
    from ...toolbox import Toolbox

    settings = _collected(options)
    return Toolbox.load(
        *(options.paths if paths is None else paths),
        policy=Policy(**settings.policy),
        **settings.toolbox,
        **extra,
    )
