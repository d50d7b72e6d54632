"""``exit [N]``: end the step (or the subshell: a pipeline element, a substitution)
with status N, or the last status.

utcp-cli runs each step in a subshell, so ``exit`` ends that step only; the
next step runs. The status is N modulo 256; a non-numeric N is bash's
"numeric argument required" (status 2, and the step still ends).
"""

from __future__ import annotations

from .._shell import BuiltinIO, ShellExit, ShellState

NAMES = ("exit",)


async def run(shell: ShellState, args: list[str], io: BuiltinIO) -> int:
    if len(args) > 1:
        await io.err(b"exit: too many arguments\n")
        return 1  # bash does not exit then
    if not args:
        raise ShellExit(shell.status)
    text = args[0].strip()
    try:
        status = int(text, 10)
    except ValueError:
        await io.err(f"exit: {args[0]}: numeric argument required\n".encode(errors="replace"))
        raise ShellExit(2) from None
    raise ShellExit(status % 256)
