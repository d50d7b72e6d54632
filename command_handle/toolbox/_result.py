"""ToolResult, and the default result processing (Tool Handle 3.3).

When a handle has no ``result`` template, the model is shown:

- stdout; past ``max_content`` characters, its head and tail around
  ``[... N bytes omitted ...]`` (the executor keeps the tail of output it cut);
- stderr, under a ``stderr:`` line, when there is some or the exit was not 0;
- the exit in plain words when it was not 0, or the timeout, or the signal;
  ``The command succeeded with no output.`` when there is nothing else to say;
- never argv.

With a ``result`` template, its value is shown (text as is, anything else as
JSON) and is ``structured``. Credential values are redacted from both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import _json
from .._secrets import redact, redact_cut, redact_value
from ..executor import CommandResult, PlanResult

__all__ = ["ToolResult", "command_content", "plan_content"]


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


def _stream(
    text: str | bytes | None,
    tail: str | bytes | None,
    total: int,
    budget: int,
    secrets: tuple[str, ...],
) -> str:
    """One stream's text, redacted before it is cut to ``budget``."""
    if text is None:
        return ""
    if isinstance(text, bytes):
        return f"[{total} bytes of binary output]" if total else ""
    if isinstance(tail, str):  # the executor cut the output: redact each piece's edges
        text = redact_cut(text, secrets, cut_after=True)
        return _clip(text, redact_cut(tail, secrets, cut_before=True), total, budget)
    return _clip(redact(text, secrets), None, total, budget)


def _status(result: CommandResult, timeout: float) -> str:
    if result.timed_out:
        return (
            f"The command timed out after {timeout:g} s; it and its child processes were stopped."
        )
    if result.signal is not None:
        return f"The command was killed by signal {result.signal_name}."
    if result.exit_code:
        return f"The command failed with exit code {result.exit_code}."
    return ""


def command_content(
    result: CommandResult, timeout: float, budget: int, secrets: tuple[str, ...]
) -> str:
    """The default text for the model (see the module docstring)."""
    parts: list[str] = []
    out = _stream(result.stdout, result.stdout_tail, result.stdout_bytes, budget, secrets)
    if out:
        parts.append(out.rstrip("\n"))
    err = _stream(result.stderr, result.stderr_tail, result.stderr_bytes, budget, secrets)
    if err.strip() or (not result.ok and err):
        parts.append("stderr:\n" + err.rstrip("\n"))
    status = _status(result, timeout)
    if status:
        parts.append(status)
    elif not parts:
        parts.append("The command succeeded with no output.")
    return redact("\n\n".join(parts), secrets)


def plan_content(
    value: object, result: PlanResult, timeout: float, secrets: tuple[str, ...]
) -> str:
    """The text for a UTCP tool: its output (as utcp-cli returns it) and, when it
    failed, how."""
    text = value if isinstance(value, str) else _json.stringify(value)
    cut = any(step.truncated for step in result.steps)
    text = redact_cut(text, secrets, cut_after=cut)
    parts = [text] if text else []
    if result.timed_out:
        parts.append(f"The command timed out after {timeout:g} s and was stopped.")
    elif result.steps and result.steps[-1].status != 0:
        parts.append(f"The last command failed with exit status {result.steps[-1].status}.")
    if not parts:
        parts.append("The command succeeded with no output.")
    return redact("\n\n".join(parts), secrets)


def shown(value: object, secrets: tuple[str, ...]) -> tuple[str, object]:
    """A result template's value as content (text as is, else JSON) and structured."""
    value = redact_value(value, secrets)
    return (value if isinstance(value, str) else _json.stringify(value)), value
