"""ToolResult, and the default result processing (Tool Handle 3.3).

When a handle has no ``result`` template, the model is shown:

- stdout; past ``max_content`` characters, its head and tail around
  ``[... N bytes omitted ...]`` (the executor keeps the tail of output it cut);
- stderr, under a ``stderr:`` line, when there is some or the exit was not 0;
- how it ended, in words that say it ran: "ran and reported failure: exit
  code N" for an exit outside the handle's ``success_exit_codes`` (default
  ``[0]``), the timeout, the signal, or a non-zero code the handle counts as
  success (a call that could not run is a refusal, worded elsewhere);
  ``The command succeeded with no output.`` when there is nothing else to say;
- never argv.

With a ``result`` template, its value is shown (text as is, anything else as
JSON) and is ``structured``. Credential values are redacted from both, and
before anything else reads the output: :func:`shown_result` is the run with
every secret redacted, the parts of one at the executor's cuts included, in
text and in binary output alike; the default views, the ``result`` template
and a plan's output value are all made from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, overload

from .. import _json
from .._secrets import redact, redact_bytes, redact_cut, redact_value
from ..call import CommandResult, PlanResult

__all__ = ["ToolResult", "command_content", "head_and_tail", "plan_content", "shown_result"]


@dataclass(frozen=True, repr=False)
class ToolResult:
    """What a call returns. ``content`` is the text for the model; ``structured``
    a JSON value (the ``result`` template's value, or the run as JSON);
    ``result`` the executor's result, for the application (None when nothing
    ran); ``plan_hash`` the hash of the plan the ``approve`` hook allowed (None
    without a hook)."""

    is_error: bool
    content: str
    structured: object = None
    result: CommandResult | PlanResult | None = field(default=None, repr=False)
    tool: str = ""
    call_id: str = ""
    plan_hash: str | None = None

    def __repr__(self) -> str:
        # Sizes, not contents: ``structured`` may hold the whole output.
        return (
            f"ToolResult(tool={self.tool!r}, is_error={self.is_error}, "
            f"content=<str, {len(self.content)} chars>, structured={_sized(self.structured)}, "
            f"call_id={self.call_id!r}, plan_hash={self.plan_hash!r})"
        )

    def to_json(self) -> dict[str, Any]:
        """``{"is_error", "content", "structured"}``: what the CLI prints."""
        return {"is_error": self.is_error, "content": self.content, "structured": self.structured}


@overload
def shown_result(result: CommandResult, secrets: tuple[str, ...]) -> CommandResult: ...
@overload
def shown_result(result: PlanResult, secrets: tuple[str, ...]) -> PlanResult: ...
@overload
def shown_result(
    result: CommandResult | PlanResult, secrets: tuple[str, ...]
) -> CommandResult | PlanResult: ...
def shown_result(
    result: CommandResult | PlanResult, secrets: tuple[str, ...]
) -> CommandResult | PlanResult:
    """``result`` with every secret redacted from its output, before anyone cuts,
    encodes or shapes it. The executor cut each capped stream knowing no
    secrets: a kept head may end with a secret's start, a kept tail begin
    with a secret's end, and those parts are redacted too. Binary output is
    redacted as bytes (the secret's UTF-8 form). Without secrets, ``result``."""
    if not secrets:
        return result
    if isinstance(result, PlanResult):
        steps = tuple(
            replace(step, output=redact_bytes(step.output, secrets, cut_after=step.truncated))
            for step in result.steps
        )
        return replace(result, steps=steps)
    return replace(
        result,
        stdout=_piece(result.stdout, secrets, cut_after=result.stdout_truncated),
        stderr=_piece(result.stderr, secrets, cut_after=result.stderr_truncated),
        stdout_tail=_piece(result.stdout_tail, secrets, cut_before=True),
        stderr_tail=_piece(result.stderr_tail, secrets, cut_before=True),
    )


def _piece(
    value: str | bytes | None,
    secrets: tuple[str, ...],
    *,
    cut_before: bool = False,
    cut_after: bool = False,
) -> str | bytes | None:
    if isinstance(value, bytes):
        return redact_bytes(value, secrets, cut_before=cut_before, cut_after=cut_after)
    if isinstance(value, str):
        return redact_cut(value, secrets, cut_before=cut_before, cut_after=cut_after)
    return None


def _sized(value: object) -> str:
    """A value's type and size, as CommandResult's repr shows output."""
    if isinstance(value, str):
        return f"<str, {len(value)} chars>"
    if isinstance(value, dict):
        return f"<dict, {len(value)} keys>"
    if isinstance(value, list):
        return f"<list, {len(value)} items>"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    return f"<{type(value).__name__}>"


def _clip(head: str, tail: str | None, total: int, budget: int) -> str:
    """``head`` (and the cut output's ``tail``) within ``budget`` characters."""
    if tail is None and len(head) <= budget:
        return head
    half = max(budget // 2, 1)
    if tail is None:
        shown_head, shown_tail = head[:half], head[-half:]
    else:
        shown_head, shown_tail = head[:half], tail[-half:]
    omitted = total - len(shown_head.encode()) - len(shown_tail.encode())
    return f"{shown_head}\n[... {max(omitted, 0)} bytes omitted ...]\n{shown_tail}"


def head_and_tail(text: str, budget: int) -> str:
    """``text`` within ``budget`` characters by the rule the model's view uses:
    its head and tail around ``[... N bytes omitted ...]``. For values that
    travel elsewhere under a size limit (a workflow history's payloads)."""
    return _clip(text, None, len(text.encode("utf-8", "surrogatepass")), budget)


def _stream(text: str | bytes | None, tail: str | bytes | None, total: int, budget: int) -> str:
    """One stream's text (already redacted), cut to ``budget``."""
    if text is None:
        return ""
    if isinstance(text, bytes):
        return f"[{total} bytes of binary output]" if total else ""
    return _clip(text, tail if isinstance(tail, str) else None, total, budget)


def _status(result: CommandResult, timeout: float, success: bool) -> str:
    """How the run ended, in words that say it ran: a refusal or a launch failure
    ("could not run") never reaches here."""
    if result.timed_out:
        return (
            f"The command timed out after {timeout:g} s; it and its child processes were stopped."
        )
    if result.signal is not None:
        return f"The command was killed by signal {result.signal_name}."
    if not success:
        return f"The command ran and reported failure: exit code {result.exit_code}."
    if result.exit_code:
        return f"The command ran and exited with code {result.exit_code}, a success for this tool."
    return ""


def command_content(
    result: CommandResult,
    timeout: float,
    budget: int,
    secrets: tuple[str, ...],
    *,
    success: bool | None = None,
) -> str:
    """The default text for the model (see the module docstring). ``result`` is
    as :func:`shown_result` gives it: redacted before it is cut to ``budget``.
    ``success`` is the run judged by the handle's ``success_exit_codes``
    (default: exit code 0)."""
    if success is None:
        success = result.ok
    parts: list[str] = []
    out = _stream(result.stdout, result.stdout_tail, result.stdout_bytes, budget)
    if out:
        parts.append(out.rstrip("\n"))
    err = _stream(result.stderr, result.stderr_tail, result.stderr_bytes, budget)
    if err.strip() or (not success and err):
        parts.append("stderr:\n" + err.rstrip("\n"))
    status = _status(result, timeout, success)
    if status:
        parts.append(status)
    elif not parts:
        parts.append("The command succeeded with no output.")
    return redact("\n\n".join(parts), secrets)


def plan_content(
    value: object, result: PlanResult, timeout: float, secrets: tuple[str, ...]
) -> str:
    """The text for a UTCP tool: its output (as utcp-cli returns it) and, when it
    failed, how. ``value`` is made from the run as :func:`shown_result` gives it."""
    text = value if isinstance(value, str) else _json.stringify(value)
    parts = [text] if text else []
    if result.timed_out:
        parts.append(f"The command timed out after {timeout:g} s and was stopped.")
    elif result.steps and result.steps[-1].status != 0:
        parts.append(
            "The command ran and reported failure: its last command exited with status "
            f"{result.steps[-1].status}."
        )
    if not parts:
        parts.append("The command succeeded with no output.")
    return redact("\n\n".join(parts), secrets)


def shown(value: object, secrets: tuple[str, ...]) -> tuple[str, object]:
    """A result template's value as content (text as is, else JSON) and structured."""
    value = redact_value(value, secrets)
    return (value if isinstance(value, str) else _json.stringify(value)), value
