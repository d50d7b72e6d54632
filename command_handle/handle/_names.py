"""A template that reads a name the parameters cannot hold is a load error.

``"{{nmae}}"`` where the parameter is ``name`` evaluates to nothing (an empty
argument, a missing flag) instead of failing; the author learns it from a
model's odd result, if ever. The names a schema *provides* are those a model
is shown: ``properties`` (through ``allOf``/``anyOf``/``oneOf``/``if``/
``then``/``else`` and local ``$ref``s), names a ``patternProperties`` pattern
matches, and any name when ``additionalProperties`` is given and not false.
An absent ``additionalProperties`` provides nothing more: the model is never
told of a name no property declares. A schema that declares no property at
all (``{"type": "object"}``) is taken as open and not checked.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

from ..form import read_names

__all__ = ["unprovided_names"]

_BRANCHES = ("allOf", "anyOf", "oneOf")
_CONDITIONALS = ("if", "then", "else")
_MAX_DEPTH = 32


class _Any(Exception):
    """The schema may hold any name (or cannot be read for certain)."""


def _resolve(schema: object, root: dict[str, Any]) -> object:
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if not isinstance(ref, str):
        return schema
    if not ref.startswith("#"):
        raise _Any
    target: object = root
    for part in ref[1:].split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or key not in target:
            raise _Any
        target = target[key]
    return target


def _collect(
    schema: object, root: dict[str, Any], names: set[str], patterns: list[str], depth: int
) -> None:
    if depth > _MAX_DEPTH:
        raise _Any
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        if schema is True:
            raise _Any
        return
    if "$ref" in schema:
        _collect({"$ref": schema["$ref"]}, root, names, patterns, depth + 1)
    if "additionalProperties" in schema and schema["additionalProperties"] is not False:
        raise _Any
    if "dependentSchemas" in schema or schema.get("unevaluatedProperties", False) is not False:
        raise _Any
    properties = schema.get("properties")
    if isinstance(properties, dict):
        names.update(properties)
    pattern_properties = schema.get("patternProperties")
    if isinstance(pattern_properties, dict):
        patterns.extend(pattern_properties)
    for key in _BRANCHES:
        for branch in schema.get(key, ()) if isinstance(schema.get(key), list) else ():
            _collect(branch, root, names, patterns, depth + 1)
    for key in _CONDITIONALS:
        if key in schema:
            _collect(schema[key], root, names, patterns, depth + 1)


def _provided(parameters: dict[str, Any]) -> tuple[set[str], list[str]] | None:
    names: set[str] = set()
    patterns: list[str] = []
    try:
        _collect(parameters, parameters, names, patterns, 0)
    except _Any:
        return None
    if not names and not patterns:
        return None  # a schema that declares nothing ({"type": "object"}) is open
    return names, patterns


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return True  # a pattern Python cannot read may match: do not guess


def unprovided_names(
    parameters: dict[str, Any] | frozenset[str], templates: Iterable[tuple[str, object]]
) -> list[tuple[str, str, str]]:
    """``(pointer, name, hint)`` for each name a template reads that ``parameters``
    (a JSON Schema, or the exact set of names) cannot provide; ``templates`` are
    ``(pointer, source)`` pairs."""
    if isinstance(parameters, frozenset):
        names, patterns = set(parameters), list[str]()
    else:
        provided = _provided(parameters)
        if provided is None:
            return []
        names, patterns = provided
    problems: list[tuple[str, str, str]] = []
    for pointer, source in templates:
        read, bound = read_names(source, pointer)
        for where, name in read:
            if name in names or name in bound or any(_matches(p, name) for p in patterns):
                continue
            close = difflib.get_close_matches(name, sorted(names), n=1)
            hint = f"did you mean `{close[0]}`?" if close else "declare it in parameters"
            problems.append((where, name, hint))
    return problems
