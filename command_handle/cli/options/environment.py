"""``--inherit-env NAME``: host variables the program sees unchanged."""

from __future__ import annotations

import argparse
from typing import Any

from ._group import Settings

RUNNING_ONLY = True
CONFIG_KEYS = {"policy.inherit_environment": "inherit_env"}


def add(parser: Any) -> None:
    parser.add_argument(
        "--inherit-env",
        action="append",
        metavar="NAME",
        help="pass the host variable NAME to the program unchanged",
    )


def settings(options: argparse.Namespace) -> Settings:
    names = tuple(getattr(options, "inherit_env", None) or ())
    return Settings(policy={"inherit_environment": names})
