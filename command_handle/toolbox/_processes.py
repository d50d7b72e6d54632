"""Processes that outlive their call, as the model sees them.

A tool with a ``session`` returns while its program still runs; four built-in
tools then act on it, and exist in a Toolbox only when one of its tools has a
``session``:

- ``process_read(process_id, wait_seconds?)``: the output since the last
  read, whether it still runs, its exit once it ended;
- ``process_write(process_id, input, end_input?)``: text to its stdin or terminal;
- ``process_stop(process_id)``: its process group ended, its last output;
- ``process_list()``: the caller's processes.

Each process belongs to its owner (the caller's principal, or the MCP
session): another owner's id is answered exactly as an unknown one. What is
shown is redacted of the starting call's credentials first; a read's edges
are cuts (the output goes on before and after it), so the part of a secret a
cut leaves at either end is redacted too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._secrets import redact, redact_cut
from ._events import Emitter, EventSink
from ._plain import plain
from ._tool import Tool

if TYPE_CHECKING:
    from ..executor import Process, ProcessOutput

__all__ = [
    "PROCESS_TOOLS",
    "ProcessRecord",
    "builtin_tools",
    "list_view",
    "output_view",
    "unknown_process",
]

PROCESS_READ = "process_read"
PROCESS_WRITE = "process_write"
PROCESS_STOP = "process_stop"
PROCESS_LIST = "process_list"
MAX_WAIT = 60.0  # seconds a read may wait for output
_ID = {"type": "string", "description": "the id a call returned for a program still running"}


def builtin_tools() -> list[Tool]:
    """The four tools, as Tool Descriptions."""
    return [
        Tool(
            name=PROCESS_READ,
            description="Read what a running program (started by a tool that returned a "
            "process_id) wrote since the last read, and whether it is still running. With "
            "wait_seconds, first wait up to that long for new output.",
            parameters={
                "type": "object",
                "properties": {
                    "process_id": _ID,
                    "wait_seconds": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": MAX_WAIT,
                        "description": "seconds to wait for new output (default 0)",
                    },
                },
                "required": ["process_id"],
                "additionalProperties": False,
            },
            source="built-in",
            annotations={"readOnlyHint": True},
        ),
        Tool(
            name=PROCESS_WRITE,
            description="Send text to a running program's input (its stdin, or its terminal: "
            'end a line with "\\n" to press Enter). Read the answer with process_read.',
            parameters={
                "type": "object",
                "properties": {
                    "process_id": _ID,
                    "input": {"type": "string", "description": "the text to send"},
                    "end_input": {
                        "type": "boolean",
                        "description": "then close its input (end of file; Ctrl-D on a terminal)",
                    },
                },
                "required": ["process_id", "input"],
                "additionalProperties": False,
            },
            source="built-in",
        ),
        Tool(
            name=PROCESS_STOP,
            description="Stop a running program and everything it started (SIGTERM, then "
            "SIGKILL), and return its last output.",
            parameters={
                "type": "object",
                "properties": {"process_id": _ID},
                "required": ["process_id"],
                "additionalProperties": False,
            },
            source="built-in",
            annotations={"destructiveHint": True, "idempotentHint": True},
        ),
        Tool(
            name=PROCESS_LIST,
            description="List your programs that outlived their call: id, tool, age and state.",
            parameters={"type": "object", "properties": {}, "additionalProperties": False},
            source="built-in",
            annotations={"readOnlyHint": True},
        ),
    ]


PROCESS_TOOLS = frozenset({PROCESS_READ, PROCESS_WRITE, PROCESS_STOP, PROCESS_LIST})


@dataclass
class ProcessRecord:
    """What the Toolbox keeps about a process it started: the credentials its
    output is redacted of, whether its input is secret, and its call's id."""

    process: Process
    secrets: tuple[str, ...]
    secret_input: bool
    call_id: str
    reads: int = field(default=0)
    # per stream, a control sequence a read ended inside of, for the next read
    pending: dict[str, str] = field(default_factory=dict)

    def emitter(self, sink: EventSink | None) -> Emitter:
        return Emitter(sink, self.process.tool, self.call_id, self.secrets)


def unknown_process(process_id: str, mine: list[Process]) -> str:
    """The answer to an id that is not the caller's, whether it exists or not."""
    shown = process_id if len(process_id) <= 40 else process_id[:40] + "..."
    if mine:
        listed = ", ".join(f"`{each.id}` ({each.tool})" for each in mine[:10])
        return f"There is no process `{shown}` of yours. Your processes are: {listed}."
    return f"There is no process `{shown}` of yours; you have no processes (process_list)."


