"""The model's side of a call: its arguments as strict mode sends them, and what it
is told when they are refused.

Messages to the model name the parameter (``path``, ``options.depth``,
``files[2]``), say what was expected, and hold no handle internals (no JSON
Pointer into the handle, no template) and no values.
"""

from __future__ import annotations

import re
from typing import Any

from ..args import ArgsError
from ..call import CommandResult, PlanResult
from ..errors import (
    ArgumentsError,
    ArgvTextError,
    DirectoryError,
    EnvironmentVariableError,
    HandleError,
    LaunchError,
    OptionArgumentError,
    PathArgumentError,
    ProgramChangedError,
    TemplateEvaluationError,
    Violation,
)
from ..handle import MAX_ARGUMENT_DEPTH

__all__ = ["after_run_message", "drop_nulls", "model_message", "parameter_name"]


def _accepts_null(schema: object) -> bool:
    if not isinstance(schema, dict):
        return schema is True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if None in schema.get("enum", ()) or ("const" in schema and schema["const"] is None):
        return True
    branches = [*schema.get("anyOf", ()), *schema.get("oneOf", ())]
    return any(_accepts_null(branch) for branch in branches)


def _resolve(schema: object, root: object) -> object:
    """``schema``, or the local definition its ``$ref`` (``#/...``) points at."""
    for _ in range(32):  # a chain of references, not a cycle
        if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
            return schema
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            return schema
        target: object = root
        for part in ref[2:].split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            target = target.get(key) if isinstance(target, dict) else None
        if target is None:
            return schema
        schema = target
    return schema


def drop_nulls(schema: object, value: Any, root: object = None, depth: int = 0) -> Any:
    """``value`` without the nulls that stand for absent optional properties.

    OpenAI's strict mode makes the model send every property, with ``null``
    for one it would omit. A null is removed where the property is optional
    and its schema does not accept null; anywhere else it stays, and
    validation judges it. Local ``$ref``s are followed. Past
    :data:`MAX_ARGUMENT_DEPTH` levels the value is left as it is (a recursive
    schema would otherwise recurse as deep as the model nests): validation
    refuses it for its depth.
    """
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or depth > MAX_ARGUMENT_DEPTH:
        return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return value
        required = set(schema.get("required", ()))
        out: dict[str, Any] = {}
        for name, item in value.items():
            sub = _resolve(properties.get(name), root)
            if item is None and name not in required and sub is not None and not _accepts_null(sub):
                continue
            out[name] = drop_nulls(sub, item, root, depth + 1) if sub is not None else item
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [drop_nulls(schema["items"], item, root, depth + 1) for item in value]
    return value


def parameter_name(pointer: str) -> str:
    """``/options/depth`` as ``options.depth``, ``/files/2`` as ``files[2]``."""
    name = ""
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if part.isdigit() and name:
            name += f"[{part}]"
        else:
            name += f".{part}" if name else part
    return name


def _violation(violation: Violation) -> list[str]:
    parent = parameter_name(violation.pointer)
    if violation.keyword == "required" and violation.names:
        return [f"`{_join(parent, n)}` is required" for n in violation.names]
    if violation.keyword == "additionalProperties" and violation.names:
        where = f"`{parent}`" if parent else "this tool"
        return [f"`{_join(parent, n)}` is not a parameter of {where}" for n in violation.names]
    if violation.keyword in ("option", "path"):
        return [f"`{parent}` {violation.message}" if parent else violation.message]
    subject = f"`{parent}`" if parent else "the arguments"
    if parent and violation.message.startswith(subject):
        return [violation.message]  # it names the parameter itself (a UTCP size refusal)
    return [f"{subject} {violation.message}"]


def _join(parent: str, name: str) -> str:
    return f"{parent}.{name}" if parent else name


def _leaves(value: object, pointer: str = "") -> list[tuple[str, str]]:
    """Every text in the arguments (keys included), with its JSON Pointer."""
    found: list[tuple[str, str]] = []
    pending: list[tuple[object, str]] = [(value, pointer)]
    while pending:
        item, where = pending.pop()
        if isinstance(item, str):
            found.append((where, item))
        elif isinstance(item, dict):
            for key, sub in item.items():
                child = f"{where}/{str(key).replace('~', '~0').replace('/', '~1')}"
                found.append((child, str(key)))
                pending.append((sub, child))
        elif isinstance(item, list):
            pending.extend((sub, f"{where}/{index}") for index, sub in enumerate(item))
    return sorted(found)


