"""Builtins run in-process with bash's semantics, as bash runs them.

Each module defines ``NAMES`` and an async ``run(shell, args, io) -> status``;
this table maps every name to its function, so a new builtin is one new module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ...plan import BUILTIN_NAMES
from .._shell import BuiltinIO, ShellState
from . import cd, echo, exit, export, false, pwd, true

__all__ = ["BUILTINS", "Builtin"]

Builtin = Callable[[ShellState, list[str], BuiltinIO], Awaitable[int]]

BUILTINS: dict[str, Builtin] = {
    name: module.run
    for module in (cd, echo, exit, export, false, pwd, true)
    for name in module.NAMES
}

# The policy's checks before a plan runs skip these names: the two lists are one.
assert set(BUILTINS) == BUILTIN_NAMES, sorted(set(BUILTINS) ^ BUILTIN_NAMES)
