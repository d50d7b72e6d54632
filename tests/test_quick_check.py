"""The quick argument check may only say "valid" where jsonschema says valid.

``_jsonschema.quick_check`` stands in front of jsonschema for plain parameter
schemas, so that a call does not pay jsonschema's cost for arguments that are
plainly valid; anything it does not accept goes to jsonschema, which decides
and words the refusal. These compare the two on generated schemas and
arguments, odd values included (bools for numbers, integral floats, NaN,
subclasses, tuples).
"""

from __future__ import annotations

import enum
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from command_handle import ArgumentsError, CommandHandle
from command_handle._jsonschema import ArgumentsValidator, load, quick_check

NAMES = ["a", "b", "c"]
TYPES = ["string", "integer", "number", "boolean", "null", "array", "object"]


class Flag(enum.IntEnum):
    ONE = 1


class Text(str):
    pass


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from([0.0, 1.0, -1.0, 2.5, 1e308, math.inf, -math.inf, math.nan]),
    st.text(max_size=4),
    st.sampled_from([Flag.ONE, Text("a")]),
)


def instances() -> st.SearchStrategy[object]:
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=2).map(tuple),
            st.dictionaries(st.sampled_from([*NAMES, "x"]), inner, max_size=4),
        ),
        max_leaves=8,
    )


def _bounds(draw: st.DrawFn, schema: dict[str, Any]) -> None:
    numbers = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, 1.0, -2.5]))
    for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if draw(st.booleans()):
            schema[keyword] = draw(numbers)
    for keyword in ("minLength", "maxLength", "minItems", "maxItems"):
        if draw(st.booleans()):
            schema[keyword] = draw(st.integers(0, 3))


@st.composite
def schemas(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    if draw(st.booleans()):
        kinds = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=2, unique=True))
        schema["type"] = kinds[0] if len(kinds) == 1 and draw(st.booleans()) else kinds
    if draw(st.integers(0, 4)) == 0:
        schema["enum"] = draw(st.lists(scalars, min_size=1, max_size=3))
    if draw(st.integers(0, 6)) == 0:
        schema["const"] = draw(scalars)
    if draw(st.integers(0, 3)) == 0:
        schema["pattern"] = draw(st.sampled_from(["^a", "b$", "[0-9]", ""]))
    if draw(st.integers(0, 3)) == 0:
        schema["format"] = draw(st.sampled_from(["email", "date", "ipv4", "uuid"]))
    _bounds(draw, schema)
    if depth < 2:
        if draw(st.booleans()):
            schema["properties"] = {
                name: draw(schemas(depth + 1))
                for name in draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True))
            }
        if draw(st.booleans()):
            schema["required"] = draw(st.lists(st.sampled_from(NAMES), max_size=2, unique=True))
        if draw(st.booleans()):
            schema["additionalProperties"] = draw(st.booleans())
        if draw(st.integers(0, 2)) == 0:
            schema["items"] = draw(st.one_of(st.just(True), schemas(depth + 1)))
    if draw(st.integers(0, 3)) == 0:
        schema["description"] = "annotations change nothing"
    return schema


@settings(max_examples=3000, deadline=None)
@given(schemas(), instances(), st.booleans())
def test_the_quick_check_accepts_only_what_jsonschema_accepts(
    schema: dict[str, Any], instance: object, formats: bool
) -> None:
    quick = quick_check(schema, format_assertion=formats)
    assert quick is not None  # every generated schema is in the plain subset
    validator_class = load().Draft202012Validator
    checker = validator_class.FORMAT_CHECKER if formats else None
    if quick(instance):
        assert validator_class(schema, format_checker=checker).is_valid(instance)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {}}},
        {"anyOf": [{"type": "string"}]},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "array", "uniqueItems": True},
        {"type": "number", "multipleOf": 2},
        {"type": "widget"},
        {"minLength": 1.5},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
    ],
)
def test_a_schema_beyond_the_plain_subset_gets_no_quick_check(schema: dict[str, Any]) -> None:
    assert quick_check(schema) is None


