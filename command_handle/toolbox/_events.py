"""Audit events: what happened to each call, for the log and the application.

Every call emits events to the standard ``logging`` logger
``command_handle`` (at ``INFO``: a refusal is the model's mistake, not the
application's; the record's ``command_handle_event`` holds the JSON) and to the
Toolbox's ``events`` callback, if any:

``loaded`` (per tool), ``refused`` (with the reason and where), ``approved``,
``denied``, ``spawned`` (pid and program), ``timed_out``, ``killed`` (signal,
or cancellation) and ``exited`` (code, duration, bytes, truncation); for a
program that outlives its call, ``process_started``, ``process_write`` (its
text left out when the tool marks input secret) and ``process_ended``. Every
event of one call has its ``call_id``. Credential values are redacted from
every field before anything is emitted. A callback that raises is logged and
otherwise ignored: an audit sink must not leave a child unsupervised. An
async callback's coroutine is awaited by the call that emitted the event
(:meth:`Emitter.settle`), before the call returns.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._loops import run_to_completion
from .._secrets import redact_value

__all__ = ["AuditEvent", "EventSink", "Emitter"]

log = logging.getLogger("command_handle")


@dataclass(frozen=True)
class AuditEvent:
    """One event: ``kind``, the ``tool`` and ``call_id`` it concerns, when it
    happened (``time``, seconds since the epoch), and ``details`` (JSON values)."""

    kind: str
    tool: str
    call_id: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "tool": self.tool,
            "call_id": self.call_id,
            "time": self.time,
            **self.details,
        }


EventSink = Callable[[AuditEvent], object]


class Emitter:
    """Sends one call's events to the log and the callback."""

    __slots__ = ("call_id", "pending", "secrets", "sink", "tool")

    def __init__(
        self, sink: EventSink | None, tool: str, call_id: str, secrets: tuple[str, ...] = ()
    ) -> None:
        self.sink = sink
        self.tool = tool
        self.call_id = call_id
        self.secrets = secrets
        self.pending: list[Awaitable[object]] = []  # an async sink's, not yet awaited

    def __call__(self, kind: str, /, **details: Any) -> None:
        clean = redact_value(details, self.secrets) if self.secrets else details
        event = AuditEvent(kind, self.tool, self.call_id, clean)  # type: ignore[arg-type]
        if log.isEnabledFor(logging.INFO):
            log.info(
                "%s %s %s",
                kind,
                self.tool,
                " ".join(f"{k}={v}" for k, v in event.details.items()),
                extra={"command_handle_event": event.to_json()},
            )
        if self.sink is not None:
            try:
                outcome = self.sink(event)
            except Exception:
                log.exception("the events callback raised; the event was %s", kind)
            else:
                if inspect.isawaitable(outcome):
                    self.pending.append(outcome)

    async def settle(self) -> None:
        """Await what an async sink returned, in order; a failure is logged."""
        while self.pending:
            try:
                await self.pending.pop(0)
            except Exception:
                log.exception("the events callback raised")

    def settle_sync(self) -> None:
        """The same for a caller with no event loop: a short event loop of its own
        (in a helper thread when this thread already runs one)."""
        if self.pending:
            run_to_completion(self.settle)
