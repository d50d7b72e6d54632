"""jsonschema, imported when first needed, without its IRI grammar, and with
JSON Schema's own regular expressions (ECMA-262).

Importing jsonschema with the ``format-nongpl`` extra costs about 0.1 s of
format-checker imports, plus about a second more for ``rfc3987_syntax``,
which builds a grammar at import time. ``import command_handle`` and the CLI
pay neither: :func:`load` imports jsonschema on the first schema compiled,
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
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

__all__ = ["check_schema", "ecma", "load", "search", "validator"]

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


def check_schema(schema: object, base: Any = None) -> None:
    """Raise jsonschema's ``SchemaError`` unless ``schema`` is valid under its
    metaschema, with ``pattern`` and the ``regex`` format read as ECMA-262."""
    cls = ecma(base)
    jsonschema = load()
    meta = ecma(jsonschema.validators.validator_for(cls.META_SCHEMA, default=cls))
    for error in meta(cls.META_SCHEMA, format_checker=meta.FORMAT_CHECKER).iter_errors(schema):
        raise jsonschema.SchemaError.create_from(error)


def validator(schema: object, *, formats: bool = False, base: Any = None) -> Any:
    """A validator of ``schema`` (already checked) with ECMA-262 patterns; with
    ``formats``, ``format`` is asserted too."""
    cls = ecma(base)
    return cls(schema, format_checker=cls.FORMAT_CHECKER if formats else None)
