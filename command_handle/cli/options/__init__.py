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

from . import (
    config,
    confinement,
    credentials,
    environment,
    limits,
    plugins,
    processes,
    programs,
    sandbox,
    tool_config,
    variables,
)
from ._group import OptionGroup, Settings
from .config import apply_config

if TYPE_CHECKING:
    from ...policy import Policy
    from ...toolbox import Toolbox

__all__ = [
    "GROUPS",
    "OptionGroup",
    "Settings",
    "add_toolbox_flags",
    "apply_config",
    "load_settings",
    "load_toolbox",
    "policy_of",
]

# ``config`` first: ``--config FILE`` is read before the others (its values
# become their defaults, see config.py).
GROUPS: tuple[OptionGroup, ...] = (
    config,
    sandbox,
    confinement,
    environment,
    programs,
    limits,
    credentials,
    plugins,
    tool_config,
    variables,
    processes,
)


def add_toolbox_flags(parser: Any, *, running: bool = True, toolbox: bool = True) -> None:
    """Add every group's flags; ``running=False`` (``tools``, ``validate``) adds
    only the groups that change which tools load, not how they run;
    ``toolbox=False`` (``run``, one handle) leaves out the Toolbox's own."""
    for group in GROUPS:
        if not running and getattr(group, "RUNNING_ONLY", False):
            continue
        if not toolbox and getattr(group, "TOOLBOX_ONLY", False):
            continue
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
    tools' schemas and the manuals' discovery run under, whether bash tools
    may load, and the variables discovery reads."""
    from ...policy import Policy
    from ...toolbox import manual_discovery

    settings = _collected(options)
    policy = Policy(**settings.policy)
    variables = settings.toolbox.get("variables")
    files = settings.toolbox.get("variable_files", ())
    return {
        "policy": policy,
        "allow_bash_tools": bool(settings.toolbox.get("allow_bash_tools", False)),
        "discover": manual_discovery(policy, variables, files),
    }


def load_toolbox(
    options: argparse.Namespace, paths: list[str] | None = None, **extra: Any
) -> Toolbox:
    """The Toolbox the flags describe, loaded from ``paths`` (default ``options.paths``);
    ``extra`` are further :meth:`Toolbox.load` keywords (``events``)."""
    from ...policy import Policy
    from ...toolbox import Toolbox
    from .._common import signals_stop

    settings = _collected(options)
    with signals_stop():  # loading runs discovery commands: a signal must kill them
        return Toolbox.load(
            *(options.paths if paths is None else paths),
            policy=Policy(**settings.policy),
            **settings.toolbox,
            **extra,
        )
