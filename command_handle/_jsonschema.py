"""jsonschema, imported when first needed and without its IRI grammar.

Importing jsonschema with the ``format-nongpl`` extra costs about 0.1 s of
format-checker imports, plus about a second more for ``rfc3987_syntax``,
which builds a grammar at import time. ``import command_handle`` and the CLI
pay neither: :func:`load` imports jsonschema on the first schema compiled,
with ``rfc3987_syntax`` hidden, and registers the ``iri`` and
``iri-reference`` format checks itself, importing ``rfc3987_syntax`` the
first time one of them is used. Every other format check is jsonschema's own.

:func:`check_schema` checks a schema against the Draft 2020-12 meta-schema
once per distinct schema: that check costs about a millisecond, and a folder
of tools, a reload or a dict handle passed to every call repeats the same
schemas.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from ._json import cache_key

__all__ = ["ArgumentsValidator", "check_schema", "load", "quick_check"]

# Distinct valid schemas remembered; the least recently seen is forgotten first.
CHECKED_SCHEMAS = 4096

_GRAMMAR = "rfc3987_syntax"


def _iri_check(rule: str) -> Callable[[object], bool]:
    def check(instance: object) -> bool:
        if not isinstance(instance, str):
            return True
        try:
            from rfc3987_syntax import is_valid_syntax  # type: ignore[import-untyped]
        except ImportError:  # not installed: jsonschema would not check it either
            return True
        return bool(is_valid_syntax(rule, instance))

    return check


@functools.cache
def load() -> ModuleType:
    """The jsonschema module, with lazy IRI format checks registered."""
    if _GRAMMAR in sys.modules:
        import jsonschema
    else:
        sys.modules[_GRAMMAR] = None  # type: ignore[assignment]  # its import fails: skipped
        try:
            import jsonschema
        finally:
            del sys.modules[_GRAMMAR]
    # The drafts that define the IRI formats.
    for draft in (
        jsonschema.Draft7Validator,
        jsonschema.Draft201909Validator,
        jsonschema.Draft202012Validator,
    ):
        checker = draft.FORMAT_CHECKER
        if "iri" not in checker.checkers:
            checker.checks("iri", raises=ValueError)(_iri_check("iri"))
            checker.checks("iri-reference", raises=ValueError)(_iri_check("iri_reference"))
    return jsonschema


_checked: OrderedDict[str, None] = OrderedDict()
_checked_lock = threading.Lock()


def check_schema(schema: object) -> None:
    """``Draft202012Validator.check_schema(schema)``, run once per distinct schema.

    Raises jsonschema's ``SchemaError`` as it does. A schema in the plain
    subset (see :func:`quick_check`) whose keywords hold what the meta-schema
    asks is accepted at once. Otherwise only schemas that passed are
    remembered, keyed by their JSON text (the meta-schema check depends on
    nothing else), so a refusal is always the check's own, with its path. A
    schema that is not plain JSON is checked every time.
    """
    if _plainly_valid_schema(schema, 0):
        return
    key = cache_key(schema)
    if key is not None:
        with _checked_lock:
            if key in _checked:
                _checked.move_to_end(key)
                return
    load().Draft202012Validator.check_schema(schema)
    if key is not None:
        with _checked_lock:
            _checked[key] = None
            while len(_checked) > CHECKED_SCHEMAS:
                _checked.popitem(last=False)


# -- a quick check in front of argument validation ------------------------------
#
# jsonschema takes about 20 us to accept {"word": "hi"} against a three-keyword
# schema (each property is validated by a new validator object), and several
# times that in a loop of calls. Most tools' parameters are plain: an object of
# typed properties with a few bounds. For those, a predicate compiled here
# answers "certainly valid" in a microsecond or two; whatever it does not
# accept, or any schema beyond the plain subset, goes to jsonschema, which
# decides and words the refusal. So the predicate may only ever say yes where
# jsonschema says yes; it says no (defer) whenever in doubt.

Check = Callable[[object], bool]

_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "$comment",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_MAX_DEPTH = 8


def _not_plain() -> ValueError:
    """The schema uses something the quick check does not decide (caught in
    :func:`quick_check`, never seen by a caller)."""
    return ValueError("not in the plain subset")


def _is_integer(value: object) -> bool:
    return type(value) is int or (type(value) is float and value.is_integer())


_TYPES: dict[str, Check] = {
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": lambda value: type(value) is int or type(value) is float,
    "boolean": lambda value: value is True or value is False,
    "null": lambda value: value is None,
    "array": lambda value: type(value) is list,
    "object": lambda value: type(value) is dict,
}


def _same_json(value: object, item: object) -> bool:
    """``value == item`` where that is jsonschema's equality too (no bool for a
    number, no containers); False (defer) otherwise."""
    if isinstance(value, str):
        return isinstance(item, str) and value == item
    if value is None or value is True or value is False:
        return item is value
    if type(value) in (int, float):
        return type(item) in (int, float) and value == item
    return False


def _count(schema: dict[str, object], keyword: str) -> int | None:
    bound = schema.get(keyword)
    if bound is None:
        return None
    if type(bound) is not int:
        raise _not_plain()
    return bound


def _number(schema: dict[str, object], keyword: str) -> float | None:
    bound = schema.get(keyword)
    if bound is None:
        return None
    if type(bound) not in (int, float):
        raise _not_plain()
    return bound  # type: ignore[return-value]


# The keywords the quick check decides.
_QUICK_KEYWORDS = _ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "items",
    "minItems",
    "maxItems",
}


def _compile(schema: object, formats: Any, depth: int) -> Check:
    if schema is True:
        return lambda value: True
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        raise _not_plain()
    checks: list[Check] = []
    if not schema.keys() <= _QUICK_KEYWORDS:
        raise _not_plain()
    kind = schema.get("type")
    if kind is not None:
        names = kind if isinstance(kind, list) else [kind]
        if not names or not all(isinstance(name, str) and name in _TYPES for name in names):
            raise _not_plain()
        tests = [_TYPES[name] for name in names]
        checks.append(
            tests[0] if len(tests) == 1 else lambda value: any(test(value) for test in tests)
        )
    if "enum" in schema:
        items = schema["enum"]
        if not isinstance(items, list):
            raise _not_plain()
        checks.append(lambda value: any(_same_json(value, item) for item in items))
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda value: _same_json(value, const))
    checks += _string_checks(schema, formats)
    checks += _number_checks(schema)
    checks += _array_checks(schema, formats, depth)
    checks += _object_checks(schema, formats, depth)
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(check(value) for check in checks)


def _string_checks(schema: dict[str, object], formats: Any) -> list[Check]:
    checks: list[Check] = []
    shortest, longest = _count(schema, "minLength"), _count(schema, "maxLength")
    if shortest is not None or longest is not None:
        low, high = shortest or 0, longest

        def length(value: object) -> bool:
            if not isinstance(value, str):
                return True
            return low <= len(value) and (high is None or len(value) <= high)

        checks.append(length)
    if "pattern" in schema:
        pattern = schema["pattern"]
        if not isinstance(pattern, str):
            raise _not_plain()
        checks.append(lambda value: not isinstance(value, str) or bool(re.search(pattern, value)))
    if "format" in schema and formats is not None:  # asserted only with a format checker
        name = schema["format"]
        checks.append(lambda value: bool(formats.conforms(value, name)))
    return checks


def _at_least(value: float, bound: float) -> bool:
    return value >= bound


def _at_most(value: float, bound: float) -> bool:
    return value <= bound


def _above(value: float, bound: float) -> bool:
    return value > bound


def _below(value: float, bound: float) -> bool:
    return value < bound


_BOUNDS: tuple[tuple[str, Callable[[float, float], bool]], ...] = (
    ("minimum", _at_least),
    ("maximum", _at_most),
    ("exclusiveMinimum", _above),
    ("exclusiveMaximum", _below),
)


def _number_checks(schema: dict[str, object]) -> list[Check]:
    present = [
        (bound, test)
        for keyword, test in _BOUNDS
        if (bound := _number(schema, keyword)) is not None
    ]
    if not present:
        return []

    def within(value: object) -> bool:
        if type(value) is int or type(value) is float:
            return all(test(value, bound) for bound, test in present)
        # Bounds apply to numbers only; another kind of number is left to jsonschema.
        return value is None or isinstance(value, (bool, str, list, dict))

    return [within]


def _array_checks(schema: dict[str, object], formats: Any, depth: int) -> list[Check]:
    checks: list[Check] = []
    fewest, most = _count(schema, "minItems"), _count(schema, "maxItems")
    if fewest is not None or most is not None:
        low, high = fewest or 0, most

        def size(value: object) -> bool:
            if type(value) is not list:
                return not isinstance(value, list)  # a list subclass: defer
            return low <= len(value) and (high is None or len(value) <= high)

        checks.append(size)
    if "items" in schema:
        each = _compile(schema["items"], formats, depth + 1)
        checks.append(
            lambda value: (
                all(each(item) for item in value)
                if type(value) is list
                else not isinstance(value, list)
            )
        )
    return checks


def _object_checks(schema: dict[str, object], formats: Any, depth: int) -> list[Check]:
    checks: list[Check] = []
    properties = schema.get("properties", {})
    if not isinstance(properties, dict) or not all(isinstance(k, str) for k in properties):
        raise _not_plain()
    compiled = {name: _compile(sub, formats, depth + 1) for name, sub in properties.items()}
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        raise _not_plain()
    closed = schema.get("additionalProperties", True)
    if closed is not True and closed is not False:
        raise _not_plain()
    if not compiled and not required and closed is True:
        return checks

    def members(value: object) -> bool:
        if type(value) is not dict:
            return not isinstance(value, dict)  # a dict subclass: defer
        for name in required:
            if name not in value:
                return False
        for name, item in value.items():
            check = compiled.get(name)
            if check is None:
                if closed is False:
                    return False
            elif not check(item):
                return False
        return True

    checks.append(members)
    return checks


def quick_check(schema: object, format_assertion: bool = True) -> Check | None:
    """A predicate true only for instances that ``schema`` certainly accepts
    (False: ask jsonschema), or None when the schema is not in the plain subset.
    ``format_assertion``: whether the validator it stands in front of asserts
    ``format`` (with Draft 2020-12's format checker)."""
    formats = load().Draft202012Validator.FORMAT_CHECKER if format_assertion else None
    try:
        return _compile(schema, formats, 0)
    except ValueError:
        return None


class ArgumentsValidator:
    """jsonschema's validator for ``schema``, with :func:`quick_check` in front:
    arguments the quick check accepts yield no errors at once; any others are
    validated by jsonschema, whose errors are the refusal."""

    __slots__ = ("quick", "validator")

    def __init__(self, schema: dict[str, Any], format_assertion: bool = True) -> None:
        validator_class = load().Draft202012Validator
        checker = validator_class.FORMAT_CHECKER if format_assertion else None
        self.validator = validator_class(schema, format_checker=checker)
        self.quick = quick_check(schema, format_assertion)

    def iter_errors(self, instance: object) -> Iterator[Any]:
        if self.quick is not None:
            try:
                if self.quick(instance):
                    return iter(())
            except RecursionError:
                pass  # jsonschema decides, and says why
        errors: Iterator[Any] = self.validator.iter_errors(instance)
        return errors

    def is_valid(self, instance: object) -> bool:
        return next(self.iter_errors(instance), None) is None


# -- the meta-schema check of a plain schema ------------------------------------
#
# The 2020-12 meta-schema constrains each keyword's value and lets unknown ones
# be. A schema made only of the plain subset's keywords is valid when each of
# those values is what the meta-schema asks, which a walk decides in
# microseconds where jsonschema takes about a millisecond. As with the quick
# check, True means certainly valid and False means "ask jsonschema".

_SIMPLE_TYPES = frozenset(_TYPES)


def _unique_strings(value: object, allowed: frozenset[str] | None = None) -> bool:
    if type(value) is not list or not all(type(item) is str for item in value):
        return False
    return len(set(value)) == len(value) and (allowed is None or set(value) <= allowed)


def _type_names(value: object) -> bool:
    if type(value) is str:
        return value in _SIMPLE_TYPES
    return bool(value) and _unique_strings(value, _SIMPLE_TYPES)


def _regex(value: object) -> bool:
    if type(value) is not str:
        return False
    try:
        re.compile(value)  # the meta-schema's format "regex", as jsonschema checks it
    except re.error:
        return False
    return True


def _anything(value: object) -> bool:
    return True


def _is_string(value: object) -> bool:
    return type(value) is str


def _is_flag(value: object) -> bool:
    return value is True or value is False


def _is_count(value: object) -> bool:
    return type(value) is int and value >= 0


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


def _is_list(value: object) -> bool:
    return type(value) is list


# What the 2020-12 meta-schema asks of each plain keyword's value.
_KEYWORD_VALUES: dict[str, Callable[[object], bool]] = {
    **dict.fromkeys(("title", "description", "$comment", "format"), _is_string),
    **dict.fromkeys(("deprecated", "readOnly", "writeOnly"), _is_flag),
    **dict.fromkeys(("minLength", "maxLength", "minItems", "maxItems"), _is_count),
    **dict.fromkeys(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"), _is_number),
    "examples": _is_list,
    "enum": _is_list,
    "default": _anything,
    "const": _anything,
    "type": _type_names,
    "pattern": _regex,
    "required": _unique_strings,
}


def _plainly_valid_schema(schema: object, depth: int) -> bool:
    """Whether ``schema`` certainly passes the 2020-12 meta-schema (False: ask jsonschema)."""
    if schema is True or schema is False:
        return True
    if type(schema) is not dict or depth > _MAX_DEPTH:
        return False
    for keyword, value in schema.items():
        if keyword == "properties":
            if type(value) is not dict:
                return False
            for name, child in value.items():
                if type(name) is not str or not _plainly_valid_schema(child, depth + 1):
                    return False
        elif keyword == "additionalProperties" or keyword == "items":
            if not _plainly_valid_schema(value, depth + 1):
                return False
        else:
            check = _KEYWORD_VALUES.get(keyword)
            if check is None or not check(value):
                return False  # a keyword beyond the subset, or a value it refuses
    return True
