"""How a tool's program may outlive its call: the settings of a ``session``.

Plain data, set by a tool's author (a handle's ``session`` field) and read by
the Toolbox, which starts such a call with :meth:`Executor.start
<command_handle.Executor.start>` and returns when it is still running after
``yield_after`` seconds, or as soon as its output matches ``ready``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Session", "Terminal"]


@dataclass(frozen=True)
class Session:
    """``yield_after``: seconds the call waits before it returns a running
    program; ``ready``: a regular expression whose first match in the output
    returns at once; ``max_lifetime``: seconds after which the program is
    stopped (the Policy's ``session_lifetime`` caps it); ``terminal``: run it
    on a pseudo-terminal; ``secret_input``: what the model writes to it is not
    recorded in events (a password prompt)."""

    yield_after: float = 10.0
    ready: str | None = None
    max_lifetime: float | None = None
    terminal: bool = False
    secret_input: bool = False

    def ready_pattern(self) -> re.Pattern[str] | None:
        return None if self.ready is None else re.compile(self.ready)


@dataclass(frozen=True)
class Terminal:
    """The pseudo-terminal a ``terminal`` program gets, as the application sets
    it: ``TERM`` and the window size. ``"dumb"`` asks programs for plain text
    (no colours, no cursor movement), which a model reads best."""

    term: str = "dumb"
    rows: int = 24
    columns: int = 80

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9._+-]{1,64}", self.term):
            raise ValueError(f"Terminal.term {self.term!r} is not a terminal type name")
        for name in ("rows", "columns"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
                raise ValueError(f"Terminal.{name} must be an int from 1 to 1000")
