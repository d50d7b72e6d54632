"""What a plan's steps did. A non-zero status is a result, not an error."""

from __future__ import annotations

from dataclasses import dataclass

from ._command_result import CommandResult, sized

__all__ = ["PlanResult", "StepResult"]


@dataclass(frozen=True, repr=False)
class StepResult:
    """One step: its merged output as captured, its exit status, and whether the
    output was cut at the policy's ``max_output``. Its repr gives sizes, not contents."""

    index: int
    output: bytes
    status: int
    truncated: bool
    appended: bool

    def __repr__(self) -> str:
        cut = ", truncated=True" if self.truncated else ""
        return (
            f"StepResult(index={self.index}, status={self.status}, "
            f"output={sized(self.output)}{cut}, appended={self.appended})"
        )

    @property
    def text(self) -> str:
        """The output as ``$(...)`` gives it: trailing newlines removed, UTF-8 decoded."""
        return self.output.rstrip(b"\n").decode("utf-8", "replace")

    def to_json(self) -> dict[str, object]:
        return {
            "index": self.index,
            "output": self.text,
            "status": self.status,
            "truncated": self.truncated,
            "append_to_final_output": self.appended,
        }


@dataclass(frozen=True, repr=False)
class PlanResult:
    """What the steps did. ``output`` joins the appended steps' outputs by newlines
    and strips the ends, as utcp-cli does. ``timed_out`` means the policy's timeout
    stopped the plan; ``steps`` then ends with the step that was running. Its
    repr is short whatever the steps wrote: sizes, not contents."""

    steps: tuple[StepResult, ...]
    timed_out: bool
    duration_s: float

    def __repr__(self) -> str:
        # A few steps in full, then a count: a plan may have many.
        shown = ", ".join(repr(step) for step in self.steps[:3])
        if len(self.steps) > 3:
            shown += f", +{len(self.steps) - 3} more"
        timed_out = ", timed_out=True" if self.timed_out else ""
        return f"PlanResult(steps=[{shown}]{timed_out}, duration_s={self.duration_s:.3f})"

    @property
    def output(self) -> str:
        joined = b"\n".join(step.output.rstrip(b"\n") for step in self.steps if step.appended)
        return joined.decode("utf-8", "replace").strip()

    @property
    def ok(self) -> bool:
        """The plan finished in time and its last step succeeded."""
        return not self.timed_out and bool(self.steps) and self.steps[-1].status == 0

    @classmethod
    def one_step(cls, result: CommandResult) -> PlanResult:
        """A UTCP 0.x provider's one command as the one-step plan result 0.x gave:
        stdout on success, stderr otherwise."""
        chosen = result.stdout if result.exit_code == 0 else result.stderr
        text = chosen if isinstance(chosen, str) else ""
        truncated = result.stdout_truncated if result.exit_code == 0 else result.stderr_truncated
        status = result.exit_code if result.exit_code is not None else 128 + (result.signal or 0)
        step = StepResult(0, text.encode("utf-8", "surrogateescape"), status, truncated, True)
        return cls((step,), result.timed_out, result.duration_s)

    def to_json(self) -> dict[str, object]:
        return {
            "output": self.output,
            "steps": [step.to_json() for step in self.steps],
            "timed_out": self.timed_out,
            "duration_s": round(self.duration_s, 6),
        }
