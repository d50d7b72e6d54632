"""The args encoding: properties over random values, and its direct API."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from command_handle.args import ArgsError, CharsetError, data, encode_args, written
from command_handle.args._charset import first_forbidden
from command_handle.form import TemplateSyntaxError, compile_template

from .strategies import json_values

NAMES = st.sampled_from(["-a", "-b", "+x", "--long", "--opt=", "sub", "pos", "--", "$args"])
arg_objects = st.recursive(
    json_values(),
    lambda children: st.dictionaries(NAMES, children, max_size=4) | st.lists(children, max_size=3),
    max_leaves=15,
)


def split_joined(text: str) -> list[str]:
    """Invert the Argument Joining Algorithm: split on unescaped commas, unescape."""
    values: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            values.append("".join(current))
            current = []
        else:
            current.append(char)
    values.append("".join(current))
    return values


@given(arg_objects, st.sampled_from(["spec", "argv"]))
def test_tokens_pass_the_policy_or_the_value_is_refused(value: object, charset: str) -> None:
    try:
        tokens = encode_args(written(value), charset=charset)
    except ArgsError:
        return
    for token in tokens:
        assert "\x00" not in token
        if "=" in token and token.startswith("-"):
            continue  # a joined flag: its parts were checked before escaping
        assert first_forbidden(token, charset) == -1, token
    assert encode_args(written(value), charset=charset) == tokens  # deterministic


@given(
    st.lists(st.text(st.characters(exclude_characters="\x00"), max_size=8), min_size=1, max_size=5)
)
def test_joined_values_split_back_exactly(values: list[str]) -> None:
    (token,) = encode_args(written({"--v=": data(values)}), charset="argv")
    assert split_joined(token.removeprefix("--v=")) == values


@given(json_values(), st.sampled_from(["spec", "argv"]))
def test_data_never_yields_a_leading_dash_positional_before_end_of_options(
    value: object, charset: str
) -> None:
    template = compile_template(
        {"$encode": "args", "$charset": charset, "cmd": {"$args": [{"$": "v"}]}}
    )
    try:
        tokens = template.evaluate({"v": value})
    except ArgsError:
        return
    assert isinstance(tokens, list)
    for token in tokens[1:]:
        assert token == "-" or not token.startswith("-"), tokens


@given(json_values())
def test_template_data_and_marked_data_encode_alike(value: object) -> None:
    template = compile_template({"$encode": "args", "$charset": "argv", "cmd": {"--": {"$": "v"}}})
    try:
        expected = encode_args(written({"cmd": {"--": data(value)}}), charset="argv")
    except ArgsError:
        with pytest.raises(ArgsError):
            template.evaluate({"v": value})
        return
    assert template.evaluate({"v": value}) == expected
    assert expected[:2] == ["cmd", "--"]


def test_error_names_token_index_character_and_code_point() -> None:
    with pytest.raises(ArgsError) as info:
        encode_args(written({"echo": ["ok", "it's"]}))
    error = info.value
    assert (error.token, error.index, error.character, error.code_point) == ("it's", 2, "'", 0x27)
    assert error.path == "/echo/1"
    assert "U+0027" in str(error) and "token 2" in str(error)


def test_error_carries_the_template_location() -> None:
    template = compile_template({"run": {"$encode": "args", "cmd": {"$args": [{"$": "p"}]}}})
    with pytest.raises(ArgsError) as info:
        template.evaluate({"p": "-x"})
    assert info.value.pointer == "/run"
    assert info.value.path == "/cmd/$args/0"
    assert info.value.index == 1


def test_values_are_data_unless_written_by_the_application() -> None:
    # Safe by default: nothing passed to encode_args can become an option ...
    with pytest.raises(ArgsError, match="begins with '-'"):
        encode_args({"rm": ["-rf", "dir"]})
    with pytest.raises(ArgsError, match="cannot be a flag or a directive"):
        encode_args({"rm": {"$args": ["dir"]}})
    with pytest.raises(ArgsError, match="cannot be a flag"):
        encode_args({"git": {"--upload-pack=": "x"}})
    with pytest.raises(ArgsError, match="cannot be a flag"):
        encode_args({"rm": {"--": ["-rf"]}})  # a '--' from the data ends nothing
    assert encode_args({"echo": ["a", "b"]}) == ["echo", "a", "b"]
    # ... unless the application marks what it wrote itself.
    assert encode_args(written({"rm": {"$args": ["-rf", "dir"]}})) == ["rm", "-rf", "dir"]
    assert encode_args({"ls": [written("-la"), "src"]}) == ["ls", "-la", "src"]
    with pytest.raises(ArgsError, match="begins with '-'"):
        encode_args(written({"rm": {"$args": [data("-rf")]}}))
    with pytest.raises(ArgsError, match="cannot be a flag"):
        encode_args(written({"git": data({"--upload-pack=": "x"})}))
    assert encode_args(written({"rm": {"--": [data("-rf")]}})) == ["rm", "--", "-rf"]


def test_invalid_inputs() -> None:
    with pytest.raises(ValueError) as caught:
        encode_args([], charset="latin1")
    assert isinstance(caught.value, CharsetError)
    with pytest.raises(ArgsError, match="non-finite"):
        encode_args(written({"-n": math.inf}))
    with pytest.raises(ArgsError, match="binary value cannot be an argument"):
        encode_args({"x": b"bytes"})
    deep: object = "x"
    for _ in range(400):
        deep = [deep]
    with pytest.raises(ArgsError, match="nested too deeply"):
        encode_args(deep)


def test_args_inside_json_is_json_again() -> None:
    # The nearest $encode decides: inside a JSON payload, $flags is not an args name.
    template = {
        "$encode": "args",
        "$charset": "argv",
        "curl": {"--data": {"$use": {"$$flags": 1, "n": {"$": "n"}}, "$encode": "json"}},
    }
    assert compile_template(template).evaluate({"n": 2}) == ["curl", "--data", '{"$flags":1,"n":2}']
    template["curl"]["--data"]["$use"] = {"$flags": 1}  # type: ignore[index]
    with pytest.raises(TemplateSyntaxError, match="unknown directive"):
        compile_template(template)
