"""``cd [-L|-P] [dir]``: change the directory for the rest of the plan.

As bash does by default, the path is logical: ``..`` removes the previous
component of ``$PWD``. ``cd`` alone goes to ``$HOME``; ``cd -`` to ``$OLDPWD``,
printing it. ``CDPATH`` is not consulted.
"""

from __future__ import annotations

import os
import stat

from .._shell import BuiltinIO, ShellState

NAMES = ("cd",)


async def run(shell: ShellState, args: list[str], io: BuiltinIO) -> int:
    physical = False
    while args and args[0] in ("-L", "-P", "--"):
        option = args.pop(0)
        if option == "--":
            break
        physical = option == "-P"
    if len(args) > 1:
        await io.err(b"cd: too many arguments\n")
        return 1
    announce = False
    if not args:
        target = shell.variables.get("HOME")
        if target is None:
            await io.err(b"cd: HOME not set\n")
            return 1
    elif args[0] == "-":
        target = shell.variables.get("OLDPWD")
        if target is None:
            await io.err(b"cd: OLDPWD not set\n")
            return 1
        announce = True
    else:
        target = args[0]
    if not target:
        return 0  # bash: 'cd ""' stays where it is
    path = os.path.normpath(os.path.join(shell.cwd, target))
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    problem = _problem(path)
    if problem:
        shown = os.fsencode(target)
        await io.err(b"cd: " + shown + b": " + problem.encode() + b"\n")
        return 1
    if physical:
        path = os.path.realpath(path)
    shell.set("OLDPWD", shell.cwd, export=True)
    shell.cwd = path
    shell.set("PWD", path, export=True)
    if announce:
        await io.out(os.fsencode(path) + b"\n")
    return 0


def _problem(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError as exc:
        return exc.strerror or "cannot be examined"
    if not stat.S_ISDIR(info.st_mode):
        return "Not a directory"
    if not os.access(path, os.X_OK):
        return "Permission denied"
    return ""
