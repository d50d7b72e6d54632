"""jsonschema, imported when first needed, without its IRI grammar, and with
JSON Schema's own regular expressions (ECMA-262).

Importing jsonschema with the ``format-nongpl`` extra costs about 0.1 s of
format-checker imports, plus about a second more for ``rfc3987_syntax``,
which builds a grammar at import time. ``import command_handle`` and the CLI
pay neither: :func:`load` imports jsonschema when it is first needed,
with ``rfc3987_syntax`` hidden, and registers the ``iri`` and
``iri-reference`` format checks itself, importing ``rfc3987_syntax`` the
first time one of them is used. Every other format check is jsonschema's own.

JSON Schema's ``pattern`` and ``patternProperties`` are ECMA-262 regular
expressions; jsonschema evaluates them with Python's ``re``, whose ``$`` also
matches before a final newline (``^[a-z]+$`` accepts ``"abc\\n"``) and whose
``\\d`` and ``\\w`` accept any script's digits and letters. :func:`ecma` gives a
validator class whose ``pattern``, ``patternProperties``,
``additionalProperties`` and ``unevaluatedProperties`` (the keywords that
match property names against patterns) and ``regex`` format use ``regress``,
an ECMA-262 engine, with the ``u`` flag the specification recommends. Every
schema of this project is checked (:func:`check_schema`) and applied
(:func:`validator`) through it.

:func:`check_schema` checks a schema against its meta-schema once per
distinct schema: that check costs about a millisecond, and a folder of tools,
a reload or a dict handle passed to every call repeats the same schemas.
A quick predicate (:func:`quick_check`) stands in front of argument
validation for plain schemas (:class:`ArgumentsValidator`).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from ._json import cache_key

__all__ = [
    "ArgumentsValidator",
    "check_schema",
    "ecma",
    "load",
    "quick_check",
    "search",
    "validator",
]

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
    from ._deferred_formats import import_jsonschema  # the other format libraries: on use

    if _GRAMMAR in sys.modules:
        jsonschema = import_jsonschema()
    else:
        sys.modules[_GRAMMAR] = None  # type: ignore[assignment]  # its import fails: skipped
        try:
            jsonschema = import_jsonschema()
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


# -- ECMA-262 regular expressions ---------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> Any:
    """``pattern`` compiled by regress (Unicode mode); None when it is no ECMA-262
    regular expression. Compiling costs about 2 µs, so compiled ones are kept."""
    import regress

    try:
        return regress.Regex(pattern, "u")
    except regress.RegressError:
        return None


def search(pattern: str, text: str) -> bool:
    """Whether the ECMA-262 regular expression ``pattern`` matches somewhere in
    ``text`` (patterns are not anchored, as in JSON Schema). A pattern that is
    no ECMA-262 regular expression, and a text holding a lone surrogate (which
    JSON's ``\\ud800`` escape can carry), match nothing: the check fails closed."""
    regex = _regex(pattern)
    if regex is None:
        return False
    try:
        return regex.find(text) is not None
    except UnicodeEncodeError:  # a lone surrogate: not text regress can take
        return False


def _is_regex(instance: object) -> bool:
    """The ``regex`` format: an ECMA-262 regular expression."""
    if not isinstance(instance, str):
        return True
    import regress

    regress.Regex(instance, "u")  # raises RegressError: a FormatError's cause
    return True


def _pattern(validator: Any, pattern: str, instance: object, schema: Any) -> Iterator[Any]:
    if isinstance(instance, str) and not search(pattern, instance):
        yield load().ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def additional_properties(instance: dict[str, Any], schema: Any) -> list[str]:
    """The property names of ``instance`` that neither ``properties`` nor a
    ``patternProperties`` pattern of ``schema`` covers."""
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    return [
        key
        for key in instance
        if key not in properties and not any(search(pattern, key) for pattern in patterns)
    ]


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    extras = additional_properties(instance, schema)
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        names = ", ".join(repr(key) for key in sorted(extras))
        if "patternProperties" in schema:
            patterns = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
            verb = "does" if len(extras) == 1 else "do"
            yield load().ValidationError(f"{names} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield load().ValidationError(
                f"Additional properties are not allowed ({names} {verb} unexpected)"
            )


def _valid(errors: Iterator[Any]) -> bool:
    return next(errors, None) is None


def _evaluated_keys(
    validator: Any, instance: dict[str, Any], schema: Any, legacy: bool
) -> set[str]:
    """The property names of ``instance`` that ``schema`` evaluates, for
    ``unevaluatedProperties``: jsonschema's own walk (2020-12, or 2019-09 when
    ``legacy``), with property names matched as ECMA-262."""
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()

    def follow(resolved: Any) -> None:
        evolved = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
        keys.update(_evaluated_keys(evolved, instance, resolved.contents, legacy))

    if "$ref" in schema:
        follow(validator._resolver.lookup(schema["$ref"]))
    if not legacy and "$dynamicRef" in schema:
        follow(validator._resolver.lookup(schema["$dynamicRef"]))
    if legacy and "$recursiveRef" in schema:
        from referencing.jsonschema import lookup_recursive_ref

        follow(lookup_recursive_ref(validator._resolver))
    if legacy:
        for keyword in ("properties", "additionalProperties", "unevaluatedProperties"):
            value = schema.get(keyword)
            if value is True:
                keys.update(instance)
            elif validator.is_type(value, "object"):
                keys.update(key for key in value if key in instance)
    else:
        properties = schema.get("properties")
        if validator.is_type(properties, "object"):
            keys.update(key for key in properties if key in instance)
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            subschema = schema.get(keyword)
            if subschema is not None:
                keys.update(
                    key
                    for key, value in instance.items()
                    if _valid(validator.descend(value, subschema))
                )
    for pattern in schema.get("patternProperties", {}):
        keys.update(key for key in instance if search(pattern, key))
    for key, subschema in schema.get("dependentSchemas", {}).items():
        if key in instance:
            keys.update(_evaluated_keys(validator, instance, subschema, legacy))
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, ()):
            if _valid(validator.descend(instance, subschema)):
                keys.update(_evaluated_keys(validator, instance, subschema, legacy))
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys.update(_evaluated_keys(validator, instance, schema["if"], legacy))
            if "then" in schema:
                keys.update(_evaluated_keys(validator, instance, schema["then"], legacy))
        elif "else" in schema:
            keys.update(_evaluated_keys(validator, instance, schema["else"], legacy))
    return keys


