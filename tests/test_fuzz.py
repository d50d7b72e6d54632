"""Property tests over hostile input, across the layers.

- Random nested templates built from every directive raise only FormError
  subclasses and stay within the configured limits.
- Random model arguments through the args encoding reach the probe exactly as
  encoded, or are refused before anything runs.
- Random UTCP placeholder values never change what runs: each placeholder stays
  one argument (or the stdin text) exactly, and the plan is the same plan.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import trio
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from command_handle import (
    ArgumentsError,
    CommandHandle,
    Executor,
    HandleError,
    TemplateEvaluationError,
    utcp,
)
from command_handle.form import EncodedBytes, EncodedStr, FormError, Limits, compile_template
from command_handle.plan import Plan

from .processes import PROBE, PY

# Text a model might write: any code point, lone surrogates and NUL included.
hostile_text = st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=24
) | st.sampled_from(
    ["-rf", "--", "--output=/etc/passwd", "$(id)", "`id`", "a;b", "a|b", "*", "~", "\ud800", ""]
)
argument_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | hostile_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(hostile_text, children, max_size=4)
    ),
    max_leaves=12,
)

# -- random templates -------------------------------------------------------------

NAMES = ["a", "b", "items", "missing"]
QUERIES = st.sampled_from(
    ["a", "b", "$.items[*]", "$.a.b", "$..*", "items[0]", "$[?@ > 1]", "missing", "$[", "a |"]
)
SCHEMAS = st.sampled_from(
    [{"type": "string"}, {"type": "array", "minItems": 1}, True, {"pattern": "^a"}, 5]
)


def _template_from(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    obj = st.dictionaries(st.sampled_from(["x", "y", "$$z"]), children, max_size=3)
    return st.one_of(
        st.lists(children, max_size=3),
        obj,
        st.builds(lambda q: {"$": q}, QUERIES),
        st.builds(lambda v: {"$use": v}, children),
        st.builds(lambda u: {"$uri": u}, st.sampled_from(["/x/{a}", "{?a,b}", "/{+items*}", "{"])),
        st.builds(lambda c, t, e: {"$if": c, "$then": t, "$else": e}, QUERIES, children, children),
        st.builds(lambda c, v: {"$when": c, "x": v}, QUERIES, children),
        st.builds(lambda q, v: {"$each": q, "$as": "i", "$value": v}, QUERIES, children),
        st.builds(
            lambda q, v: {"$each": q, "$as": "i", "$key": "{{i}}", "$value": v}, QUERIES, children
        ),
        st.builds(lambda v: [{"$spread": v}], children),
        st.builds(lambda v: {"$spread": v}, children),
        st.builds(lambda v, s: {"$use": v, "$join": s}, children, st.sampled_from([",", " ", 1])),
        st.builds(
            lambda q, s, v: {"$": q, "$match": [{"$case": s, "$value": v}]},
            QUERIES,
            SCHEMAS,
            children,
        ),
        st.builds(lambda q, s: {"$": q, "$matches": s}, QUERIES, SCHEMAS),
        st.builds(
            lambda v, t: {"$use": v, "$transform": t},
            children,
            st.sampled_from(["sort", "first", "last", "length", ["sort", "first"], "nope"]),
        ),
        st.builds(
            lambda v, e: {"$use": v, "$encode": e},
            children,
            st.sampled_from(["json", "base64", "urlencoded", ["json", "base64"], "args"]),
        ),
        st.builds(lambda q: {"$encode": "args", "cmd": {"$args": [{"$": q}]}}, QUERIES),
        st.builds(lambda v: {"$comment": "c", "$meta": {"m": 1}, "x": v}, children),
        st.just({"$include": "other.json"}),
        st.builds(lambda q: f"pre {{{{{q}}}}} post", QUERIES),
    )


templates = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    _template_from,
    max_leaves=12,
)
LIMITS = Limits(max_evaluations=2_000, max_expansion=2_000, max_output=20_000, max_data_depth=32)


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


def _text_size(value: object) -> int:
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, list):
        return sum(_text_size(v) for v in value)
    if isinstance(value, dict):
        return sum(len(k) + _text_size(v) for k, v in value.items())
    return 0


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(templates, argument_values)
def test_random_templates_raise_only_form_errors_and_respect_limits(
    template: object, args: object
) -> None:
    arguments = {"a": args, "b": "text", "items": [1, "x", None, [2]]}
    try:
        compiled = compile_template(template, limits=LIMITS)
        result = compiled.evaluate(arguments)
    except FormError:
        return
    # What came out is bounded by what went in and the limits.
    assert _depth(result) <= _depth(template) + _depth(arguments) + LIMITS.max_data_depth
    produced = _text_size(result) - _text_size(template)
    assert produced <= LIMITS.max_output + LIMITS.max_expansion * (_text_size(arguments) + 16)
    if isinstance(result, (EncodedStr, EncodedBytes)):
        assert result.headers


# -- the args encoding, through a real process ------------------------------------

ARGS_HANDLE = {
    "name": "fuzz-args",
    "handle": "command",
    "command": PY,
    "arguments": {
        "$encode": "args",
        "$charset": "argv",
        "$args": [PROBE],
        "run": {
            "--flag": {"$": "flag"},
            "--joined=": {"$": "joined"},
            "$args": [{"$": "positional"}],
            "--": {"$": "rest"},
        },
    },
    "parameters": {"type": "object"},
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(argument_values, argument_values, argument_values, argument_values)
def test_model_arguments_reach_the_probe_exactly_as_encoded_or_are_refused(
    flag: object, joined: object, positional: object, rest: object
) -> None:
    handle = CommandHandle.load(ARGS_HANDLE)
    executor = Executor()
    args = {"flag": flag, "joined": joined, "positional": positional, "rest": rest}
    try:
        invocation = handle.render(args, executor.policy)
    except HandleError as exc:
        assert isinstance(exc, (TemplateEvaluationError, ArgumentsError)), exc
        assert executor.spawned == 0
        event("refused")
        return
    event("ran")
    result = trio.run(executor.run, invocation)
    assert result.exit_code == 0, result.stderr
    received = json.loads(str(result.stdout))["argv"]
    assert received == list(invocation.argv[2:])
    # The guard held: no token from the model before the template's '--' is an option.
    # Allowed before it: the template's flags, a value right after '--flag', and '-'.
    before_end = received[: received.index("--")] if "--" in received else received
    for index, token in enumerate(before_end):
        if token.startswith("-") and token != "-":
            after_flag = index > 0 and before_end[index - 1] == "--flag"
            assert token == "--flag" or token.startswith("--joined=") or after_flag, received


# -- UTCP placeholder values ----------------------------------------------------------

UTCP_TEMPLATE = {
    "call_template_type": "cli",
    "commands": [
        {
            "command": (
                f"{PY} {PROBE} 'UTCP_ARG_v_UTCP_END' \"UTCP_ARG_v_UTCP_END\" "
                "--opt=UTCP_ARG_v_UTCP_END"
            )
        },
        {"command": f"printf %s 'UTCP_ARG_v_UTCP_END' | {PY} {PROBE}"},
    ],
}
PLAN: Plan = utcp.translate(UTCP_TEMPLATE)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_text)
def test_placeholder_values_never_change_what_runs(value: str) -> None:
    executor = Executor()
    try:
        result = trio.run(partial(utcp.run, UTCP_TEMPLATE, {"v": value}, executor=executor))
    except ArgumentsError as exc:
        like_an_option = value.startswith(("-", "+", "@")) and value != "-"  # the flag guard
        unpassable = "\x00" in value or any(0xD800 <= ord(c) <= 0xDFFF for c in value)
        assert like_an_option or unpassable, exc
        assert executor.spawned == 0
        return
    assert utcp.translate(UTCP_TEMPLATE).steps == PLAN.steps  # one plan, whatever the value
    first, second = (json.loads(step.output) for step in result.steps)
    assert first["argv"] == [value, value, "--opt=" + value]
    # The probe decodes stdin with errors="replace"; the bytes are the value's.
    sent = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    assert second["argv"] == [] and second["stdin"] == (sent or None)
    assert executor.spawned == 3  # the probe twice and printf: nothing else ran