def _ending(process: Process, output: ProcessOutput) -> str:
    if output.exit_code is not None:
        how = f"exited with code {output.exit_code}"
    else:
        how = f"was killed by signal {output.signal}" if output.signal else "ended"
    reason = output.ended_by
    if reason == "stop":
        how = "was stopped (with everything it started)"
    elif reason == "lifetime":
        how = f"was stopped after its maximum lifetime of {process.lifetime:g} s"
    elif reason == "idle":
        how = f"was stopped: nobody read or wrote it for {process.idle:g} s"
    elif reason == "close":
        how = "was stopped: the application closed its tools"
    return f"Process `{process.id}` (`{process.tool}`) has ended: it {how}."


def _piece(text: str | bytes | None, secrets: tuple[str, ...], *, before: bool, after: bool) -> str:
    if text is None:
        return ""
    if isinstance(text, bytes):
        return f"[{len(text)} bytes of binary output]" if text else ""
    return redact_cut(text, secrets, cut_before=before, cut_after=after)


def _stream(
    record: ProcessRecord,
    name: str,
    head: str | bytes,
    tail: str | bytes | None,
    dropped: int,
    budget: int,
    running: bool,
) -> str:
    """One stream of one read as plain text (``_plain``), redacted (its edges
    are cuts) and within ``budget``."""
    secrets = record.secrets
    first = record.reads == 0
    if isinstance(head, str):
        terminal = record.process.terminal is not None
        head = record.pending.pop(name, "") + head
        head, pending = plain(head, more=running and tail is None, terminal=terminal)
        if isinstance(tail, str):
            tail, pending = plain(tail, more=running, terminal=terminal)
        if pending:
            record.pending[name] = pending
    if tail is None:
        text = _piece(head, secrets, before=not first, after=running)
        if len(text) <= budget:
            return text
        half = max(budget // 2, 1)
        omitted = len(text[half:-half].encode())
        return f"{text[:half]}\n[... {omitted} bytes omitted ...]\n{text[-half:]}"
    start = _piece(head, secrets, before=not first, after=True)
    end = _piece(tail, secrets, before=True, after=running)
    half = max(budget // 2, 1)
    omitted = dropped + len(start[half:].encode()) + len(end[:-half].encode())
    return f"{start[:half]}\n[... {omitted} bytes omitted ...]\n{end[-half:]}"


def output_view(
    record: ProcessRecord, output: ProcessOutput, budget: int, *, started: bool = False
) -> tuple[str, dict[str, Any]]:
    """The text and structured value of a read (or of the start's first output)."""
    process = record.process
    out = _stream(
        record,
        "stdout",
        output.stdout,
        output.stdout_tail,
        output.stdout_dropped,
        budget,
        output.running,
    )
    err = _stream(
        record,
        "stderr",
        output.stderr,
        output.stderr_tail,
        output.stderr_dropped,
        budget,
        output.running,
    )
    record.reads += 1
    parts: list[str] = []
    if output.running:
        if started:
            parts.append(
                f"The program is still running, as process `{process.id}`. Use process_read "
                "with this process_id for its output, process_write to send it input, "
                "process_stop to end it."
            )
        else:
            parts.append(f"Process `{process.id}` (`{process.tool}`) is still running.")
        if output.waiting_for_input:
            parts.append("It is waiting for input (process_write).")
    else:
        parts.append(_ending(process, output))
    label = "Output so far:" if started else "Output since the last read:"
    if out or err:
        if out:
            parts.append(f"{label}\n{out.rstrip(chr(10))}")
        if err:
            parts.append(f"stderr:\n{err.rstrip(chr(10))}")
    else:
        parts.append("No output yet." if started else "No new output.")
    structured: dict[str, Any] = {
        "process_id": process.id,
        "tool": process.tool,
        "running": output.running,
        "stdout": out,
        "stderr": err,
        "stdout_dropped": output.stdout_dropped,
        "stderr_dropped": output.stderr_dropped,
        "exit_code": output.exit_code,
        "signal": output.signal,
        "ended_by": output.ended_by,
        "waiting_for_input": output.waiting_for_input,
    }
    return redact("\n\n".join(parts), record.secrets), structured


def list_view(processes: list[Process]) -> tuple[str, dict[str, Any]]:
    """``process_list``'s text and structured value."""
    rows = [
        {
            "process_id": each.id,
            "tool": each.tool,
            "age_s": round(each.age, 1),
            "running": each.running,
            "ended_by": each.ended_by,
            "exit_code": None if each.result is None else each.result.exit_code,
        }
        for each in processes
    ]
    if not rows:
        return "You have no processes.", {"processes": []}
    lines = [
        f"- `{row['process_id']}` ({row['tool']}), {row['age_s']:g} s old, "
        + ("running" if row["running"] else f"ended ({row['ended_by']})")
        for row in rows
    ]
    return "Your processes:\n" + "\n".join(lines), {"processes": rows}
