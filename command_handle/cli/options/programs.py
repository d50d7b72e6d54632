"""Which programs may run and what they may be given: ``--allow-command``,
``--match-command-names``, ``--search-path``, ``--allow-env``,
``--allow-computed-command``, ``--allow-utcp-options``, ``--allow-setuid``,
``--keep-capabilities`` (docs/handles.md, "The policy")."""

from __future__ import annotations

import argparse
from typing import Any

from ._group import Settings

RUNNING_ONLY = True

_LISTS = {  # Policy field -> (dest, flag, help)
    "allowed_commands": (
        "allow_command",
        "--allow-command",
        "a program that may run (absolute path; a bare name with --match-command-names); "
        "repeat. Default: any",
    ),
    "search_path": ("search_path", "--search-path", "a directory for bare command names; repeat"),
    "allow_environment": (
        "allow_env",
        "--allow-env",
        "a loader/interpreter variable pattern a handle may set (e.g. PYTHONPATH); repeat",
    ),
}
_SWITCHES = {  # Policy field -> help
    "match_command_names": "let bare names in --allow-command match",
    "allow_computed_command": "let the model's arguments choose the program",
    "allow_utcp_options": "let a UTCP argument begin a word with '-', '+' or '@'",
    "allow_setuid": "run set-user-ID programs with their privileges",
    "keep_capabilities": "let children of root keep root's capabilities",
}
CONFIG_KEYS = {
    **{f"policy.{field}": dest for field, (dest, _, _) in _LISTS.items()},
    **{f"policy.{field}": field for field in _SWITCHES},
}


def add(parser: Any) -> None:
    for dest, flag, text in _LISTS.values():
        parser.add_argument(flag, dest=dest, action="append", metavar="VALUE", help=text)
    for field, text in _SWITCHES.items():
        parser.add_argument(
            "--" + field.replace("_", "-"),
            dest=field,
            action=argparse.BooleanOptionalAction,
            default=None,
            help=text,
        )


def settings(options: argparse.Namespace) -> Settings:
    policy: dict[str, Any] = {}
    for field, (dest, _, _) in _LISTS.items():
        value = getattr(options, dest, None)
        if value:
            policy[field] = frozenset(value) if field == "allowed_commands" else tuple(value)
    for field in _SWITCHES:
        value = getattr(options, field, None)
        if value is not None:
            policy[field] = value
    return Settings(policy=policy)
