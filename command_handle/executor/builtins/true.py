"""``true`` and ``:``: do nothing, successfully."""

from __future__ import annotations

from .._shell import BuiltinIO, ShellState

NAMES = ("true", ":")


async def run(shell: ShellState, args: list[str], io: BuiltinIO) -> int:
    return 0
