"""Behaviour of the evaluator's public API beyond the conformance vectors."""

from __future__ import annotations

import os
import threading
import tracemalloc
from pathlib import Path

import pytest

from command_handle import form
from command_handle.form import (
    UNDEFINED,
    EvaluationError,
    FormError,
    IncludeError,
    LimitError,
    Limits,
    Registry,
    TemplateSyntaxError,
    _expressions,
    compile_template,
    evaluate,
    headers_of,
)


def test_static_errors_surface_at_compile_time_with_pointers() -> None:
    cases = {
        "/a/0/$": {"a": [{"$": "$.x["}]},
        "/b": {"b": "bad \\q escape"},
        "/c": {"c": {"$": "x", "$use": 1}},
        "/d/$transform": {"d": {"$use": 1, "$transform": "nope"}},
        "/e/$encode": {"e": {"$use": 1, "$encode": "nope"}},
        "/f/$uri": {"f": {"$uri": "{x.}"}},
        "/g~1h": {"g/h": "{{"},
    }
    for pointer, template in cases.items():
        with pytest.raises(TemplateSyntaxError) as info:
            compile_template(template)
        assert info.value.pointer == pointer, template
        assert pointer in str(info.value)


def test_queries_are_parsed_once_at_compile_time(monkeypatch: pytest.MonkeyPatch) -> None:
    template = compile_template(
        {
            "a": {"$": "items[?@.x > 1].x"},
            "b": "{{user.name | length}}",
            "c": {"$if": "x", "$then": 1},
        }
    )

    def refuse(query: str) -> object:
        raise AssertionError(f"JSONPath parsed during evaluation: {query}")

    monkeypatch.setattr(_expressions._env(), "compile", refuse)
    for _ in range(3):
        assert template.evaluate(
            {"items": [{"x": 1}, {"x": 2}], "user": {"name": "Al"}, "x": 0}
        ) == {
            "a": [2],
            "b": "2",
            "c": 1,
        }


def test_constants_cannot_be_mutated_through_results() -> None:
    template = compile_template({"list": [1, 2], "obj": {"k": "v"}})
    first = template.evaluate({})
    assert isinstance(first, dict)
    first["list"].append(3)
    first["obj"]["k"] = "changed"
    assert template.evaluate({}) == {"list": [1, 2], "obj": {"k": "v"}}


def test_template_is_reusable_across_threads() -> None:
    template = compile_template({"$each": "$.items[*]", "$as": "i", "$value": "{{i}}-{{tag}}"})
    errors: list[BaseException] = []

    def work(tag: str) -> None:
        try:
            for n in range(200):
                result = template.evaluate({"items": [n, n + 1], "tag": tag})
                assert result == [f"{n}-{tag}", f"{n + 1}-{tag}"]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(str(i),)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_encoded_output_carries_content_type() -> None:
    value = evaluate({"a": {"$use": {"x": 1}, "$encode": "json"}}, {})
    assert isinstance(value, dict)
    assert headers_of(value["a"])["content-type"] == "application/json"
    assert headers_of(value["a"])["Content-Type"] == "application/json"
    override = evaluate({"$use": "data", "$encode": "base64", "$contentType": "image/png"})
    assert override == "ZGF0YQ=="
    assert headers_of(override)["Content-Type"] == "image/png"
    assert len(headers_of("plain")) == 0


def test_binary_values_pass_through_and_encode() -> None:
    assert evaluate({"$": "blob"}, {"blob": b"\x00\xff"}) == b"\x00\xff"
    assert evaluate({"$": "blob", "$encode": "base64"}, {"blob": b"\x00\xff"}) == "AP8="
    with pytest.raises(EvaluationError, match="binary"):
        evaluate({"$": "blob", "$encode": "json"}, {"blob": b"\x00"})


def test_undefined_sentinel() -> None:
    assert evaluate({"$": "missing"}, {}) is UNDEFINED
    assert repr(UNDEFINED) == "UNDEFINED"
    assert not UNDEFINED
    assert form.UndefinedType() is UNDEFINED


