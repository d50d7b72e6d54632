"""``--variable NAME=VALUE``, ``--variables-file FILE``, ``--secret-variable NAME``:
the UTCP variables that templates read as ``${NAME}`` in ``env_vars``."""

from __future__ import annotations

import argparse
import re
from typing import Any

from .._common import UsageError
from ._group import Settings

TOOLBOX_ONLY = True
# ``[utcp]``: ``variables_files = [".env"]``, ``secret_variables = ["API_KEY"]``;
# ``[variables]``: ``API_KEY = "..."`` (a value written in the file itself).
CONFIG_KEYS = {
    "utcp.variables_files": "variables_file",
    "utcp.secret_variables": "secret_variable",
}
CONFIG_PATHS = frozenset({"utcp.variables_files"})
CONFIG_SECTION = "variables"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def add(parser: Any) -> None:
    parser.add_argument(
        "--variable",
        action="append",
        metavar="NAME=VALUE",
        help="a UTCP variable for ${NAME} in templates' env_vars (a manual's own: "
        "<manual with _ doubled>_NAME); repeat for each",
    )
    parser.add_argument(
        "--variables-file",
        action="append",
        metavar="FILE",
        help="UTCP variables from a dotenv file, read at each call; --variable wins over it",
    )
    parser.add_argument(
        "--secret-variable",
        action="append",
        metavar="NAME",
        help="redact this variable's value from everything shown, as a credential",
    )


def config_values(table: dict[str, Any]) -> dict[str, object]:
    from .config import ConfigValueError

    given: list[str] = []
    for name, value in table.items():
        if not _NAME.fullmatch(name):
            raise ConfigValueError(name, "a variable's name is like API_KEY")
        if not isinstance(value, str):
            raise ConfigValueError(name, "must be text")
        given.append(f"{name}={value}")
    return {"variable": given}


def parse_variable(option: str) -> tuple[str, str]:
    """``NAME=VALUE`` as its two parts; a UsageError naming the option otherwise."""
    name, equals, value = option.partition("=")
    if not equals or not _NAME.fullmatch(name):
        raise UsageError(f"--variable {option!r}: expected NAME=VALUE with NAME like API_KEY")
    return name, value


def given(options: argparse.Namespace) -> dict[str, str]:
    return dict(parse_variable(option) for option in getattr(options, "variable", None) or ())


def settings(options: argparse.Namespace) -> Settings:
    variables = given(options)
    files = list(getattr(options, "variables_file", None) or ())
    secret = list(getattr(options, "secret_variable", None) or ())
    if not (variables or files or secret):
        return Settings()
    return Settings(
        toolbox={"variables": variables, "variable_files": files, "secret_variables": secret}
    )
