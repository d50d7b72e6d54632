"""The argument modes of bash tools (``args_mode``), one module each, in a table.

Each mode turns the model's arguments (already checked against the schema)
into the tokens after ``bash FILE SUBCOMMAND`` and, for ``json``, the text
on standard input. A new mode is one new module added to :data:`MODES`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from . import flags, json_, positional

if TYPE_CHECKING:
    from .._tool import BashTool

__all__ = ["MODES", "check_schema"]

Tokens = Callable[["BashTool", Mapping[str, Any]], tuple[list[str], "str | None"]]

MODES: dict[str, Tokens] = {
    flags.NAME: flags.tokens,
    positional.NAME: positional.tokens,
    json_.NAME: json_.tokens,
}


def check_schema(
    mode: str, schema: Mapping[str, Any], names: frozenset[str]
) -> tuple[Mapping[str, Any], ...]:
    """The mode's own fields of the schema, checked (``positional``'s list)."""
    if mode == positional.NAME:
        return positional.check(schema, names)
    if mode == flags.NAME:
        flags.check(names)
    return ()
