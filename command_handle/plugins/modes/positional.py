"""``positional``: the values of the schema's ``positional`` list, in its order.

A missing argument takes the entry's ``default``; a missing ``required`` one
is refused. A missing optional one without a default is the empty string when
a later one has a value (the positions stay put; bash's ``${3:-x}`` reads
empty as unset) and is left out at the end. Values are tokens as
:func:`~._common.text_of` writes them; a value that begins with ``-``, ``+``
or ``@`` is refused unless the parameter is in ``options_allowed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...errors import ArgumentsError, Violation
from .._errors import BashToolError
from ._common import checked, text_of

if TYPE_CHECKING:
    from .._tool import BashTool

NAME = "positional"

_KEYS = frozenset({"name", "required", "default", "description"})


def check(schema: Mapping[str, Any], names: frozenset[str]) -> tuple[Mapping[str, Any], ...]:
    entries = schema.get("positional")
    if not isinstance(entries, list):
        raise BashToolError('args_mode "positional" needs a "positional" list', "/positional")
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        pointer = f"/positional/{index}"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise BashToolError('each positional entry is {"name": ...}', pointer)
        name = entry["name"]
        if name not in names:
            raise BashToolError(f"{name!r} is not a parameter of the tool", f"{pointer}/name")
        if name in seen:
            raise BashToolError(f"{name!r} is listed twice", f"{pointer}/name")
        seen.add(name)
        if not isinstance(entry.get("required", False), bool):
            raise BashToolError("required must be true or false", f"{pointer}/required")
        extra = sorted(set(entry) - _KEYS)
        if extra:
            raise BashToolError(f"unknown field {extra[0]!r}", f"{pointer}/{extra[0]}")
    return tuple(entries)


def tokens(tool: BashTool, args: Mapping[str, Any]) -> tuple[list[str], str | None]:
    values: list[str | None] = []
    for entry in tool.positional:
        name = entry["name"]
        value = args.get(name)
        if value is not None:
            values.append(checked(name, text_of(value), tool.options_allowed))
        elif "default" in entry:
            values.append(text_of(entry["default"]))  # the author's: no guard
        elif entry.get("required", False):
            raise ArgumentsError([Violation(f"/{name}", "is required", "required")])
        else:
            values.append(None)
    while values and values[-1] is None:
        values.pop()
    return ["" if value is None else value for value in values], None