def _unevaluated_properties(legacy: bool) -> Callable[..., Iterator[Any]]:
    def unevaluated_properties(
        validator: Any, unevaluated: Any, instance: Any, schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        evaluated = _evaluated_keys(validator, instance, schema, legacy)
        failed = [
            key
            for key in instance
            if key not in evaluated
            and not _valid(validator.descend(instance[key], unevaluated, path=key, schema_path=key))
        ]
        if not failed:
            return
        names = ", ".join(repr(key) for key in sorted(failed))
        verb = "was" if len(failed) == 1 else "were"
        if unevaluated is False:
            yield load().ValidationError(
                f"Unevaluated properties are not allowed ({names} {verb} unexpected)"
            )
        else:
            yield load().ValidationError(
                "Unevaluated properties are not valid under the given schema "
                f"({names} {verb} unevaluated and invalid)"
            )

    return unevaluated_properties


_ECMA: dict[type, Any] = {}


def ecma(base: Any = None) -> Any:
    """The ECMA-262 variant of the jsonschema validator class ``base`` (Draft
    2020-12 by default): its pattern keywords and ``regex`` format use regress.
    The class is not registered with jsonschema, so the application's own
    jsonschema use is untouched."""
    jsonschema = load()
    base = base or jsonschema.Draft202012Validator
    found = _ECMA.get(base)
    if found is not None:
        return found
    import regress

    stock = base.VALIDATORS
    keywords: dict[str, Callable[..., Iterator[Any]]] = {}
    if "pattern" in stock:
        keywords["pattern"] = _pattern
    if "patternProperties" in stock:
        keywords["patternProperties"] = _pattern_properties
    if "additionalProperties" in stock:
        keywords["additionalProperties"] = _additional_properties
    if "unevaluatedProperties" in stock:
        legacy = base is jsonschema.Draft201909Validator
        keywords["unevaluatedProperties"] = _unevaluated_properties(legacy)
    formats = jsonschema.FormatChecker(formats=())
    formats.checkers = dict(base.FORMAT_CHECKER.checkers)
    formats.checks("regex", raises=regress.RegressError)(_is_regex)
    found = jsonschema.validators.extend(base, keywords, format_checker=formats)
    _ECMA[base] = found
    return found


_checked: OrderedDict[str, None] = OrderedDict()
_checked_lock = threading.Lock()


def check_schema(schema: object, base: Any = None) -> None:
    """Raise jsonschema's ``SchemaError`` unless ``schema`` is valid under its
    metaschema, with ``pattern`` and the ``regex`` format read as ECMA-262, and
    every ``$ref`` in it resolves within it (or to a draft's metaschema).

    Run once per distinct schema: a schema in the plain subset whose keywords
    hold what the 2020-12 meta-schema asks is accepted at once; otherwise only
    schemas that passed are remembered, keyed by their JSON text and the
    draft, so a refusal is always the check's own, with its path.
    """
    if base is None and _plainly_valid_schema(schema, 0):
        return
    text = cache_key(schema)
    key = None if text is None else f"{getattr(base, '__name__', '')}:{text}"
    if key is not None:
        with _checked_lock:
            if key in _checked:
                _checked.move_to_end(key)
                return
    _check_fully(schema, base)
    if key is not None:
        with _checked_lock:
            _checked[key] = None
            while len(_checked) > CHECKED_SCHEMAS:
                _checked.popitem(last=False)


def _check_fully(schema: object, base: Any) -> None:
    """The meta-schema's walk (about a millisecond) and the references' check."""
    cls = ecma(base)
    jsonschema = load()
    meta = ecma(jsonschema.validators.validator_for(cls.META_SCHEMA, default=cls))
    for error in meta(cls.META_SCHEMA, format_checker=meta.FORMAT_CHECKER).iter_errors(schema):
        raise jsonschema.SchemaError.create_from(error)
    _check_references(schema, cls)


def _local_registry() -> Any:
    """A registry that holds nothing and fetches nothing: jsonschema would
    otherwise GET a ``$ref``'s remote URL on every validation, from the
    application's own process and thread, and let that document decide."""
    import referencing

    return referencing.Registry()


def _check_references(schema: object, cls: Any) -> None:
    """A ``$ref`` that does not resolve would raise at every call: refused here,
    naming where it stands."""
    import referencing.exceptions

    jsonschema = load()
    resolver = cls(schema, registry=_local_registry())._resolver
    for path, ref in _references(schema, ()):
        try:
            resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            raise jsonschema.SchemaError(
                f"$ref {ref!r} does not resolve within the schema (remote references "
                "are not fetched)",
                path=[*path, "$ref"],
            ) from None


def _references(
    value: object, path: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and "$id" not in value:  # an $id moves the base: not followed
            yield path, ref
        for key, inner in value.items():
            if key not in ("const", "enum", "examples", "default"):
                yield from _references(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _references(inner, (*path, index))


def validator(schema: object, *, formats: bool = False, base: Any = None) -> Any:
    """A validator of ``schema`` (already checked) with ECMA-262 patterns; with
    ``formats``, ``format`` is asserted too. It never fetches a remote ``$ref``."""
    cls = ecma(base)
    return cls(
        schema,
        format_checker=cls.FORMAT_CHECKER if formats else None,
        registry=_local_registry(),
    )


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


def _string_type(value: object) -> bool:
    return isinstance(value, str)


_TYPES: dict[str, Check] = {
    "string": _string_type,
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
    if kind == "object" and schema.keys() <= _OBJECT_KEYWORDS:  # the usual parameters
        # One predicate: the type test (a dict subclass fails it, as members
        # would defer it) and the members.
        members = _object_checks(schema, formats, depth, exact=True)
        return members[0] if members else _TYPES["object"]
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
    if len(checks) == 2:  # the usual object: its type, then its members
        first, second = checks
        return lambda value: bool(first(value)) and bool(second(value))
    return lambda value: all(check(value) for check in checks)


_IS_STRING = _TYPES["string"]


# An object schema the merged check above decides whole.
_OBJECT_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}


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
        # ECMA-262, as the validator reads it: Python's re would accept "abc\n"
        # for ^[a-z]+$, and this predicate may only say yes where it does.
        checks.append(lambda value: not isinstance(value, str) or search(pattern, value))
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


def _object_checks(
    schema: dict[str, object], formats: Any, depth: int, exact: bool = False
) -> list[Check]:
    """The members' check; with ``exact``, it is also the type test (False for
    anything but a dict)."""
    checks: list[Check] = []
    properties = schema.get("properties", {})
    if not isinstance(properties, dict) or not all(isinstance(k, str) for k in properties):
        raise _not_plain()
    compiled = {name: _compile(sub, formats, depth + 1) for name, sub in properties.items()}
    # Properties that only need to be strings, the commonest, are tested inline.
    strings = frozenset(name for name, check in compiled.items() if check is _IS_STRING)
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
            return not exact and not isinstance(value, dict)  # a dict subclass: defer
        for name in required:
            if name not in value:
                return False
        for name, item in value.items():
            if name in strings:
                if not isinstance(item, str):
                    return False
                continue
            check = compiled.get(name)
            if check is None:
                if closed is False:
                    return False
            elif not check(item):
                return False
        return True

    checks.append(members)
    return checks


class _Formats:
    """Draft 2020-12's format checker (ECMA-262 ``regex``), looked up on the
    first ``format`` checked: a schema without ``format`` never imports jsonschema."""

    __slots__ = ()

    def conforms(self, instance: object, name: str) -> bool:
        return bool(ecma().FORMAT_CHECKER.conforms(instance, name))


def quick_check(schema: object, format_assertion: bool = True) -> Check | None:
    """A predicate true only for instances that ``schema`` certainly accepts
    (False: ask jsonschema), or None when the schema is not in the plain subset.
    ``format_assertion``: whether the validator it stands in front of asserts
    ``format`` (with Draft 2020-12's format checker)."""
    formats = _Formats() if format_assertion else None
    try:
        return _compile(schema, formats, 0)
    except ValueError:
        return None


class ArgumentsValidator:
    """jsonschema's validator for ``schema``, with :func:`quick_check` in front:
    arguments the quick check accepts yield no errors at once; any others are
    validated by jsonschema, whose errors are the refusal. jsonschema's
    validator is built on the first arguments the quick check does not accept,
    so loading a folder of plain tools imports no jsonschema (about 35 ms)."""

    __slots__ = ("_format_assertion", "_schema", "_validator", "quick")

    def __init__(self, schema: dict[str, Any], format_assertion: bool = True) -> None:
        self._schema = schema
        self._format_assertion = format_assertion
        self._validator: Any = None
        self.quick = quick_check(schema, format_assertion)

    @property
    def validator(self) -> Any:
        """jsonschema's validator of the schema (built once; a race builds an equal one)."""
        built = self._validator
        if built is None:
            built = validator(self._schema, formats=self._format_assertion)
            self._validator = built
        return built

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


def _is_ecma_regex(value: object) -> bool:
    """The meta-schema's format "regex", read as ECMA-262 (as :func:`check_schema`)."""
    return type(value) is str and _regex(value) is not None


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
    "pattern": _is_ecma_regex,
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