def test_errors_never_echo_argument_values() -> None:
    secret = "s3cr3t-value-123"
    failing = [
        ({"$each": "$.a[*]", "$as": "x", "$key": {"$": "x"}, "$value": 1}, {"a": [[secret]]}),
        ({"$": "v", "$encode": "urlencoded"}, {"v": {"k": b"bin"}, "s": secret}),
        ({"$": "v", "$matches": {"type": {"$": "t"}}}, {"v": 1, "t": secret}),
        ({"$": "v", "$transform": {"$": "t"}}, {"v": 1, "t": secret}),
        ({"$include": "{{p}}"}, {"p": "../" + secret}),
    ]
    for template, args in failing:
        with pytest.raises(FormError) as info:
            compile_template(template, include_base=Path(__file__).parent).evaluate(args)
        assert secret not in str(info.value), template


def test_private_registry_extends_without_touching_the_default() -> None:
    registry = form.DEFAULT_REGISTRY.copy()
    registry.add_transform("upper", lambda v: v.upper() if isinstance(v, str) else UNDEFINED)

    class HexEncoding:
        name = "hex"
        media_type = "text/plain"
        properties = frozenset({"$sep"})
        needs_provenance = False
        scope = None

        def compile(self, compiler, obj, pointer):  # type: ignore[no-untyped-def]
            sep = obj.get("$sep", "")

            def encode(value: object, ctx: object) -> object:
                assert isinstance(value, str)
                return sep.join(f"{b:02x}" for b in value.encode())

            return encode

    registry.add_encoding(HexEncoding())
    template = {"a": "{{name | upper}}", "b": {"$use": "hi", "$encode": "hex", "$sep": ":"}}
    assert evaluate(template, {"name": "ana"}, registry=registry) == {"a": "ANA", "b": "68:69"}
    with pytest.raises(TemplateSyntaxError, match="unknown transform 'upper'"):
        compile_template(template)
    with pytest.raises(ValueError):
        Registry().add_transform("bad name", lambda v: v)


def test_include_policy(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "ok.json").write_text('{"a": [1, 2]}')
    (base / "self.json").write_text('{"$include": "self.json"}')
    (tmp_path / "secret.json").write_text('{"secret": true}')
    os.symlink(tmp_path / "secret.json", base / "link.json")
    (base / "big.json").write_text("[" + ",".join(["1"] * 2000) + "]")

    assert evaluate({"$include": "ok.json#/a/1"}, include_base=base) == 2
    # Included content is data: an include of itself is not followed.
    assert evaluate({"$include": "self.json"}, include_base=base) == {"$include": "self.json"}
    with pytest.raises(IncludeError, match="outside the include base"):
        compile_template({"$include": "link.json"}, include_base=base)
    with pytest.raises(IncludeError, match="outside the include base"):
        compile_template({"$include": "../secret.json"}, include_base=base)
    with pytest.raises(IncludeError, match="larger than"):
        compile_template(
            {"$include": "big.json"}, include_base=base, limits=Limits(max_include_bytes=100)
        )
    with pytest.raises(IncludeError, match="no URI schemes"):
        compile_template({"$include": "file:///etc/passwd"}, include_base=base)
    # Dynamic references cannot climb out either.
    template = compile_template({"$include": "{{p}}"}, include_base=base)
    with pytest.raises(IncludeError, match="outside the include base"):
        template.evaluate({"p": "../secret.json"})
    resources = {"colors": ["red"]}
    assert evaluate({"$include": "colors#/0"}, include_resolver=lambda ref: resources[ref]) == "red"


def test_load_template_reads_includes_beside_the_file(tmp_path: Path) -> None:
    (tmp_path / "part.json").write_text('{"x": 1}')
    (tmp_path / "main.json").write_text('{"part": {"$include": "part.json"}, "n": "{{n}}"}')
    assert form.load_template(tmp_path / "main.json").evaluate({"n": 2}) == {
        "part": {"x": 1},
        "n": "2",
    }
    (tmp_path / "dup.json").write_text('{"a": 1, "a": 2}')
    with pytest.raises(TemplateSyntaxError, match="duplicate object key 'a'"):
        form.load_template(tmp_path / "dup.json")


def test_exponential_nesting_fails_fast_with_bounded_memory() -> None:
    level: object = {"$": "x"}
    for _ in range(12):
        level = {"$each": "$.items[*]", "$as": "i", "$value": [level, level]}
    template = compile_template(level)
    tracemalloc.start()
    with pytest.raises(LimitError):
        template.evaluate({"items": list(range(10)), "x": "y" * 100})
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 * 1024 * 1024


