"""``export NAME[=value] ...``: mark variables for the environment of later programs.

The plan runner has already expanded each value; ``args`` holds ``NAME=value``
or ``NAME``. Names were checked against the policy before anything ran.
"""

from __future__ import annotations

from .._shell import BuiltinIO, ShellState

NAMES = ("export",)


async def run(shell: ShellState, args: list[str], io: BuiltinIO) -> int:
    for arg in args:
        name, sep, value = arg.partition("=")
        if sep:
            shell.set(name, value, export=True)
        else:
            shell.exported.add(name)
    return 0
