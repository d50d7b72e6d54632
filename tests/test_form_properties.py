"""Properties of the evaluator that must hold for every input."""

from __future__ import annotations

import itertools
import json
import math
from urllib.parse import parse_qsl

from hypothesis import given, settings
from hypothesis import strategies as st

from command_handle._json import format_number, stringify
from command_handle.conformance import same_json
from command_handle.form import UNDEFINED, FormError, compile_template, escape, evaluate
from command_handle.form._order import compare

from .strategies import finite_floats, json_values, plain_templates

settings.register_profile("ci", deadline=None, max_examples=150)
settings.load_profile("ci")


@given(plain_templates)
def test_template_without_directives_evaluates_to_itself(template: object) -> None:
    assert same_json(evaluate(template, {}), template)


@given(json_values(), json_values())
def test_escaped_value_round_trips(value: object, args: object) -> None:
    assert same_json(evaluate(escape(value), args), value)


@given(st.lists(json_values(), max_size=8))
def test_sort_agrees_with_total_order_and_is_idempotent(items: list[object]) -> None:
    once = evaluate({"$": "v | sort"}, {"v": items})
    assert isinstance(once, list)
    assert all(compare(a, b) <= 0 for a, b in itertools.pairwise(once))
    assert same_json(evaluate({"$": "v | sort"}, {"v": once}), once)
    assert len(once) == len(items)


@given(json_values(), json_values())
def test_total_order_is_antisymmetric(a: object, b: object) -> None:
    assert compare(a, b) == -compare(b, a)
    assert compare(a, a) == 0


@given(json_values())
def test_json_encoding_round_trips(value: object) -> None:
    text = evaluate({"$": "v", "$encode": "json"}, {"v": value})
    assert isinstance(text, str)
    assert same_json(json.loads(text), value)
    pretty = evaluate({"$": "v", "$encode": "json", "$indent": 3}, {"v": value})
    assert isinstance(pretty, str)
    assert same_json(json.loads(pretty), value)


@given(finite_floats)
def test_number_text_round_trips_and_follows_ecmascript_shape(number: float) -> None:
    text = format_number(number)
    assert float(text) == number or (number == 0 and float(text) == 0)
    assert not text.endswith(".0")
    assert "e" not in text or text[text.index("e") + 1] in "+-"
    if number != 0 and 1e-6 <= abs(number) < 1e21:
        assert "e" not in text


@given(st.integers())
def test_integers_keep_their_digits(number: int) -> None:
    assert format_number(number) == str(number)


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=5), st.text(max_size=8) | st.integers(), max_size=5
    )
)
def test_urlencoded_parses_back(flat: dict[str, object]) -> None:
    text = evaluate({"$": "v", "$encode": "urlencoded"}, {"v": flat})
    assert isinstance(text, str)
    decoded = dict(parse_qsl(text, keep_blank_values=True))
    assert decoded == {k: v if isinstance(v, str) else str(v) for k, v in flat.items()}


@given(json_values())
def test_string_interpolation_never_reevaluates_data(value: object) -> None:
    result = evaluate("<{{v}}>", {"v": value})
    assert isinstance(result, str)
    expected = value if isinstance(value, str) else stringify(value)
    assert result == f"<{expected}>"


@given(st.text(max_size=30))
def test_string_templates_either_compile_or_raise_form_errors(text: str) -> None:
    try:
        compiled = compile_template(text)
    except FormError:
        return
    result = compiled.evaluate({"a": 1})
    assert result is UNDEFINED or isinstance(result, str)


@given(finite_floats.filter(lambda f: not math.isnan(f)))
def test_numbers_in_templates_use_the_shared_formatter(number: float) -> None:
    assert evaluate("{{n}}", {"n": number}) == format_number(number)


_ASCII_NAME = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,8}\Z")


@given(st.lists(_ASCII_NAME, max_size=5))
def test_names_only_queries_read_without_the_library_match_it(names: list[str]) -> None:
    """``user.name`` is read without jsonpath_rfc9535 (start-up); its steps are
    the ones the library's parse gives."""
    from command_handle.form import _expressions

    source = ".".join(["$", *names])
    query, steps = _expressions._compile_singular(source, "", 4096)
    assert query is None and steps == tuple(names)
    parsed = _expressions.compile_query(source, "", 4096)
    assert _expressions._singular_steps(parsed) == steps