def test_deep_arguments_do_not_crash() -> None:
    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(LimitError):
        evaluate({"$": "v", "$encode": "json"}, {"v": deep})
    with pytest.raises(LimitError):
        evaluate("{{v}}", {"v": deep})
    with pytest.raises(LimitError):
        evaluate({"$": "$..x"}, {"v": deep})


def test_deep_template_refused_at_compile_time() -> None:
    deep: object = 1
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(TemplateSyntaxError, match="nesting"):
        compile_template(deep)


def test_matches_reads_patterns_as_ecma_262_in_every_draft() -> None:
    """$ is the end of the text, \\d is 0-9; a Python-only pattern is no schema."""
    for dialect in (None, "http://json-schema.org/draft-07/schema#"):
        schema: dict[str, object] = {"type": "string", "pattern": "^[a-z]+$"}
        digits: dict[str, object] = {"pattern": "^\\\\d+$"}  # \\ is a template's escape
        names: dict[str, object] = {"patternProperties": {"^[a-z]+$": {}}}
        names["additionalProperties"] = False
        if dialect:
            for each in (schema, digits, names):
                each["$$schema"] = dialect  # $$ writes a "$schema" key in a template
        test = {"$if": {"$": "v", "$matches": schema}, "$then": "yes", "$else": "no"}
        assert form.evaluate(test, {"v": "abc"}) == "yes"
        assert form.evaluate(test, {"v": "abc\n"}) == "no"
        test["$if"]["$matches"] = digits  # type: ignore[index]
        assert form.evaluate(test, {"v": "123"}) == "yes"
        assert form.evaluate(test, {"v": "\u0661\u0662\u0663"}) == "no"
        test["$if"]["$matches"] = names  # type: ignore[index]
        assert form.evaluate(test, {"v": {"ab": 1}}) == "yes"
        assert form.evaluate(test, {"v": {"ab\n": 1}}) == "no"
    with pytest.raises(TemplateSyntaxError, match="'format' rule"):
        form.compile_template({"$": "v", "$matches": {"pattern": "(?P<name>x)"}})


def test_non_json_template_values_are_refused() -> None:
    with pytest.raises(TemplateSyntaxError, match="not a JSON value"):
        compile_template({"a": {1, 2}})
    with pytest.raises(TemplateSyntaxError, match="NaN"):
        compile_template([float("nan")])


def test_a_template_that_reuses_itself_exponentially_is_refused_at_compile_time() -> None:
    """Python templates can share sub-templates: 2**18 uses are counted, not compiled.
    (A lower node limit keeps the test quick; the default is 100,000.)"""
    level: object = {"$": "x"}
    for _ in range(18):
        level = {"$each": "$.items[*]", "$as": "i", "$value": [{"$spread": level}] * 2}
    tracemalloc.start()
    with pytest.raises(TemplateSyntaxError, match="more than 10000 values"):
        compile_template(level, limits=form.Limits(max_nodes=10_000))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 * 1024 * 1024
    assert form.Limits().max_nodes == 100_000


def test_an_application_adds_a_directive_and_a_transform_to_its_own_registry() -> None:
    """The extension API (``form.extend``) is enough to write a directive."""
    from command_handle.form import DEFAULT_REGISTRY, TemplateSyntaxError, compile_template, extend

    class TicketDirective:  # a modifier: checked at compile time, never in the output
        name = "$ticket"
        category = "modifier"

        def check(self, value: object, pointer: str) -> None:
            if not (isinstance(value, str) and value.startswith("OPS-")):
                raise TemplateSyntaxError("$ticket must name an OPS ticket", pointer)

    registry = DEFAULT_REGISTRY.copy()
    registry.add_directive(TicketDirective())
    registry.add_transform("shout", lambda value: str(value).upper())
    template = compile_template(
        {"$ticket": "OPS-7", "greeting": {"$": "name | shout"}}, registry=registry
    )
    assert template.evaluate({"name": "ana"}) == {"greeting": "ANA"}
    with pytest.raises(TemplateSyntaxError, match="OPS ticket") as caught:
        compile_template({"$ticket": 7}, registry=registry)
    assert caught.value.pointer == "/$ticket"
    # The default registry is untouched.
    with pytest.raises(TemplateSyntaxError):
        compile_template({"$ticket": "OPS-7"})
    assert extend.json_pointer.child("/a", "b/c") == "/a/b~1c"
    assert extend.is_data(extend.mark("x")) and not extend.is_data("x")
