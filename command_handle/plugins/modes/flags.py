"""``flags``: ``--name VALUE``; ``true`` gives ``--name``, ``false`` ``--no-name``.

Only the parameters the schema declares become flags, in the order it lists
them: the model's data never names a flag. A null is an absent argument.
An array or object is one value, its compact JSON text (``--tags
'["a","b"]'``). A value that begins with ``-``, ``+`` or ``@`` is refused
unless the tool lists the parameter in ``options_allowed``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...errors import ArgumentsError, Violation
from .._errors import BashToolError
from ._common import checked, text_of

if TYPE_CHECKING:
    from .._tool import BashTool

NAME = "flags"

_FLAG = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


def check(names: frozenset[str]) -> None:
    for name in sorted(names):
        if not _FLAG.fullmatch(name):
            raise BashToolError(
                f"the parameter {name!r} cannot be a flag: a name is letters, digits, _ . -",
                f"/tools/0/function/parameters/properties/{name}",
            )


def tokens(tool: BashTool, args: Mapping[str, Any]) -> tuple[list[str], str | None]:
    properties = tool.parameters.get("properties") or {}
    unknown = [name for name in args if name not in properties]
    if unknown:
        raise ArgumentsError(
            [Violation(f"/{unknown[0]}", "is not a parameter of this tool", "additionalProperties")]
        )
    argv: list[str] = []
    for name in properties:
        value = args.get(name)
        if value is None:
            continue
        if value is True:
            argv.append(f"--{name}")
        elif value is False:
            argv.append(f"--no-{name}")
        else:
            argv += [f"--{name}", checked(name, text_of(value), tool.options_allowed)]
    return argv, None
