"""JSON text helpers shared by every layer.

One place decides how a number becomes text (ECMAScript ``Number::toString``,
RFC 8785 section 3.2.2.3), how JSON is written (compact, no ASCII escaping,
like ``JSON.stringify``) and how JSON is read (duplicate keys and non-finite
numbers are refused, because a Python dict cannot carry the first and JSON
cannot carry the second).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import Decimal
from json.encoder import encode_basestring
from typing import Any

from .errors import CommandHandleError

__all__ = [
    "JSONDecodeError",
    "JSONDepthError",
    "NonJSONValueError",
    "deeper_than",
    "cache_key",
    "format_number",
    "scalar_text",
    "loads",
    "stringify",
]

_encode_string: Callable[[str], str] = encode_basestring


class NonJSONValueError(CommandHandleError, ValueError):
    """A value that JSON cannot represent (NaN, infinity, bytes, a non-string key...)."""


class JSONDecodeError(CommandHandleError, ValueError):
    """JSON text that is malformed or that this project refuses to read."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class JSONDepthError(JSONDecodeError):
    """JSON text nested too deeply to read: Python's parser recurses once per
    level and stops at the interpreter's recursion limit (about 1,000)."""


def deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` holds arrays or objects nested more than ``limit`` levels
    (a walk without recursion, so any depth is safe to ask about)."""
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def cache_key(value: object) -> str | None:
    """``value`` as compact JSON text, in its own key order, for the key of a
    cache of what is built from it; None when ``value`` is not plain JSON.

    Plain means that the text reads back as an equal value: a tuple, a key
    that is not a string or a non-finite number has no key, so two values
    that would be built differently never share one. Keys are not sorted: the
    order of an object's members can show (in an environment, in a result).
    """
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return text if json.loads(text) == value else None
    except (TypeError, ValueError, RecursionError):
        return None


def format_number(value: int | float) -> str:
    """Return the text of a JSON number as ECMAScript's Number::toString does.

    Integers keep their exact digits (Python reads JSON integers exactly, so
    rounding them through a double would lose information the author wrote).
    Floats use the shortest round-tripping digits, laid out by the ECMAScript
    rules: ``1.0 -> "1"``, ``2.5 -> "2.5"``, ``1e21 -> "1e+21"``,
    ``1e-7 -> "1e-7"``. Non-finite numbers raise :class:`NonJSONValueError`.
    """
    if type(value) is int:
        return str(value)
    if isinstance(value, bool):
        raise NonJSONValueError("a boolean is not a number")
    if isinstance(value, int):  # int subclasses other than bool
        return str(int(value))
    if not math.isfinite(value):
        raise NonJSONValueError("non-finite numbers (NaN, Infinity) have no JSON form")
    if value == 0:
        return "0"  # covers -0.0, which ECMAScript also prints as "0"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    # value = 0.d1d2..dk * 10**n in ECMAScript terms
    n = exponent + len("".join(map(str, digit_tuple)))
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp_text = ("+" if e >= 0 else "-") + str(abs(e))
    if k == 1:
        return sign + digits + "e" + exp_text
    return sign + digits[0] + "." + digits[1:] + "e" + exp_text


def stringify(value: object, indent: int | None = None, max_depth: int = 512) -> str:
    """Serialise a JSON value the way ``JSON.stringify(value, null, indent)`` does.

    Strings are not ASCII-escaped; numbers go through :func:`format_number`.
    Binary values, non-string keys and non-finite numbers raise
    :class:`NonJSONValueError`; nesting deeper than ``max_depth`` raises
    :class:`RecursionError` so callers can turn it into a limit error.
    """
    parts: list[str] = []
    if indent:
        _write_indented(value, parts, " " * indent, "\n", max_depth)
    else:
        _write_compact(value, parts, max_depth)
    return "".join(parts)


def scalar_text(value: object) -> str | None:
    """Text of a boolean (``true``/``false``), number (:func:`format_number`) or string;
    None for anything else. Raises :class:`NonJSONValueError` for NaN and infinity."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return format_number(value)
    if isinstance(value, str):
        return value
    return None


def _scalar_text(value: object) -> str | None:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _encode_string(value)
    if isinstance(value, int | float):
        return format_number(value)
    return None


def _write_compact(value: object, parts: list[str], depth: int) -> None:
    if isinstance(value, str):
        parts.append(_encode_string(value))
        return
    if isinstance(value, dict):
        if depth <= 0:
            raise RecursionError("JSON value nested too deeply")
        if not value:
            parts.append("{}")
            return
        parts.append("{")
        first = True
        for key, item in value.items():
            if not isinstance(key, str):
                raise NonJSONValueError("object keys must be strings")
            if not first:
                parts.append(",")
            first = False
            parts.append(_encode_string(key))
            parts.append(":")
            _write_compact(item, parts, depth - 1)
        parts.append("}")
        return
    if isinstance(value, list):
        if depth <= 0:
            raise RecursionError("JSON value nested too deeply")
        if not value:
            parts.append("[]")
            return
        parts.append("[")
        first = True
        for item in value:
            if not first:
                parts.append(",")
            first = False
            _write_compact(item, parts, depth - 1)
        parts.append("]")
        return
    text = _scalar_text(value)
    if text is None:
        raise _no_json_form(value)
    parts.append(text)


def _write_indented(value: object, parts: list[str], unit: str, newline: str, depth: int) -> None:
    if isinstance(value, dict):
        if depth <= 0:
            raise RecursionError("JSON value nested too deeply")
        if not value:
            parts.append("{}")
            return
        inner = newline + unit
        parts.append("{")
        first = True
        for key, item in value.items():
            if not isinstance(key, str):
                raise NonJSONValueError("object keys must be strings")
            parts.append(inner if first else "," + inner)
            first = False
            parts.append(_encode_string(key))
            parts.append(": ")
            _write_indented(item, parts, unit, inner, depth - 1)
        parts.append(newline + "}")
        return
    if isinstance(value, list):
        if depth <= 0:
            raise RecursionError("JSON value nested too deeply")
        if not value:
            parts.append("[]")
            return
        inner = newline + unit
        parts.append("[")
        first = True
        for item in value:
            parts.append(inner if first else "," + inner)
            first = False
            _write_indented(item, parts, unit, inner, depth - 1)
        parts.append(newline + "]")
        return
    text = _scalar_text(value)
    if text is None:
        raise _no_json_form(value)
    parts.append(text)


def _no_json_form(value: object) -> NonJSONValueError:
    if isinstance(value, bytes):
        return NonJSONValueError("a binary value has no JSON form; encode it with base64 first")
    return NonJSONValueError(f"a {type(value).__name__} value has no JSON form")


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


class _DuplicateKey(Exception):
    """Leaves the object hook for :func:`loads`, which turns it into a JSONDecodeError."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _reject_constant(name: str) -> object:
    raise NonJSONValueError(f"{name} is not a JSON number")


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NonJSONValueError(f"the number {text} is too large for a double")
    return value


def loads(text: str | bytes) -> Any:
    """Read JSON text strictly: duplicate keys, NaN and overflowing numbers are errors.

    Those three are found after the text has parsed, so their error names the
    JSON Pointer of the offending value instead of a line and column. Text
    nested too deeply for the parser raises :class:`JSONDepthError`.
    """
    try:
        return json.loads(
            text,
            object_pairs_hook=_reject_duplicates,
            parse_constant=_reject_constant,
            parse_float=_parse_float,
        )
    except _DuplicateKey as exc:
        raise JSONDecodeError(
            f"duplicate object key {exc.key!r}: JSON objects here must have unique keys"
            + _at(_locate(text))
        ) from None
    except NonJSONValueError as exc:
        raise JSONDecodeError(str(exc) + _at(_locate(text))) from None
    except json.JSONDecodeError as exc:
        raise JSONDecodeError(exc.msg, exc.lineno, exc.colno) from None
    except UnicodeDecodeError as exc:
        raise JSONDecodeError(
            f"JSON text is not valid UTF-8: {exc.reason} (at byte {exc.start})"
        ) from None
    except RecursionError:
        raise JSONDepthError("JSON text is nested too deeply to read") from None


class _Pairs(list[tuple[str, Any]]):
    """An object as read, duplicates and all."""


class _Refused(str):
    """A number JSON cannot hold, as written."""


def _lenient_float(text: str) -> float | _Refused:
    value = float(text)
    return value if math.isfinite(value) else _Refused(text)


def _at(pointer: str | None) -> str:
    if pointer is None:
        return ""
    return f" (at {pointer})" if pointer else " (at the document root)"


def _locate(text: str | bytes) -> str | None:
    """The JSON Pointer of the first duplicate key or non-finite number in ``text``."""
    tree = json.loads(
        text, object_pairs_hook=_Pairs, parse_constant=_Refused, parse_float=_lenient_float
    )
    pending: list[tuple[object, str]] = [(tree, "")]
    while pending:
        node, pointer = pending.pop()
        if isinstance(node, _Refused):
            return pointer
        if isinstance(node, _Pairs):
            seen: set[str] = set()
            children = []
            for key, value in node:
                child = pointer + "/" + key.replace("~", "~0").replace("/", "~1")
                if key in seen:
                    return child
                seen.add(key)
                children.append((value, child))
            pending.extend(reversed(children))
        elif isinstance(node, list):
            pending.extend(reversed([(item, f"{pointer}/{i}") for i, item in enumerate(node)]))
    return None
