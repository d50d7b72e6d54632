"""The one prepared call: what every front end produces and the executor runs.

A Command Handle's render, a UTCP 1.x plan and a 0.x provider all become a
:class:`PreparedCall`. It carries what was checked (the command or the plan),
the Policy it was checked under, the figures that messages, previews and the
plan hash report (the effective timeout and output cap), and a re-check that
the executor runs right before the launch. Plain data; nothing here spawns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from ..policy import Policy, check_paths, check_program, check_program_identity
from ._command_result import CommandResult
from ._invocation import Invocation
from ._plan_result import PlanResult

if TYPE_CHECKING:  # the plan model loads with the first plan, not with every call
    from ..plan import Plan

__all__ = ["CallKind", "PreparedCall", "PreparedPlan", "plan_hash"]

R = TypeVar("R", CommandResult, PlanResult)

# "command": one program, its result a CommandResult. "plan": a UTCP 1.x plan,
# its result a PlanResult. "one-step": a UTCP 0.x provider's one program, its
# result reported as a one-step PlanResult (stdout on success, stderr otherwise).
CallKind = Literal["command", "plan", "one-step"]


@dataclass(frozen=True)
class PreparedPlan:
    """A plan that passed every check before its first step, with the text of
    each placeholder and what its steps start from."""

    plan: Plan
    arguments: Mapping[str, str]
    env: dict[str, str]
    cwd: str


@dataclass(frozen=True, eq=False)
class PreparedCall(Generic[R]):
    """A call that passed every check under ``policy``, ready for
    :meth:`Executor.run <command_handle.Executor.run>`.

    ``invocation`` is what a ``"command"`` or ``"one-step"`` call runs;
    ``plan`` is what a ``"plan"`` call runs, and for ``"one-step"`` the 0.x
    provider's translation (its output rules). ``timeout`` and ``max_output`` are the
    effective limits: the Policy's, lowered by the tool's own. ``path_rules``
    and ``arguments`` let the executor check the handle's ``paths`` again once
    the call holds its slot. ``program_file`` is the program file's identity
    from the first time the call was described (for an approver, a preview,
    an expected plan hash); the launch is refused if the file changed since.
    """

    kind: CallKind
    tool: str
    policy: Policy
    timeout: float
    max_output: int
    invocation: Invocation | None = None
    plan: PreparedPlan | None = None
    path_rules: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    arguments: object = None
    program_file: Mapping[str, Any] | None = field(
        default=None, init=False, compare=False, repr=False
    )

    @staticmethod
    def command(
        invocation: Invocation,
        policy: Policy,
        *,
        path_rules: Mapping[str, Mapping[str, Any]] | None = None,
        arguments: object = None,
    ) -> PreparedCall[CommandResult]:
        """One checked program (a rendered handle)."""
        # The frozen dataclass's constructor sets each field with object.__setattr__;
        # a call is prepared for every run, so its fields are set in one step.
        prepared: PreparedCall[CommandResult] = object.__new__(PreparedCall)
        object.__setattr__(
            prepared,
            "__dict__",
            {
                "kind": "command",
                "tool": invocation.handle_name,
                "policy": policy,
                "timeout": invocation.timeout,
                "max_output": invocation.max_output,
                "invocation": invocation,
                "plan": None,
                "path_rules": path_rules or {},
                "arguments": arguments,
                # program_file (init=False) is the class's None until remembered
            },
        )
        return prepared

    @staticmethod
    def one_step(
        invocation: Invocation, policy: Policy, plan: PreparedPlan
    ) -> PreparedCall[PlanResult]:
        """A UTCP 0.x provider's one program, reported as a one-step plan."""
        return PreparedCall(
            "one-step",
            invocation.handle_name,
            policy,
            invocation.timeout,
            invocation.max_output,
            invocation=invocation,
            plan=plan,
        )

    @staticmethod
    def for_plan(prepared: PreparedPlan, policy: Policy) -> PreparedCall[PlanResult]:
        """A checked UTCP plan; its template's own timeout lowers the Policy's."""
        own = prepared.plan.timeout
        timeout = policy.timeout if own is None else min(policy.timeout, own)
        return PreparedCall(
            "plan", prepared.plan.name, policy, timeout, policy.max_output, plan=prepared
        )

    @property
    def program(self) -> str:
        """The program a command runs ("" for a plan, whose programs vary by step)."""
        return self.invocation.argv[0] if self.invocation is not None else ""

    def remember_program_file(self, identity: Mapping[str, Any]) -> None:
        """Keep the program file's identity as the call was described: the first
        description is the one an approver can have seen."""
        if self.program_file is None:
            object.__setattr__(self, "program_file", identity)  # set once, before the run

    def recheck(self) -> None:
        """The checks that the world can undo between preparing and launching,
        repeated: the program (a link swapped to another file, or a described
        program file changed), and the handle's ``paths`` (a link swapped to a
        secret). A plan's programs and redirect targets are checked as each
        step reaches them."""
        if self.invocation is None:
            return
        check_program(self.invocation.argv[0], self.policy, "/command")
        if self.program_file is not None:
            check_program_identity(self.invocation.argv[0], dict(self.program_file))
        if self.path_rules:
            check_paths(self.path_rules, self.arguments, self.invocation.cwd, self.policy)


def plan_hash(plan: Mapping[str, Any]) -> str:
    """The SHA-256, in hex, of the plan's RFC 8785 canonical JSON: the same plan
    gives the same hash after any JSON round trip, in any language."""
    import rfc8785

    return hashlib.sha256(rfc8785.dumps(plan)).hexdigest()


# PreparedCall.command sets every field itself: a field added to the class must be added there.
assert [f.name for f in fields(PreparedCall)] == [
    "kind",
    "tool",
    "policy",
    "timeout",
    "max_output",
    "invocation",
    "plan",
    "path_rules",
    "arguments",
    "program_file",
]
