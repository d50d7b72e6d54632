"""``--tool-config KEY=VALUE``: the application's configuration for bash tools.

A tool reads a key it lists in ``config_keys`` as the variable
``AGENT_TOOL_CONFIG_<KEY>``; ``working_directory`` is where it runs. Values
are text, given by whoever runs the command, never by the model.
"""

from __future__ import annotations

import argparse
from typing import Any

from .._common import UsageError
from ._group import Settings

RUNNING_ONLY = True
TOOLBOX_ONLY = True
# ``[tool_config]``: ``working_directory = "/srv/app"``, ``smtpUser = "bot"``.
CONFIG_SECTION = "tool_config"


def config_values(table: dict[str, Any]) -> dict[str, object]:
    from .config import ConfigValueError

    given: list[str] = []
    for key, value in table.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (int, float)):
            value = str(value)
        if not isinstance(value, str) or "=" in key:
            raise ConfigValueError(key, "must be text, a number or true/false")
        given.append(f"{key}={value}")
    return {"tool_config": given}


def add(parser: Any) -> None:
    parser.add_argument(
        "--tool-config",
        action="append",
        metavar="KEY=VALUE",
        help="a configuration value for bash tools (config_keys, working_directory)",
    )


def settings(options: argparse.Namespace) -> Settings:
    given = getattr(options, "tool_config", None)
    if not given:
        return Settings()
    config: dict[str, str] = {}
    for option in given:
        key, equals, value = option.partition("=")
        if not equals or not key:
            raise UsageError(f"--tool-config {option!r}: expected KEY=VALUE")
        config[key] = value
    return Settings(toolbox={"tool_config": config})
