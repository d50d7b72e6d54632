"""A handle is compiled once, and a schema checked against the meta-schema once.

Loading a big tool folder was dominated by work done twice (pydantic ran the
handle's checks and compilation again through its constructor) or again for
every copy of a schema; ``Executor.call`` with a dict compiled it on every
call. These count the work, not the time.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from command_handle import CommandHandle, Executor, HandleLoadError, form, utcp


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Each template the handle layer compiles, as it is compiled."""
    seen: list[object] = []
    original = form.compile_template

    def counting(value: object, **options: Any) -> Any:
        seen.append(value)
        return original(value, **options)

    monkeypatch.setattr(form, "compile_template", counting)
    yield seen


@pytest.fixture
def meta_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Each schema checked against the meta-schema by jsonschema's walk."""
    from command_handle import _jsonschema

    seen: list[object] = []
    original = _jsonschema._check_fully

    def counting(schema: object, base: Any) -> None:
        seen.append(schema)
        original(schema, base)

    monkeypatch.setattr(_jsonschema, "_check_fully", counting)
    yield seen


def _echo(description: str) -> dict[str, Any]:
    """``/bin/echo MARK WORD``, with ``description`` as the mark and in the schema,
    so that nothing about it was compiled or checked before."""
    return {
        "name": "echo",
        "handler": "command",
        "command": "/bin/echo",
        "parameters": {
            "type": "object",
            "properties": {"word": {"type": "string", "description": description}},
            "required": ["word"],
        },
        "arguments": [description, {"$": "word"}],
    }


def _mine(compiled: list[object], mark: str) -> list[object]:
    """The compiled templates that hold ``mark`` (other tests compiled the rest)."""
    return [value for value in compiled if mark in str(value)]


def test_loading_a_handle_compiles_each_template_once(compiled: list[object]) -> None:
    mark = str(uuid.uuid4())
    CommandHandle.load(_echo(mark))
    assert _mine(compiled, mark) == [[mark, {"$": "word"}]]
    mark = str(uuid.uuid4())
    CommandHandle(**_echo(mark))  # the constructor too
    assert _mine(compiled, mark) == [[mark, {"$": "word"}]]


def test_a_template_is_compiled_once_for_every_handle_that_writes_it(
    compiled: list[object],
) -> None:
    mark = str(uuid.uuid4())
    first = CommandHandle.load(_echo(mark))
    second = CommandHandle.load({**_echo(mark), "name": "other"})
    assert _mine(compiled, mark) == [[mark, {"$": "word"}]]
    assert first.render({"word": "a"}).argv == second.render({"word": "a"}).argv
    # A template that fails to compile is refused every time.
    broken = {**_echo(mark), "arguments": [mark, {"$": "$$$["}]}
    for _ in range(2):
        with pytest.raises(HandleLoadError, match="invalid Tool Form"):
            CommandHandle.load(broken)
    assert len(_mine(compiled, mark)) == 3


def test_the_constructor_still_refuses_a_bad_handle_as_load_does() -> None:
    with pytest.raises(HandleLoadError, match="unknown field 'nope'"):
        CommandHandle(**_echo("x"), nope=1)
    with pytest.raises(HandleLoadError, match="invalid Tool Form"):
        CommandHandle(**{**_echo("x"), "arguments": [{"$": "$$$["}]})


def _beyond_the_plain_subset(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with a schema that jsonschema itself must check (``$defs``)."""
    document["parameters"]["$defs"] = {"unused": {"type": "string"}}
    return document


def test_a_schema_is_checked_against_the_meta_schema_once(meta_checks: list[object]) -> None:
    description = str(uuid.uuid4())  # a schema no other test has checked
    for _ in range(3):
        CommandHandle.load(_beyond_the_plain_subset(_echo(description)))
    assert len(meta_checks) == 1
    # The same schema in a UTCP tool's inputs is not checked again.
    utcp.load(
        {
            "name": "t",
            "inputs": _beyond_the_plain_subset(_echo(description))["parameters"],
            "tool_call_template": {"call_template_type": "cli", "commands": [{"command": "id"}]},
        }
    )
    assert len(meta_checks) == 1


def test_a_plain_schema_needs_no_walk_of_the_meta_schema(meta_checks: list[object]) -> None:
    """Typed properties and bounds whose values the meta-schema allows: accepted at once."""
    CommandHandle.load(_echo(str(uuid.uuid4())))
    assert meta_checks == []


def test_an_invalid_schema_is_refused_every_time(meta_checks: list[object]) -> None:
    document = _echo("x")
    document["parameters"]["properties"]["word"]["minLength"] = -1
    for _ in range(2):
        with pytest.raises(HandleLoadError) as refused:
            CommandHandle.load(document)
        assert refused.value.pointer == "/parameters/properties/word/minLength"
    assert len(meta_checks) == 2


def test_a_schema_that_is_not_plain_json_is_checked_every_time(
    meta_checks: list[object],
) -> None:
    """A tuple reads back as a list: the two must not share a cached verdict."""
    document = _beyond_the_plain_subset(_echo(str(uuid.uuid4())))
    CommandHandle.load(document)
    document["parameters"]["required"] = ("word",)
    with pytest.raises(HandleLoadError, match="parameters is not a valid JSON Schema"):
        CommandHandle.load(document)
    assert len(meta_checks) == 2


def test_a_dict_handle_is_loaded_once_per_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[object] = []
    original = CommandHandle.load.__func__  # type: ignore[attr-defined]

    def counting(cls: type[CommandHandle], source: Any) -> CommandHandle:
        loads.append(source)
        return original(cls, source)  # type: ignore[no-any-return]

    monkeypatch.setattr(CommandHandle, "load", classmethod(counting))
    executor = Executor()
    document = _echo(str(uuid.uuid4()))
    for _ in range(3):
        assert str(executor.call_sync(document, {"word": "hi"}).stdout).endswith(" hi\n")
    assert len(loads) == 1
    # An equal dict is the same handle; a changed one is loaded afresh, and
    # changing the dict later changes nothing that was cached.
    assert str(executor.call_sync(dict(document), {"word": "hi"}).stdout).endswith(" hi\n")
    assert len(loads) == 1
    document["arguments"] = ["fixed", {"$": "word"}]
    assert executor.call_sync(document, {"word": "hi"}).stdout == "fixed hi\n"
    document["arguments"].append("more")
    assert executor.call_sync(document, {"word": "hi"}).stdout == "fixed hi more\n"
    assert len(loads) == 3
    # A dict that is not plain JSON is loaded as it is, every time.
    document["arguments"] = ("tuple", {"$": "word"})
    for _ in range(2):
        with pytest.raises(HandleLoadError):
            executor.call_sync(document, {"word": "hi"})
    assert len(loads) == 5
