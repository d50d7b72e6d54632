"""One program with an argv the application wrote, as a prepared call.

The loader runs ``bash FILE schema`` and ``git`` through the executor like
every call. Their argv is the application's (a file path, a URL, a ref), so it
reaches the handle as a ``$context`` value: no text of it is read as a
template, and the handle's checks (the program under the Policy, the
directory, the environment, the argv text) all apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..handle import CommandHandle

if TYPE_CHECKING:
    from ..call import CommandResult, PreparedCall
    from ..policy import Policy

__all__ = ["ARGV", "CWD", "STDIN", "program_call"]

# Context names the plugin layer fills in itself; a ":" keeps them apart from
# the application's configuration keys, which are identifiers.
ARGV = "bash_tool:argv"
STDIN = "bash_tool:stdin"
CWD = "working_directory"

_HANDLES: dict[tuple[str, tuple[str, ...], float | None], CommandHandle] = {}


def _handle(program: str, variables: tuple[str, ...], timeout: float | None) -> CommandHandle:
    key = (program, variables, timeout)
    handle = _HANDLES.get(key)
    if handle is None:
        document: dict[str, object] = {
            "name": "bash_tool_loader",
            "handle": "command",
            "command": program,
            "arguments": {"$context": ARGV},
            "directory": {"$context": CWD},
            "environment": {name: {"$context": f"env:{name}"} for name in variables},
            "io": {"stdin": {"$context": STDIN}},
        }
        if timeout is not None:
            document["timeout"] = timeout
        handle = _HANDLES[key] = CommandHandle.from_dict(document)
    return handle


def program_call(
    program: str,
    argv: Sequence[str],
    policy: Policy,
    *,
    cwd: str | None = None,
    environment: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float | None = None,
) -> PreparedCall[CommandResult]:
    """``program`` (a bare name found on the Policy's search path, or a path)
    with ``argv``, checked under ``policy`` (``timeout`` lowers the Policy's);
    spawns nothing."""
    environment = dict(environment or {})
    context: dict[str, object] = {ARGV: list(argv)}
    context.update({f"env:{name}": value for name, value in environment.items()})
    if cwd is not None:
        context[CWD] = cwd
    if stdin is not None:
        context[STDIN] = stdin
    handle = _handle(program, tuple(sorted(environment)), timeout)
    return handle.prepare({}, policy, context=context)
