"""One checked program: what a rendered handle (or a 0.x provider) asks the executor to run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Literal

from ..policy import Policy

__all__ = ["MASK", "Invocation", "MaskedView", "ShownFields", "StreamMode"]

MASK = "********"  # what a credential's value is shown as

StreamMode = Literal["pipe", "ignore", "inherit"]

# The environment and stdin as shown: stdin None when only its size is shown.
ShownFields = tuple[dict[str, str], bytes | None]


class MaskedView:
    """How an invocation whose environment or stdin holds a credential is shown:
    the model's data in those values stays visible (and hashed), only the
    credential is masked. Computed once, when first shown: a call that nobody
    describes pays nothing for it."""

    __slots__ = ("_compute", "_shown")

    def __init__(self, compute: Callable[[], ShownFields]) -> None:
        self._compute = compute
        self._shown: ShownFields | None = None

    def get(self) -> ShownFields:
        if self._shown is None:
            self._shown = self._compute()  # deterministic: two threads agree
        return self._shown


@dataclass(frozen=True)
class Invocation:
    """A fully validated command: everything the executor needs, nothing it must check.

    ``argv[0]`` is the resolved absolute path of the program, the file that is
    executed; ``argv0``, when set, is what the program receives as its
    ``argv[0]`` instead: the name as written, as a shell passes it. ``env`` is the
    complete child environment. ``stdin`` is None when standard input stays
    closed. ``encoding`` is a Python codec name, or ``"binary"`` for bytes.
    """

    argv: tuple[str, ...]
    # Not in the repr: they may hold a credential (to_json() shows them masked).
    env: dict[str, str] = field(repr=False)
    cwd: str
    stdin: bytes | None = field(default=None, repr=False)
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
    argv0: str | None = None  # the program's argv[0] when not its path (see above)
    # bwrap and its options when the sandbox backend is bubblewrap (set by the executor)
    bubblewrap: tuple[str, ...] = field(default=(), compare=False)
    # Variables whose values hold a credential, and whether stdin does: every
    # display of the invocation (render, approval, events) masks them, whole
    # unless ``shown`` says how to mask only the credential in them.
    masked_environment: frozenset[str] = frozenset()
    stdin_masked: bool = False
    # Set by a handle's render when a credential was given; never serialized.
    shown: MaskedView | None = field(default=None, compare=False, repr=False)
    # The Policy it was checked under (set by render): an executor refuses to run
    # it under another, whose limits and environment rules it does not carry.
    policy: Policy | None = field(default=None, compare=False, repr=False)

    @classmethod
    def build(
        cls,
        *,
        argv: tuple[str, ...],
        env: dict[str, str],
        cwd: str,
        stdin: bytes | None,
        stdout: StreamMode,
        stderr: StreamMode,
        encoding: str,
        timeout: float,
        max_output: int,
        kill_grace: float,
        handle_name: str,
        no_new_privs: bool,
        limits: tuple[tuple[int, int], ...],
        cgroup: bool,
        argv0: str | None,
        bubblewrap: tuple[str, ...],
        masked_environment: frozenset[str],
        stdin_masked: bool,
        shown: MaskedView | None,
        policy: Policy | None,
    ) -> Invocation:
        """``Invocation(...)`` with every field given, built without the frozen
        dataclass's ``object.__setattr__`` per field (20 calls, about a tenth
        of a render). The same object as the constructor's."""
        invocation = object.__new__(cls)
        object.__setattr__(
            invocation,
            "__dict__",
            {
                "argv": argv,
                "env": env,
                "cwd": cwd,
                "stdin": stdin,
                "stdout": stdout,
                "stderr": stderr,
                "encoding": encoding,
                "timeout": timeout,
                "max_output": max_output,
                "kill_grace": kill_grace,
                "handle_name": handle_name,
                "no_new_privs": no_new_privs,
                "limits": limits,
                "cgroup": cgroup,
                "argv0": argv0,
                "bubblewrap": bubblewrap,
                "masked_environment": masked_environment,
                "stdin_masked": stdin_masked,
                "shown": shown,
                "policy": policy,
            },
        )
        return invocation

    def policy_problem(self, policy: Policy) -> str | None:
        """Why this invocation may not run under ``policy``, or None: it was checked
        under another Policy, or (built by hand) its limits exceed ``policy``'s."""
        if self.policy is not None:
            if self.policy is policy or self.policy == policy:
                return None
            return "it was checked under a different Policy than this executor's"
        if (
            self.timeout > policy.timeout
            or self.max_output > policy.max_output
            or self.kill_grace != policy.kill_grace
            or (not self.no_new_privs and not policy.allow_setuid)
            or self.limits != policy.child_limits
            or self.cgroup != policy.cgroup_per_call
        ):
            return "its limits are not this executor's Policy's"
        return None

    def shown_environment(self) -> dict[str, str]:
        """``env`` with each credential masked: only the credential, with ``shown``;
        else each credential-bearing value whole, as :data:`MASK`."""
        if self.shown is not None:
            return dict(self.shown.get()[0])
        masked = self.masked_environment
        return {name: MASK if name in masked else value for name, value in self.env.items()}

    def shown_stdin(self) -> bytes | None:
        """Stdin with each credential masked; None when there is none, or when
        it holds a credential that only its size may show."""
        if self.stdin is None:
            return None
        if self.shown is not None:
            return self.shown.get()[1]
        return None if self.stdin_masked else self.stdin

    def to_json(self) -> dict[str, object]:
        """The invocation for display, with credentials masked."""
        stdin: str | None = None
        if self.stdin is not None:
            shown = self.shown_stdin()
            stdin = MASK if shown is None else shown.decode("utf-8", "replace")
        named: dict[str, object] = {"argv": list(self.argv)}
        if self.argv0 is not None and self.argv0 != self.argv[0]:
            named["argv0"] = self.argv0
        return {
            **named,
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


# Invocation.build names every field, in the class's order: a field added to
# the class must be added there.
assert list(Invocation.build.__annotations__)[:-1] == [f.name for f in fields(Invocation)]