def test_the_common_arguments_pass_the_quick_check() -> None:
    schema = {
        "type": "object",
        "properties": {
            "word": {"type": "string", "minLength": 1, "description": "a word"},
            "count": {"type": "integer", "minimum": 0},
            "mode": {"enum": ["fast", "slow"]},
            "files": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["word"],
        "additionalProperties": False,
    }
    quick = quick_check(schema)
    assert quick is not None
    assert quick({"word": "hi", "count": 3, "mode": "fast", "files": ["a", "b"]})
    assert not quick({"word": "hi", "extra": 1})
    assert not quick({"count": 3})


def test_arguments_the_quick_check_defers_are_refused_by_jsonschema() -> None:
    """The refusal is jsonschema's, with every violation, as before."""
    handle = CommandHandle.load(
        {
            "name": "t",
            "handler": "command",
            "command": "/bin/echo",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": "integer", "maximum": 3}, "s": {"type": "string"}},
                "required": ["s"],
                "additionalProperties": False,
            },
            "arguments": [{"$": "s"}],
        }
    )
    with pytest.raises(ArgumentsError) as refused:
        handle.render({"n": 9, "x": 1})
    found = {(v.pointer, v.keyword) for v in refused.value.violations}
    assert found == {("/n", "maximum"), ("", "required"), ("", "additionalProperties")}
    validator = ArgumentsValidator({"type": "object"})
    assert validator.is_valid({}) and not validator.is_valid([])


# -- the meta-schema check of a plain schema -----------------------------------------

odd_values = st.one_of(
    scalars,
    st.sampled_from([-1, 2, 1.5, "(", "[a-", "^ok$", ["string"], ["string", "string"], []]),
    st.lists(st.sampled_from([*TYPES, "widget", 1]), max_size=3),
)
KEYWORDS = [
    "type",
    "enum",
    "const",
    "pattern",
    "format",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "required",
    "title",
    "description",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    "default",
]


GOOD: dict[str, st.SearchStrategy[object]] = {
    "type": st.one_of(
        st.sampled_from(TYPES),
        st.lists(st.sampled_from(TYPES), min_size=1, max_size=2, unique=True),
    ),
    "pattern": st.sampled_from(["^a", "[0-9]+", ""]),
    "required": st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
    **{k: st.integers(0, 3) for k in ("minLength", "maxLength", "minItems", "maxItems")},
    **{k: st.text(max_size=3) for k in ("title", "description", "$comment", "format")},
    **{k: st.booleans() for k in ("deprecated", "readOnly", "writeOnly")},
}


@st.composite
def doubtful_schemas(draw: st.DrawFn, depth: int = 0) -> object:
    """Schemas of the plain subset's keywords, holding any value, valid or not."""
    if draw(st.integers(0, 8)) == 0:
        return draw(st.one_of(st.booleans(), odd_values))
    schema: dict[str, object] = {}
    for keyword in draw(st.lists(st.sampled_from(KEYWORDS), max_size=4, unique=True)):
        fitting = GOOD.get(keyword, odd_values)
        schema[keyword] = draw(fitting if draw(st.booleans()) else odd_values)
    if depth < 2:
        if draw(st.booleans()):
            members = st.dictionaries(
                st.sampled_from(NAMES), doubtful_schemas(depth + 1), max_size=2
            )
            schema["properties"] = draw(st.one_of(members, odd_values))
        for keyword in ("items", "additionalProperties"):
            if draw(st.integers(0, 3)) == 0:
                schema[keyword] = draw(doubtful_schemas(depth + 1))
    return schema


@settings(max_examples=3000, deadline=None)
@given(doubtful_schemas())
def test_a_plain_schema_is_accepted_at_once_only_when_the_meta_schema_accepts_it(
    schema: object,
) -> None:
    from command_handle._jsonschema import _plainly_valid_schema

    validator_class = load().Draft202012Validator
    if _plainly_valid_schema(schema, 0):
        validator_class.check_schema(schema)  # raises if the quick answer was wrong


def test_a_bad_plain_schema_is_refused_with_jsonschema_s_words() -> None:
    from command_handle._jsonschema import check_schema

    jsonschema = load()
    for bad, where in (
        ({"type": "object", "properties": {"a": {"minLength": -1}}}, ["properties", "a"]),
        ({"type": "object", "required": ["a", "a"]}, ["required"]),
        ({"type": "object", "properties": {"a": {"pattern": "("}}}, ["properties", "a"]),
    ):
        with pytest.raises(jsonschema.SchemaError) as refused:
            check_schema(bad)
        assert list(refused.value.path)[: len(where)] == where
