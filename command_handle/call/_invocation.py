"""One checked program: what a rendered handle (or a 0.x provider) asks the executor to run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["MASK", "Invocation", "StreamMode"]

MASK = "********"  # what a credential's value is shown as

StreamMode = Literal["pipe", "ignore", "inherit"]


@dataclass(frozen=True)
class Invocation:
    """A fully validated command: everything the executor needs, nothing it must check.

    ``argv[0]`` is the resolved absolute path of the program. ``env`` is the
    complete child environment. ``stdin`` is None when standard input stays
    closed. ``encoding`` is a Python codec name, or ``"binary"`` for bytes.
    """

    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    stdin: bytes | None = None
    stdout: StreamMode = "pipe"
    stderr: StreamMode = "pipe"
    encoding: str = "utf-8"
    timeout: float = 60.0
    max_output: int = 10 * 1024 * 1024
    kill_grace: float = 2.0
    handle_name: str = field(default="", compare=False)
    no_new_privs: bool = True  # False only when Policy.allow_setuid
    limits: tuple[tuple[int, int], ...] = ()  # (RLIMIT_*, value) set on the child
    cgroup: bool = False  # a cgroup of its own, killed with the call (Policy.cgroup_per_call)
    # bwrap and its options when the sandbox backend is bubblewrap (set by the executor)
    bubblewrap: tuple[str, ...] = field(default=(), compare=False)
    # Variables whose values hold a credential, and whether stdin does: every
    # display of the invocation (render, approval, events) masks them.
    masked_environment: frozenset[str] = frozenset()
    stdin_masked: bool = False

    def shown_environment(self) -> dict[str, str]:
        """``env`` with each credential-bearing value replaced by :data:`MASK`."""
        masked = self.masked_environment
        return {name: MASK if name in masked else value for name, value in self.env.items()}

    def to_json(self) -> dict[str, object]:
        """The invocation for display, with credentials masked."""
        stdin: str | None = None
        if self.stdin is not None:
            stdin = MASK if self.stdin_masked else self.stdin.decode("utf-8", "replace")
        return {
            "argv": list(self.argv),
            "env": self.shown_environment(),
            "cwd": self.cwd,
            "stdin": stdin,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "encoding": self.encoding,
            "timeout": self.timeout,
            "max_output": self.max_output,
            "no_new_privs": self.no_new_privs,
        }
