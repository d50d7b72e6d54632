"""The subcommands for folders of tools: tools, call."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .. import _json
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_REFUSED,
    read_json_argument,
    run_interruptibly,
)
from .options import add_toolbox_flags, load_toolbox

if TYPE_CHECKING:
    from ..toolbox import AuditEvent

__all__ = ["add_tools_parsers", "why_refused"]


def _cmd_tools(options: argparse.Namespace) -> int:
    from ..toolbox import FORMATS, StrictSchemaError

    if options.format not in FORMATS:
        print(f"command-handle: --format must be one of {', '.join(FORMATS)}", file=sys.stderr)
        return EXIT_REFUSED
    toolbox = load_toolbox(options)
    for note in toolbox.skipped:
        print(f"skipped: {note}", file=sys.stderr)
    try:
        definitions = toolbox.describe(options.format)
    except StrictSchemaError as exc:
        print(f"command-handle: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    print(_json.stringify(definitions, indent=2))
    return EXIT_OK


def why_refused(event: AuditEvent) -> None:
    """The operator is told why a call was refused or denied, which the model is
    not (a missing variable, a Policy refusal): the reason, redacted, on stderr.
    For ``call`` the person at the terminal is the application."""
    if event.kind in ("refused", "denied"):
        detail = event.details.get("detail")
        reason = (event.details.get("reason") or event.kind) + (f" ({detail})" if detail else "")
        print(f"command-handle: {event.tool}: {event.kind}: {reason}", file=sys.stderr)


def _cmd_call(options: argparse.Namespace) -> int:
    toolbox = load_toolbox(options, events=why_refused)
    if options.tool not in toolbox:
        known = ", ".join(toolbox.names()) or "none"
        print(f"command-handle: no tool named {options.tool!r} (tools: {known})", file=sys.stderr)
        return EXIT_REFUSED
    args = read_json_argument(options.args, "--args") if options.args is not None else {}
    if not isinstance(args, dict):
        print("command-handle: --args must be a JSON object", file=sys.stderr)
        return EXIT_REFUSED
    result = run_interruptibly(lambda: toolbox.call(options.tool, args))
    print(_json.stringify(result.to_json(), indent=2))
    structured = result.structured
    if isinstance(structured, dict) and structured.get("running") and "process_id" in structured:
        # One call in one process: nobody could read, write or stop it later.
        toolbox.close()
        print(
            f"command-handle: process {structured['process_id']} was stopped as the command "
            "exits; serve the tools with `command-handle mcp` (or use the Python Toolbox) "
            "to keep a program running between calls",
            file=sys.stderr,
        )
    if not result.is_error:
        return EXIT_OK
    return EXIT_FAILED if result.result is not None else EXIT_REFUSED  # ran, or refused


def add_tools_parsers(commands: Any) -> None:
    tools = commands.add_parser(
        "tools", help="print the tool definitions of files and folders for an LLM API"
    )
    tools.add_argument("paths", nargs="+", metavar="PATH", help="tool files and folders")
    tools.add_argument(
        "--format",
        default="mcp",
        help="mcp (default), openai, openai-strict, anthropic or tool-handle",
    )
    add_toolbox_flags(tools, running=False)
    tools.set_defaults(run=_cmd_tools)

    call = commands.add_parser(
        "call", help="call a tool by name, as a model would; print is_error, content, structured"
    )
    call.add_argument("paths", nargs="+", metavar="PATH", help="tool files and folders")
    call.add_argument("--tool", required=True, help="the tool's name")
    call.add_argument("--args", help="the arguments: JSON text, or @file, or @- for stdin")
    add_toolbox_flags(call)
    call.set_defaults(run=_cmd_call)
