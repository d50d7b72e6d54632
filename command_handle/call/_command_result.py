"""The outcome of a call. A non-zero exit is a result, not an exception."""

from __future__ import annotations

import base64
import signal as _signal
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CommandResult"]


@dataclass(frozen=True)
class CommandResult:
    """What ran and what it did.

    ``exit_code`` is None when the child was killed by a signal, which is then
    in ``signal``. ``stdout``/``stderr`` are text decoded with the handle's
    encoding (bytes with ``"binary"``, None for streams not piped); invalid
    bytes are replaced and ``stdout_replaced``/``stderr_replaced`` say so.
    ``view`` is what the model should see: the handle's ``result`` template
    applied to :meth:`to_json`, or that JSON itself.
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
