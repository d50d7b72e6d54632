"""``--credential NAME[.FIELD]=VAR``: Security Objects resolved from host variables."""

from __future__ import annotations

import argparse
from typing import Any

from .._common import UsageError
from ._group import Settings

RUNNING_ONLY = True
TOOLBOX_ONLY = True  # a handle run alone (``run``) gets no Security Object

# ``[credentials]``: ``github = "GITHUB_TOKEN"`` (the whole Credential Object's
# token), or ``[credentials.github]`` with ``token = "GITHUB_TOKEN"`` per field.
CONFIG_SECTION = "credentials"


def config_values(table: dict[str, Any]) -> dict[str, object]:
    from .config import ConfigValueError

    given: list[str] = []
    for name, value in table.items():
        if "." in name or "=" in name:
            raise ConfigValueError(name, "a Security Object's name has no '.' or '='")
        if isinstance(value, str):
            given.append(f"{name}={value}")
            continue
        if not isinstance(value, dict):
            raise ConfigValueError(name, "must be a host variable's name, or a table of them")
        for field, variable in value.items():
            if "." in field or "=" in field:
                raise ConfigValueError(f"{name}.{field}", "a field's name has no '.' or '='")
            if not isinstance(variable, str):
                raise ConfigValueError(f"{name}.{field}", "must be a host variable's name")
            given.append(f"{name}.{field}={variable}")
    return {"credential": given}


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