def _byte_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def text_refusal(tool: str, error: HandleError, args: object) -> str | None:
    """The model's text for a value no program can take (a NUL, a lone
    surrogate, an argument or argv too large), naming the parameter that holds
    it; None when ``error`` is another refusal or no parameter holds it."""
    message = error.message
    if not isinstance(error, (ArgvTextError, EnvironmentVariableError)):
        return None
    leaves = _leaves(args)
    if "NUL" in message:
        for pointer, text in leaves:
            if "\x00" in text:
                return (
                    f"The call to `{tool}` was refused: `{parameter_name(pointer)}` holds a NUL "
                    "character, which cannot be passed to a program. Nothing ran."
                )
    if "surrogate" in message:
        for pointer, text in leaves:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                return (
                    f"The call to `{tool}` was refused: `{parameter_name(pointer)}` holds a lone "
                    "surrogate, which cannot be passed to a program. Nothing ran."
                )
    if isinstance(error, ArgvTextError) and " bytes" in message and leaves:
        pointer, text = max(leaves, key=lambda leaf: _byte_size(leaf[1]))
        total = re.search(r"take (\d+) bytes; the system allows", message)
        if total is not None:  # all of them together: the largest is named, not blamed alone
            return (
                f"The call to `{tool}` was refused: the arguments are too large to pass to a "
                f"program ({total.group(1)} bytes in all; {_limit_of(message)}); the largest "
                f"is `{parameter_name(pointer)}` ({_byte_size(text)} bytes). Nothing ran."
            )
        return (
            f"The call to `{tool}` was refused: `{parameter_name(pointer)}` is too large to pass "
            f"to a program ({_byte_size(text)} bytes; {_limit_of(message)}). Nothing ran."
        )
    return None


def _holding(args: object, character: str) -> str | None:
    """The parameter whose text holds ``character`` (the first, in name order)."""
    for pointer, text in _leaves(args):
        if character in text:
            return parameter_name(pointer)
    return None


def _limit_of(message: str) -> str:
    """The limit an E2BIG refusal states, as the model is told it."""
    markers = ("one argument may have at most", "one variable may have at most")
    for marker in (*markers, "the system allows"):
        at = message.find(marker)
        if at >= 0:
            return message[at:].rstrip(".")
    return "the system's limit"


def model_message(tool: str, error: HandleError, args: object = None) -> str:
    """What the model is told when ``error`` refused its call to ``tool``
    (``args``: the arguments, to name the parameter a value came from)."""
    named = text_refusal(tool, error, args)
    if named is not None:
        return named
    if isinstance(error, (OptionArgumentError, PathArgumentError)):
        return f"The call to `{tool}` was refused: {error.message}. Nothing ran."
    if isinstance(error, ArgumentsError):
        lines = [line for v in error.violations for line in _violation(v)]
        more = "\n- (more problems were not listed)" if error.more else ""
        body = "\n".join(f"- {line}" for line in lines)
        return f"The arguments for `{tool}` are not valid; nothing ran:\n{body}{more}"
    cause = error.form_error if isinstance(error, TemplateEvaluationError) else None
    if isinstance(cause, ArgsError) and cause.character is not None:
        holder = _holding(args, cause.character)
        if holder is not None:
            return (
                f"The call to `{tool}` was refused: `{holder}` holds a character that cannot "
                f"be passed to a program (U+{cause.code_point:04X}). Nothing ran."
            )
        return (
            f"The call to `{tool}` was refused: an argument holds a character that cannot "
            f"be passed to a program (U+{cause.code_point:04X}). Nothing ran."
        )
    if isinstance(error, ArgvTextError):
        return (
            f"The call to `{tool}` was refused: an argument cannot be passed to a program "
            "(it holds a NUL character, or the arguments are too large). Nothing ran."
        )
    if isinstance(error, LaunchError):
        return (
            f"The tool `{tool}` could not run: the system refused to start its program (the "
            "application's log says why). Nothing ran."
        )
    if isinstance(error, ProgramChangedError):
        return (
            f"The call to `{tool}` was not run: its program changed after the call was "
            "approved. Nothing ran."
        )
    if isinstance(error, DirectoryError):
        return (
            f"The call to `{tool}` was refused: its working directory does not exist or "
            "cannot be entered. Nothing ran."
        )
    return (
        f"The tool `{tool}` could not be run: the application refused or could not prepare "
        "the call (its log says why). Nothing ran; changing the arguments will not help."
    )


def after_run_message(tool: str, error: HandleError, ran: PlanResult | CommandResult | None) -> str:
    """What the model is told when a later command of a plan was refused at run
    time (a value from a step's output began like an option, say): the steps
    before it ran, and their output is shown."""
    text = (
        f"The call to `{tool}` was stopped before one of its commands: {error.message}. "
        "The commands before it ran."
    )
    output = ran.output if isinstance(ran, PlanResult) else ""
    return f"{output}\n\n{text}" if output else text
