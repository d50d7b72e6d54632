"""``pwd [-L|-P]``: the logical directory, or with ``-P`` the physical one."""

from __future__ import annotations

import os

from .._shell import BuiltinIO, ShellState

NAMES = ("pwd",)


async def run(shell: ShellState, args: list[str], io: BuiltinIO) -> int:
    physical = False
    for arg in args:
        if arg in ("-L", "-P"):
            physical = arg == "-P"
        elif arg == "--":
            break
        elif arg.startswith("-"):
            await io.err(f"pwd: {arg}: invalid option\n".encode(errors="surrogateescape"))
            return 2
    path = os.path.realpath(shell.cwd) if physical else shell.cwd
    await io.out(os.fsencode(path) + b"\n")
    return 0
