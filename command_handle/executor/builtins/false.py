"""``false``: do nothing, unsuccessfully."""

from __future__ import annotations

from .._shell import BuiltinIO, ShellState

NAMES = ("false",)


async def run(shell: ShellState, args: list[str], io: BuiltinIO) -> int:
    return 1
