"""From a UTCP template to the equivalent Command Handle, where one exists.

A template is migratable when it is one step running one program with
literal words and placeholders: no variables, substitutions, pipes,
redirections, globs or builtins. The handle keeps the words as they are;
each placeholder becomes a Tool Form reference to the argument.
"""

from __future__ import annotations

import re
from typing import Any

from ..form import escape
from ..plan import Arg, Lit, word_is_static, word_text
from ._api import Source, _template, translate
from ._models import LegacyCliProvider, UtcpTool

__all__ = ["command_handle_for"]

_GLOB = re.compile(r"[*?\[]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BUILTIN_NAMES = frozenset({"cd", "echo", "pwd", "true", "false", ":", "export"})


def command_handle_for(source: Source) -> dict[str, Any] | None:
    """``{"handle": ..., "notes": [...]}`` for a migratable template, else None."""
    template = _template(source)
    tool = template if isinstance(template, UtcpTool) else None
    inner = tool.template if tool is not None else template
    if isinstance(inner, LegacyCliProvider):
        return None  # its arguments are open-ended flags: no fixed handle
    plan = translate(inner)
    if len(plan.steps) != 1:
        return None
    sequence = plan.steps[0].body
    if len(sequence.pipelines) != 1 or len(sequence.pipelines[0].commands) != 1:
        return None
    pipeline = sequence.pipelines[0]
    command = pipeline.commands[0]
    if pipeline.negated or command.kind != "simple" or command.assignments or command.redirects:
        return None
    if not command.words or not word_is_static(command.words[0]):
        return None
    program = word_text(command.words[0])
    if program in _BUILTIN_NAMES:
        return None
    arguments: list[object] = []
    for word in command.words[1:]:
        converted = _word(word)
        if converted is None:
            return None
        arguments.append(converted)
    names = list(plan.arguments)
    parameters = (
        tool.inputs
        if tool is not None and tool.inputs
        else {
            "type": "object",
            "properties": {name: {"type": "string"} for name in names},
            "required": names,
        }
    )
    handle: dict[str, Any] = {
        "name": re.sub(r"[^A-Za-z0-9_-]", "_", (tool.name if tool else plan.name))[:64],
        "description": (tool.description if tool else "")
        or f"Migrated from the UTCP template {plan.name!r}.",
        "handle": "command",
        "parameters": parameters,
        "command": escape(program),
        "arguments": arguments,
    }
    notes = [
        "Numbers and booleans now reach the program as JSON text (true, 1), where "
        "utcp-cli used Python's str() (True, 1.0 for a float like 1.0).",
    ]
    if plan.working_dir is not None:
        handle["directory"] = escape(plan.working_dir)
    if plan.environment.set:
        handle["environment"] = {name: escape(value) for name, value in plan.environment.set}
        if any("$" in value for _, value in plan.environment.set):
            notes.append(
                "env_vars values with ${NAME} were copied as text: UTCP variables have no "
                "Command Handle equivalent, so put the values in the handle or the policy."
            )
    if plan.environment.inherit:
        notes.append(
            "A Command Handle inherits no host variables itself: list the names "
            f"({', '.join(plan.environment.inherit)}) in Policy.inherit_environment."
        )
    return {"handle": handle, "notes": notes}


def _word(word: tuple[object, ...]) -> object | None:
    if len(word) == 1 and isinstance(word[0], Arg):
        return {"$": word[0].name}
    pieces: list[str] = []
    for part in word:
        if isinstance(part, Lit):
            if not part.quoted and _GLOB.search(part.text):
                return None  # bash would glob this word
            pieces.append(str(escape(part.text)))
        elif isinstance(part, Arg) and _IDENTIFIER.fullmatch(part.name):
            pieces.append("{{" + part.name + "}}")
        else:
            return None
    return "".join(pieces)
