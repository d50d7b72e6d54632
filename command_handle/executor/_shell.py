"""The state a plan's steps share, as one bash process would: directory and variables."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

__all__ = ["BuiltinIO", "ShellExit", "ShellState"]


class ShellExit(Exception):
    """``exit N`` (or ``${X:?}``): the current shell, a step or a subshell, ends."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


@dataclass
class ShellState:
    """``cwd`` is the logical directory (as bash's ``$PWD``); ``variables`` holds shell
    and environment variables; those named in ``exported`` reach programs."""

    cwd: str
    variables: dict[str, str] = field(default_factory=dict)
    exported: set[str] = field(default_factory=set)
    status: int = 0
    # Variables whose values depend on a tool argument or a step's output;
    # "PWD" when the directory was chosen by such a value.
    tainted: set[str] = field(default_factory=set)

    def copy(self) -> ShellState:
        """A subshell's state: changes to it do not reach the parent."""
        return ShellState(
            self.cwd, dict(self.variables), set(self.exported), self.status, set(self.tainted)
        )

    def environment(self) -> dict[str, str]:
        env = {name: self.variables[name] for name in self.exported if name in self.variables}
        env["PWD"] = self.cwd  # bash exports PWD and keeps it current
        return env

    def set(self, name: str, value: str, *, export: bool = False, data: bool = False) -> None:
        self.variables[name] = value
        if export:
            self.exported.add(name)
        if data:
            self.tainted.add(name)
        else:
            self.tainted.discard(name)


@dataclass(frozen=True)
class BuiltinIO:
    """Where a builtin writes: its standard output and standard error."""

    out: Callable[[bytes], Awaitable[None]]
    err: Callable[[bytes], Awaitable[None]]
