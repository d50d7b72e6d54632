"""UTCP's value rules: how arguments become text, and what a call returns."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .._json import deeper_than
from ..policy import option_prefix

__all__ = [
    "LEGACY_NAME",
    "MISSING_ARG",
    "optional_arguments",
    "legacy_arguments",
    "legacy_flags",
    "legacy_problems",
    "legacy_value",
    "render_arguments",
    "render_value",
    "utcp_value",
]


def render_value(value: object) -> str:
    """One argument as text: strings as given, numbers and booleans as utcp-cli
    renders them (Python ``str``: ``True``, ``1.0``), lists and objects as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def render_arguments(
    names: tuple[str, ...], args: Mapping[str, Any], optional: frozenset[str] = frozenset()
) -> dict[str, str]:
    """The placeholders' values. A null argument counts as missing. A missing one
    that the tool declares optional is the text ``MISSING_ARG_<name>``, as
    utcp-cli substitutes it (published wrappers strip that marker to drop a
    flag); any other missing one is left out, and the call is refused."""
    rendered = {name: render_value(args[name]) for name in names if args.get(name) is not None}
    for name in names:
        if name not in rendered and name in optional:
            rendered[name] = MISSING_ARG + name
    return rendered


MISSING_ARG = "MISSING_ARG_"


def optional_arguments(inputs: Mapping[str, Any]) -> frozenset[str]:
    """The properties an ``inputs`` schema declares and does not require."""
    properties = inputs.get("properties")
    if not isinstance(properties, Mapping):
        return frozenset()
    required = inputs.get("required")
    needed = set(required) if isinstance(required, list) else set()
    return frozenset(name for name in properties if name not in needed)


# A 0.x argument name becomes ``--name``: the args encoding's positional-name
# pattern, so no ``=`` (``--checkpoint-action=exec=...``) and no leading ``-``.
LEGACY_NAME = re.compile(r"[A-Za-z0-9][-A-Za-z0-9_]*")


def legacy_problems(
    args: Mapping[str, Any], declared: frozenset[str] | None, values_as_options: bool
) -> list[tuple[str, str, str]]:
    """Why these 0.x arguments cannot become flags, as (name, pointer, reason).

    Names must match :data:`LEGACY_NAME` and, when the tool declares its
    inputs, be declared. A text value that begins like an option is refused
    unless ``values_as_options`` (utcp-cli's behaviour)."""
    problems: list[tuple[str, str, str]] = []
    for name, value in args.items():
        if not LEGACY_NAME.fullmatch(name):
            problems.append((name, f"/{name}", "is not a name a flag can have"))
        elif declared is not None and name not in declared:
            problems.append((name, f"/{name}", "is not a parameter of this tool"))
        elif not values_as_options:
            items = value if isinstance(value, list) else [value]
            for index, item in enumerate(items):
                text = render_value(item) if item is not None and item is not False else ""
                if option_prefix(text) and item is not True:
                    where = f"/{name}/{index}" if isinstance(value, list) else f"/{name}"
                    problems.append(
                        (
                            name,
                            where,
                            f"must not start with {text[0]!r}: the program would "
                            "read it as an option",
                        )
                    )
                    break
    return problems


def legacy_arguments(
    style: str | None, args: Mapping[str, Any], order: tuple[str, ...] | None
) -> tuple[list[str], bytes | None]:
    """The argv words (and standard input) a 0.x provider's ``param_style`` makes
    of the arguments: ``named`` (the default) ``--name value``; ``positional``
    the values in the order the tool's ``inputs`` declares them; ``json`` one
    word, the arguments as compact JSON; ``json_stdin`` that JSON on standard
    input. Raises ValueError (with the argument's name) when positions cannot
    be kept."""
    if style == "json":
        return [json.dumps(dict(args), separators=(",", ":"), ensure_ascii=False)], None
    if style == "json_stdin":
        text = json.dumps(dict(args), separators=(",", ":"), ensure_ascii=False)
        return [], text.encode("utf-8")
    if style == "positional":
        if order is None:
            raise ValueError("positional arguments need the tool's inputs to declare their order")
        given = [name for name in order if args.get(name) is not None]
        gap = next((name for name in order[: len(given)] if name not in given), None)
        if gap is not None:
            raise ValueError(f"`{gap}` is missing, and the arguments after it would shift")
        return [render_value(args[name]) for name in given], None
    return legacy_flags(args), None


def legacy_flags(args: Mapping[str, Any]) -> list[str]:
    """UTCP 0.x: ``--name value`` per argument; ``true`` is ``--name``, ``false`` and
    null add nothing, a list repeats the flag for each item."""
    tokens: list[str] = []
    for name, value in args.items():
        if isinstance(value, bool):
            if value:
                tokens.append(f"--{name}")
        elif isinstance(value, list):
            for item in value:
                tokens += [f"--{name}", render_value(item)]
        elif value is not None:
            tokens += [f"--{name}", render_value(value)]
    return tokens


# A program's JSON output nested deeper than this is kept as text: Python's
# parser stops near 1,000 levels with RecursionError, and the value is still
# walked (redacted, serialised) for the model. Tool Form's max_data_depth.
MAX_OUTPUT_DEPTH = 256


def _parsed(output: str) -> object:
    """The JSON value of ``output``; ``_NOT_JSON`` when it is not JSON or is nested
    too deeply to handle."""
    try:
        value = json.loads(output)
    except (json.JSONDecodeError, RecursionError):
        return _NOT_JSON
    return _NOT_JSON if deeper_than(value, MAX_OUTPUT_DEPTH) else value


_NOT_JSON = object()


def utcp_value(output: str) -> object:
    """utcp-cli 1.x: the stripped output, parsed when it starts with ``{`` or ``[``
    (kept as text when it is nested deeper than :data:`MAX_OUTPUT_DEPTH`)."""
    if output.startswith(("{", "[")):
        value = _parsed(output)
        if value is not _NOT_JSON:
            return value
    return output


def legacy_value(output: str) -> object:
    """UTCP 0.x: any JSON document is parsed; otherwise the stripped text."""
    if not output.strip():
        return ""
    value = _parsed(output)
    return output.strip() if value is _NOT_JSON else value
