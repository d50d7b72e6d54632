"""The outcome of a call. A non-zero exit is a result, not an exception."""

from __future__ import annotations

import base64
import signal as _signal
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CommandResult", "sized"]


def sized(value: object) -> str:
    """A value as its type and size, never its contents: what a repr shows of
    output, which may be hundreds of megabytes (and may hold secrets)."""
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str):
        return f"<str, {len(value)} chars>"
    if isinstance(value, (bytes, bytearray)):
        return f"<bytes, {len(value)} bytes>"
    if isinstance(value, dict):
        return f"<dict, {len(value)} keys>"
    if isinstance(value, (list, tuple)):
        return f"<{type(value).__name__}, {len(value)} items>"
    return f"<{type(value).__name__}>"


@dataclass(frozen=True, repr=False)
class CommandResult:
    """What ran and what it did.

    ``exit_code`` is None when the child was killed by a signal, which is then
    in ``signal``. ``stdout``/``stderr`` are text decoded with the handle's
    encoding (bytes with ``"binary"``, None for streams not piped); invalid
    bytes are replaced and ``stdout_replaced``/``stderr_replaced`` say so.
    ``view`` is what the model should see: the handle's ``result`` template
    applied to :meth:`to_json`, or that JSON itself.

    Its repr is short whatever the output holds: sizes, not contents.
    """

    argv: tuple[str, ...]
    exit_code: int | None
    signal: int | None
    stdout: str | bytes | None
    stderr: str | bytes | None
    timed_out: bool
    stdout_truncated: bool
    stderr_truncated: bool
    duration_s: float
    stdout_replaced: bool = False
    stderr_replaced: bool = False
    view: object = field(default=None, compare=False)
    # Every byte the child wrote to each stream, kept or not.
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    # The last bytes of a truncated stream (None when nothing was cut): the
    # kept head and this tail show how the output began and ended.
    stdout_tail: str | bytes | None = field(default=None, compare=False)
    stderr_tail: str | bytes | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        # The dataclass repr would copy the whole output (twice, with escapes):
        # asyncio.run formats the repr of the result it returns, and so does any
        # log line or debugger. What ran, how it ended and how much it wrote.
        parts = [f"argv=[{self.argv[0]!r}, +{len(self.argv) - 1} args]" if self.argv else "argv=[]"]
        if self.signal is not None:
            parts.append(f"signal={self.signal_name}")
        else:
            parts.append(f"exit_code={self.exit_code}")
        if self.timed_out:
            parts.append("timed_out=True")
        for name, value, total, truncated, replaced in (
            ("stdout", self.stdout, self.stdout_bytes, self.stdout_truncated, self.stdout_replaced),
            ("stderr", self.stderr, self.stderr_bytes, self.stderr_truncated, self.stderr_replaced),
        ):
            shown = sized(value)
            if truncated:
                shown += f" kept of {total} bytes"
            if replaced:
                shown += " (invalid bytes replaced)"
            parts.append(f"{name}={shown}")
        if self.view is not None:
            parts.append(f"view={sized(self.view)}")
        parts.append(f"duration_s={self.duration_s:.3f}")
        return f"CommandResult({', '.join(parts)})"

    @classmethod
    def of_run(
        cls,
        *,
        argv: tuple[str, ...],
        exit_code: int | None,
        signal: int | None,
        stdout: str | bytes | None,
        stderr: str | bytes | None,
        timed_out: bool,
        stdout_truncated: bool,
        stderr_truncated: bool,
        duration_s: float,
        stdout_replaced: bool,
        stderr_replaced: bool,
        stdout_bytes: int,
        stderr_bytes: int,
        stdout_tail: str | bytes | None,
        stderr_tail: str | bytes | None,
    ) -> CommandResult:
        """The result of a run, every field given (``view`` None): what the
        constructor makes, a third of its cost. A frozen dataclass sets each
        field through ``object.__setattr__``; this fills the instance's
        dictionary at once, on every call (docs/decisions.md)."""
        result = object.__new__(cls)
        result.__dict__.update(
            argv=argv,
            exit_code=exit_code,
            signal=signal,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            stdout_truncated=stdout_truncated,
            stderr_truncated=stderr_truncated,
            duration_s=duration_s,
            stdout_replaced=stdout_replaced,
            stderr_replaced=stderr_replaced,
            view=None,
            stdout_bytes=stdout_bytes,
            stderr_bytes=stderr_bytes,
            stdout_tail=stdout_tail,
            stderr_tail=stderr_tail,
        )
        return result

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def signal_name(self) -> str | None:
        if self.signal is None:
            return None
        try:
            return _signal.Signals(self.signal).name
        except ValueError:
            return str(self.signal)

    def to_json(self) -> dict[str, Any]:
        """The result as JSON, with the same snake_case keys; binary output as base64."""

        def stream(value: str | bytes | None) -> str | None:
            if isinstance(value, bytes):
                return base64.b64encode(value).decode("ascii")
            return value

        return {
            "argv": list(self.argv),
            "exit_code": self.exit_code,
            "signal": self.signal,
            "stdout": stream(self.stdout),
            "stderr": stream(self.stderr),
            "timed_out": self.timed_out,
            "stdout_truncated": self.stdout_truncated,
            "stderr_truncated": self.stderr_truncated,
            "duration_s": round(self.duration_s, 6),
            "stdout_replaced": self.stdout_replaced,
            "stderr_replaced": self.stderr_replaced,
            "stdout_bytes": self.stdout_bytes,
            "stderr_bytes": self.stderr_bytes,
            "binary": isinstance(self.stdout, bytes) or isinstance(self.stderr, bytes),
        }
