"""``--credential NAME[.FIELD]=VAR``: Security Objects resolved from host variables."""

from __future__ import annotations

import argparse
from typing import Any

from .._common import UsageError
from ._group import Settings

RUNNING_ONLY = True


def add(parser: Any) -> None:
    parser.add_argument(
        "--credential",
        action="append",
        metavar="NAME[.FIELD]=VAR",
        help="resolve the Security Object named NAME from the host variable VAR",
    )


def settings(options: argparse.Namespace) -> Settings:
    given = getattr(options, "credential", None)
    if not given:
        return Settings()
    from ...toolbox import environment_credentials, parse_credential_option

    table: dict[str, dict[str, str]] = {}
    for option in given:
        try:
            name, field, variable = parse_credential_option(option)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        table.setdefault(name, {})[field] = variable
    return Settings(toolbox={"credentials": environment_credentials(table)})
