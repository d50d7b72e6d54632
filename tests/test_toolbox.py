"""The Toolbox: loading folders, describing tools, calling them by name.

Every call launches real processes (the probe reports what the child got).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import CommandError, CommandHandle, CommandResult, Executor
from command_handle.executor import plan_hash
from command_handle.toolbox import (
    NAME_PATTERN,
    ApprovalRequest,
    AuditEvent,
    StrictSchemaError,
    Toolbox,
    ToolLoadError,
    ToolResult,
)

from .processes import PROBE, PY, ROOT, words_without_template

HANDLES = ROOT / "fixtures" / "handles"
UTCP = ROOT / "fixtures" / "utcp"
BACKENDS = ("sync", "trio", "asyncio")

Call = Callable[..., ToolResult]


@pytest.fixture(params=BACKENDS)
def call(request: pytest.FixtureRequest) -> Call:
    """``call(toolbox, name, args, principal=None, **kw)`` through ``call_sync``,
    ``await call`` under trio or asyncio."""
    backend: str = request.param

    def invoke(
        toolbox: Toolbox, name: str, args: Any = None, principal: Any = None, **kw: Any
    ) -> ToolResult:
        if backend == "sync":
            return toolbox.call_sync(name, args, principal, **kw)
        if backend == "trio":
            return trio.run(lambda: toolbox.call(name, args, principal, **kw))
        return asyncio.run(toolbox.call(name, args, principal, **kw))

    return invoke


def write(path: Path, document: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def probe_doc(name: str = "probe", **fields: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "name": name,
        "description": "reports what it got",
        "handler": "command",
        "command": PY,
        "arguments": {"$use": [PROBE, {"$spread": {"$": "words"}}]},
        "parameters": {
            "type": "object",
            "properties": {"words": {"type": "array", "items": {"type": "string"}}},
        },
    }
    words_without_template(document, fields)
    document.update(fields)
    return document


def script_doc(name: str, tmp_path: Path, code: str, **fields: Any) -> dict[str, Any]:
    """A handle running a Python script written to ``tmp_path`` (no template in it)."""
    script = tmp_path / f"{name}.py"
    script.write_text(code)
    document: dict[str, Any] = {
        "name": name,
        "handler": "command",
        "command": PY,
        "arguments": [str(script)],
    }
    document.update(fields)
    return document


def child_stdout(result: ToolResult) -> str:
    """What the child wrote, unredacted: the application's view of the run."""
    assert isinstance(result.result, CommandResult)
    return str(result.result.stdout)


def report(result: ToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    data: dict[str, Any] = json.loads(result.content)
    return data


# -- loading ------------------------------------------------------------------------


def test_loads_the_fixture_folders_with_llm_safe_names() -> None:
    toolbox = Toolbox.load(HANDLES, UTCP)
    names = toolbox.names()
    assert len(names) == len(set(names)) > 20
    assert all(NAME_PATTERN.match(name) for name in names)
    assert toolbox["list-directory"].kind == "command"
    assert "list-directory" in toolbox and "nothing" not in toolbox
    utcp_tools = [tool for tool in toolbox if tool.kind == "utcp"]
    assert utcp_tools and all(tool.parameters["type"] == "object" for tool in utcp_tools)
    # a manual's tool is named after its file and its name
    assert "protocol-safe-file-read_safe_file_read" in names


def test_two_tools_with_one_name_name_both_files(tmp_path: Path) -> None:
    first = write(tmp_path / "a" / "one.json", probe_doc("same"))
    second = write(tmp_path / "b" / "two.json", probe_doc("same"))
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(tmp_path)
    message = str(caught.value)
    assert str(first) in message and str(second) in message and "same" in message


def test_a_load_error_names_the_file_and_the_pointer(tmp_path: Path) -> None:
    write(tmp_path / "good.json", probe_doc())
    bad = write(tmp_path / "sub" / "bad.json", probe_doc("bad", timeout=-1))
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(tmp_path)
    assert caught.value.path == str(bad)
    assert caught.value.pointer == "/timeout"
    assert str(bad) in str(caught.value)


def test_a_file_that_is_no_tool_is_an_error_when_named_or_alone(tmp_path: Path) -> None:
    other = write(tmp_path / "package.json", {"name": "x", "version": "1"})
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(other)
    assert caught.value.path == str(other) and "not a tool" in str(caught.value)
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(tmp_path)  # a folder with no tool at all
    assert "no tool in this folder" in str(caught.value) and "package.json" in str(caught.value)


def test_a_json_file_that_is_no_tool_beside_tools_is_passed_over_with_a_note(
    tmp_path: Path,
) -> None:
    """One package.json in the folder no longer stops the tools from loading
    (nor the server from starting); it is listed in ``skipped`` with why."""
    write(tmp_path / "tool.json", probe_doc())
    other = write(tmp_path / "package.json", {"name": "x", "version": "1", "scripts": {}})
    (tmp_path / "settings.yaml").write_text("editor: vim\n")
    toolbox = Toolbox.load(tmp_path)
    assert toolbox.names() == ["probe"]
    assert [note.split(": ", 1)[0] for note in toolbox.skipped] == [
        str(other),
        str(tmp_path / "settings.yaml"),
    ]
    assert all("not a tool" in note for note in toolbox.skipped)


def test_a_broken_tool_beside_tools_is_still_an_error(tmp_path: Path) -> None:
    """A document meant as a tool (it has `command`) is never passed over."""
    write(tmp_path / "tool.json", probe_doc())
    broken = write(tmp_path / "typo.json", {"name": "t", "hnadle": "command", "command": "ls"})
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(tmp_path)
    assert caught.value.path == str(broken) and "not a tool" in str(caught.value)


def test_hidden_entries_and_other_suffixes_are_skipped(tmp_path: Path) -> None:
    write(tmp_path / "tool.json", probe_doc())
    write(tmp_path / ".hidden" / "x.json", {"broken": True})
    write(tmp_path / ".x.json", {"broken": True})
    (tmp_path / "notes.txt").write_text("not a tool")
    (tmp_path / "tool2.yaml").write_text("name: yaml-tool\nhandler: command\ncommand: /bin/true\n")
    assert sorted(Toolbox.load(tmp_path).names()) == ["probe", "yaml-tool"]


def test_a_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ToolLoadError, match="no such file or folder"):
        Toolbox.load(tmp_path / "missing")


def test_a_fifo_among_the_tools_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A FIFO named like a tool file would block a plain open() until a writer came."""
    write(tmp_path / "good.json", probe_doc())
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)
    outcome: list[BaseException | Toolbox] = []

    def load() -> None:
        try:
            outcome.append(Toolbox.load(tmp_path))
        except BaseException as exc:
            outcome.append(exc)

    loader = threading.Thread(target=load, daemon=True)
    loader.start()
    loader.join(timeout=10)
    if loader.is_alive():  # blocked in open(): give it a writer so the thread ends
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        loader.join(timeout=10)
        pytest.fail("Toolbox.load blocked on a FIFO")
    [error] = outcome
    assert isinstance(error, ToolLoadError), error
    assert error.path == str(fifo) and "a FIFO, not a regular file" in str(error)


MAX_DOCUMENT_BYTES = 8 * 1024 * 1024  # the documented cap on a tool document

LOAD_IN_CHILD = (
    "import resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
    "from command_handle.toolbox import Toolbox, ToolLoadError\n"
    "try:\n"
    "    Toolbox.load(sys.argv[1])\n"
    "except ToolLoadError as exc:\n"
    "    print(exc.path, '|', exc)\n"
)


def test_a_link_to_a_device_is_refused_not_read(tmp_path: Path) -> None:
    """x.json -> /dev/zero would be read until memory ran out: the load runs in a
    child with 1 GiB of address space, so a regression fails here, not the suite."""
    (tmp_path / "x.json").symlink_to("/dev/zero")
    done = subprocess.run(
        [PY, "-c", LOAD_IN_CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"{tmp_path / 'x.json'} |")
    assert "a device, not a regular file" in done.stdout


def test_a_tool_document_over_the_size_cap_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    body = json.dumps(probe_doc()).encode()
    big.write_bytes(body[:-1] + b" " * MAX_DOCUMENT_BYTES + b"}")
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(tmp_path)
    assert caught.value.path == str(big) and "larger than 8 MiB" in str(caught.value)
    big.write_bytes(body[:-1] + b" " * (MAX_DOCUMENT_BYTES - len(body)) + b"}")
    assert Toolbox.load(tmp_path).names() == ["probe"]  # exactly at the cap: read


def test_a_tool_name_must_match_the_name_pattern_whole(tmp_path: Path) -> None:
    """Python's $ matches before a final newline: "x\n" must not pass as a name."""
    template = {"name": "list\n", "call_template_type": "cli", "commands": [{"command": "ls"}]}
    write(tmp_path / "bare.json", template)
    toolbox = Toolbox.load(tmp_path)
    assert toolbox.names() == ["list_"]
    assert NAME_PATTERN.match("list\n") is None and NAME_PATTERN.fullmatch("list_")
    write(tmp_path / "bare.json", probe_doc("probe\n"))
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(tmp_path)
    assert caught.value.pointer == "/name"


@pytest.mark.parametrize(
    ("fields", "pointer", "words"),
    [
        (
            {"arguments": ["--key", {"$credential": "keyValue"}]},
            "/arguments/1",
            "only in environment and io.stdin",
        ),
        ({"directory": {"$credential": "dir"}}, "/directory", "only in environment"),
        ({"result": {"$credential": "keyValue"}}, "/result", "only in environment"),
        ({"result": {"$context": "user"}}, "/result", "shown to the model"),
        ({"security": {"scheme": "apiKey", "token": "abc"}}, "/security/token", "never holds"),
        ({"security": {"name": "no scheme"}}, "/security", "scheme"),
        ({"annotations": {"readOnly": True}}, "/annotations/readOnly", "unknown annotation"),
        ({"output_schema": {"type": "string"}}, "/output_schema", 'type: "object"'),
    ],
)
def test_handle_extension_fields_are_checked_at_load(
    tmp_path: Path, fields: dict[str, Any], pointer: str, words: str
) -> None:
    write(tmp_path / "tool.json", probe_doc(**fields))
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(tmp_path)
    assert caught.value.pointer == pointer
    assert words in caught.value.message


# -- describing ---------------------------------------------------------------------


def annotated(tmp_path: Path) -> Toolbox:
    write(
        tmp_path / "t.json",
        probe_doc(
            annotations={"readOnlyHint": True, "openWorldHint": False},
            output_schema={"type": "object", "properties": {"argv": {"type": "array"}}},
            result={"argv": {"$": "stdout"}},
        ),
    )
    write(tmp_path / "plain.json", probe_doc("plain"))
    return Toolbox.load(tmp_path)


def test_describe_mcp(tmp_path: Path) -> None:
    by_name = {tool["name"]: tool for tool in annotated(tmp_path).describe("mcp")}
    probe = by_name["probe"]
    assert probe["inputSchema"]["type"] == "object"
    assert probe["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
    assert probe["outputSchema"]["type"] == "object"
    assert set(by_name["plain"]) == {"name", "description", "inputSchema"}


def test_describe_openai_anthropic_and_tool_handle(tmp_path: Path) -> None:
    toolbox = annotated(tmp_path)
    openai = toolbox.describe("openai")[0]
    assert openai["type"] == "function" and set(openai["function"]) == {
        "name",
        "description",
        "parameters",
    }
    assert set(toolbox.describe("anthropic")[0]) == {"name", "description", "input_schema"}
    assert set(toolbox.describe("tool-handle")[0]) == {"name", "description", "parameters"}
    with pytest.raises(ValueError, match="unknown tool format"):
        toolbox.describe("gemini")


def _strict_invariants(schema: dict[str, Any]) -> None:
    """Every object closed, every property required, recursively."""
    if schema.get("type") == "object" or "properties" in schema:
        assert schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])
        for sub in schema["properties"].values():
            _strict_invariants(sub)
    for key in ("items",):
        if isinstance(schema.get(key), dict):
            _strict_invariants(schema[key])
    for branch in schema.get("anyOf", []):
        _strict_invariants(branch)


def test_every_fixture_handle_exports_in_strict_mode() -> None:
    toolbox = Toolbox.load(HANDLES)
    for tool in toolbox.describe("openai-strict"):
        assert tool["function"]["strict"] is True
        _strict_invariants(tool["function"]["parameters"])


def test_strict_rewrite_makes_optional_properties_nullable_recursively(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "default": "x"},
            "mode": {"enum": ["a", "b"]},
            "options": {
                "type": "object",
                "properties": {"depth": {"type": "integer", "minimum": 0}},
            },
            "files": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            },
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["name"],
    }
    write(tmp_path / "t.json", probe_doc(parameters=schema))
    strict = Toolbox.load(tmp_path).describe("openai-strict")[0]["function"]["parameters"]
    _strict_invariants(strict)
    props = strict["properties"]
    assert props["name"] == {"type": "string"}  # required: not nullable; minLength dropped
    assert props["mode"]["enum"] == ["a", "b", None]
    assert props["options"]["type"] == ["object", "null"]
    assert props["options"]["properties"]["depth"] == {"type": ["integer", "null"], "minimum": 0}
    assert props["files"]["items"]["properties"]["path"] == {"type": "string"}
    assert props["either"] == {
        "anyOf": [{"anyOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "null"}]
    }


@pytest.mark.parametrize(
    ("prop", "keyword"),
    [
        ({"allOf": [{"type": "string"}]}, "allOf"),
        ({"type": "object", "additionalProperties": {"type": "string"}}, "additionalProperties"),
        ({"type": "object"}, "properties"),
        ({"type": "string", "not": {"const": "x"}}, "not"),
        ({}, "true"),
    ],
)
def test_strict_refuses_what_it_cannot_express(
    tmp_path: Path, prop: dict[str, Any], keyword: str
) -> None:
    schema = {"type": "object", "properties": {"x": prop}}
    write(tmp_path / "t.json", probe_doc("shapes", parameters=schema))
    with pytest.raises(StrictSchemaError) as caught:
        Toolbox.load(tmp_path).describe("openai-strict")
    assert caught.value.tool == "shapes" and caught.value.keyword == keyword
    assert "shapes" in str(caught.value) and keyword in str(caught.value)


# -- calling ------------------------------------------------------------------------


def test_call_runs_the_tool_and_returns_its_output(tmp_path: Path, call: Call) -> None:
    write(tmp_path / "t.json", probe_doc())
    toolbox = Toolbox.load(tmp_path)
    result = call(toolbox, "probe", {"words": ["a", "b c"]})
    assert report(result)["argv"] == ["a", "b c"]
    assert result.structured["exit_code"] == 0  # type: ignore[index]
    assert "argv" not in result.structured  # type: ignore[operator]
    assert result.result is not None and result.plan_hash is None  # no approve hook
    assert result.to_json() == {
        "is_error": False,
        "content": result.content,
        "structured": result.structured,
    }


def test_arguments_may_be_json_text(tmp_path: Path, call: Call) -> None:
    write(tmp_path / "t.json", probe_doc())
    toolbox = Toolbox.load(tmp_path)
    assert report(call(toolbox, "probe", '{"words": ["x"]}'))["argv"] == ["x"]
    bad = call(toolbox, "probe", "{not json")
    assert bad.is_error and "not valid JSON" in bad.content
    listed = call(toolbox, "probe", "[1]")
    assert listed.is_error and "must be a JSON object" in listed.content
    assert toolbox.executor.spawned == 1


# Arrays of arrays: a recursive schema, which null removal and validation
# follow as deep as the value goes.
RECURSIVE = {
    "type": "object",
    "properties": {"tree": {"$ref": "#/$defs/node"}},
    "$defs": {"node": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
}


@pytest.mark.parametrize("levels", [1_000, 100_000])
def test_arguments_nested_too_deeply_are_refused_not_raised(
    tmp_path: Path, call: Call, levels: int
) -> None:
    """Python's JSON reader and any recursive walk stop near 1,000 levels with
    RecursionError; a model's arguments that deep are an is_error result."""
    canary = tmp_path / "ran"
    code = f"open({str(canary)!r}, 'w').close()"
    write(
        tmp_path / "tools" / "deep.json", script_doc("deep", tmp_path, code, parameters=RECURSIVE)
    )
    manual = {
        "tools": [
            {
                "name": "deep",
                "description": "",
                "inputs": RECURSIVE,
                "tool_call_template": {
                    "call_template_type": "cli",
                    "commands": [{"command": f'{PY} -c \'open("{canary}", "w")\''}],
                },
            }
        ]
    }
    write(tmp_path / "tools" / "manual.json", manual)
    toolbox = Toolbox.load(tmp_path / "tools")
    nested: list[object] = []
    for _ in range(levels):
        nested = [nested]
    text = '{"tree": ' + "[" * levels + "]" * levels + "}"
    for name in ("deep", "manual_deep"):
        as_text = call(toolbox, name, text)
        assert as_text.is_error, as_text.content
        assert "nested deeper than the limit of 64 levels; nothing ran" in as_text.content
        as_object = call(toolbox, name, {"tree": nested})
        assert as_object.is_error and "nested deeper than 64 levels" in as_object.content
        assert toolbox.preview_sync(name, text).error == as_text.content
    assert toolbox.executor.spawned == 0 and not canary.exists()
    shallow: list[object] = []
    for _ in range(60):
        shallow = [shallow]
    assert not call(toolbox, "deep", {"tree": shallow}).is_error  # within the limit: it runs
    assert canary.exists()


@pytest.mark.parametrize("levels", [600, 100_000])
def test_a_program_s_deeply_nested_json_output_is_kept_as_text(
    tmp_path: Path, call: Call, levels: int
) -> None:
    """A UTCP tool's output is parsed as JSON; nested too deeply to handle, it stays text."""
    script = tmp_path / "deep.py"
    script.write_text(f"print('[' * {levels} + ']' * {levels})")
    template = {"call_template_type": "cli", "commands": [{"command": f"{PY} {script}"}]}
    write(tmp_path / "tools" / "deep.json", template)
    result = call(Toolbox.load(tmp_path / "tools"), "deep", {})
    assert not result.is_error, result.content
    assert result.structured == "[" * levels + "]" * levels
    assert result.content.startswith("[[[[")


def test_strict_mode_nulls_mean_absent(tmp_path: Path, call: Call) -> None:
    parameters = {
        "type": "object",
        "properties": {
            "words": {"type": "array", "items": {"type": "string"}},
            "flag": {"type": "string"},
            "nested": {"type": "object", "properties": {"inner": {"type": "string"}}},
            "maybe": {"type": ["string", "null"]},
        },
        "additionalProperties": False,
    }
    arguments = {
        "$use": [
            PROBE,
            {"$if": "$.flag", "$then": "--flag", "$else": "no-flag"},
            {"$if": "$.nested.inner", "$then": "inner", "$else": "no-inner"},
            {"$if": "$.maybe == null", "$then": "maybe-null", "$else": "maybe-absent"},
        ]
    }
    write(tmp_path / "t.json", probe_doc(parameters=parameters, arguments=arguments))
    toolbox = Toolbox.load(tmp_path)
    sent = {"words": None, "flag": None, "nested": {"inner": None}, "maybe": None}
    # A property whose schema accepts null keeps it; the others are dropped.
    assert report(call(toolbox, "probe", sent))["argv"] == ["no-flag", "no-inner", "maybe-null"]


def test_strict_mode_through_local_references(tmp_path: Path, call: Call) -> None:
    parameters = {
        "type": "object",
        "properties": {"opts": {"$ref": "#/$defs/opts"}},
        "$defs": {
            "opts": {
                "type": "object",
                "properties": {"depth": {"type": "integer"}, "name": {"type": "string"}},
                "required": ["name"],
                "additionalProperties": False,
            }
        },
        "required": ["opts"],
        "additionalProperties": False,
    }
    arguments = {"$use": [PROBE, {"$": "opts.name"}, {"$if": "$.opts.depth", "$then": "deep"}]}
    write(tmp_path / "t.json", probe_doc(parameters=parameters, arguments=arguments))
    toolbox = Toolbox.load(tmp_path)
    strict = toolbox.describe("openai-strict")[0]["function"]["parameters"]
    _strict_invariants(strict["$defs"]["opts"])
    assert strict["$defs"]["opts"]["properties"]["depth"]["type"] == ["integer", "null"]
    sent = {"opts": {"name": "n", "depth": None}}  # as strict mode sends it
    assert report(call(toolbox, "probe", sent))["argv"] == ["n"]


LLM_MISTAKES = [
    ({"words": "not-a-list"}, "`words` must be of type array"),
    ({"words": [1]}, "`words[0]` must be of type string"),
    ({"path": 3}, "`path` must be of type string"),
    ({}, "`path` is required"),
    ({"path": "a", "bogus": 1}, "`bogus` is not a parameter of this tool"),
    ({"path": "-rf"}, "`path` must not start with '-'"),
    ({"path": "+cmd"}, "`path` must not start with '+'"),
    ({"path": "a\x00b"}, "`path` holds a NUL character, which cannot be passed to a program"),
    ({"path": "x" * 3_000_000}, "`path` is too large to pass to a program"),
]


@pytest.mark.parametrize(("args", "expected"), LLM_MISTAKES)
def test_llm_mistakes_come_back_as_errors_naming_the_parameter(
    tmp_path: Path, call: Call, args: dict[str, Any], expected: str
) -> None:
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "words": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    document = probe_doc(parameters=parameters, arguments={"$use": [PROBE, {"$": "path"}]})
    write(tmp_path / "t.json", document)
    toolbox = Toolbox.load(tmp_path)
    result = call(toolbox, "probe", args)
    assert result.is_error and result.result is None
    assert expected in result.content and "nothing ran" in result.content.lower()
    # no handle internals and no values in what the model reads
    assert "/arguments" not in result.content and "$use" not in result.content
    assert "-rf" not in result.content.replace("`path`", "")
    assert toolbox.executor.spawned == 0


def test_patterns_are_ecma_262_regular_expressions(tmp_path: Path, call: Call) -> None:
    """$ is the end of the text and \\d is 0-9, in a handle's parameters and
    output_schema and in a UTCP tool's inputs alike; nothing runs on a refusal."""
    word = {"type": "string", "pattern": "^[a-z]+$"}
    digits = {"type": "string", "pattern": "^\\d+$"}
    parameters = {
        "type": "object",
        "properties": {"word": word, "other": word, "count": digits},
        "patternProperties": {"^x[a-z]$": {"type": "string"}},
        "additionalProperties": False,
    }
    handle = {
        "name": "greet",
        "handler": "command",
        "command": "sh",
        "arguments": ["-c", "echo {{word}} {{other}}"],
        "parameters": parameters,
    }
    write(tmp_path / "tools" / "greet.json", handle)
    manual = {
        "tools": [
            {
                "name": "greet",
                "description": "",
                "inputs": parameters,
                "tool_call_template": {
                    "call_template_type": "cli",
                    "commands": [{"command": "echo UTCP_ARG_word_UTCP_END"}],
                },
            }
        ]
    }
    write(tmp_path / "tools" / "manual.json", manual)
    shaped = probe_doc(
        "shaped",
        result={"first": {"$": "stdout"}},
        output_schema={"type": "object", "properties": {"first": word}},
    )
    write(tmp_path / "tools" / "shaped.json", shaped)
    toolbox = Toolbox.load(tmp_path / "tools")
    for runs, name in enumerate(("greet", "manual_greet")):
        for args, problem in (
            ({"word": "hi\n", "other": "pwd"}, "`word` must match the pattern '^[a-z]+$'"),
            ({"word": "hi", "count": "\u0661\u0662\u0663"}, "`count` must match the pattern"),
            ({"word": "hi", "xy\n": "z"}, "`xy\n` is not a parameter of this tool"),
        ):
            result = call(toolbox, name, args)
            assert result.is_error and problem in result.content, result.content
        assert toolbox.executor.spawned == runs  # only the valid calls ran
        ran = call(toolbox, name, {"word": "hi", "other": "pwd", "count": "123", "xa": "ok"})
        assert not ran.is_error and ran.content.startswith("hi"), ran.content
    # The output schema is held to the same patterns: the probe's stdout ends in "\n".
    result = call(toolbox, "shaped", {"words": ["abc"]})
    assert result.is_error and "does not match the tool's output schema" in result.content


def test_unknown_tool_lists_the_tools(tmp_path: Path, call: Call) -> None:
    write(tmp_path / "t.json", probe_doc())
    result = call(Toolbox.load(tmp_path), "prob", {})
    assert (
        result.is_error and "`probe`" in result.content and "no tool named `prob`" in result.content
    )


def test_default_result_processing(tmp_path: Path, call: Call) -> None:
    code = (
        "import sys\n"
        "mode = sys.argv[1]\n"
        "if mode == 'big': sys.stdout.write('H' * 100 + 'x' * 5000 + 'T' * 100)\n"
        "if mode == 'fail': print('partial'); print('boom', file=sys.stderr); sys.exit(3)\n"
        "if mode == 'quiet': pass\n"
        "if mode == 'sleep':\n    import time; time.sleep(30)\n"
        "if mode == 'kill':\n    import os, signal; os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    document = script_doc(
        "modes",
        tmp_path,
        code,
        parameters={
            "type": "object",
            "properties": {"mode": {"enum": ["big", "fail", "quiet", "sleep", "kill"]}},
        },
        timeout=1,
    )
    document["arguments"] = [document["arguments"][0], {"$": "mode"}]
    write(tmp_path / "t.json", document)
    toolbox = Toolbox.load(tmp_path, max_content=200)

    big = call(toolbox, "modes", {"mode": "big"})
    assert not big.is_error
    assert big.content == "H" * 100 + "\n[... 5000 bytes omitted ...]\n" + "T" * 100

    failed = call(toolbox, "modes", {"mode": "fail"})
    assert failed.is_error
    assert (
        failed.content
        == "partial\n\nstderr:\nboom\n\nThe command ran and reported failure: exit code 3."
    )

    quiet = call(toolbox, "modes", {"mode": "quiet"})
    assert quiet.content == "The command succeeded with no output."

    slow = call(toolbox, "modes", {"mode": "sleep"})
    assert slow.is_error and "timed out after 1 s" in slow.content

    killed = call(toolbox, "modes", {"mode": "kill"})
    assert killed.is_error and "killed by signal SIGKILL" in killed.content
    for result in (big, failed, quiet, slow, killed):
        assert PY not in result.content  # argv is never shown by default


def test_output_cut_by_the_executor_shows_head_and_tail(tmp_path: Path, call: Call) -> None:
    code = "import sys; sys.stdout.write('A' * 50 + 'm' * 100000 + 'Z' * 50)"
    write(tmp_path / "t.json", script_doc("big", tmp_path, code, max_output=1000))
    result = call(Toolbox.load(tmp_path, max_content=100), "big", {})
    assert result.content == "A" * 50 + "\n[... 100000 bytes omitted ...]\n" + "Z" * 50
    assert result.structured["stdout_bytes"] == 100100  # type: ignore[index]
    assert result.structured["stdout_truncated"] is True  # type: ignore[index]


def test_result_template_is_the_structured_value(tmp_path: Path, call: Call) -> None:
    write(
        tmp_path / "t.json",
        probe_doc(
            result={"argv": {"$": "stdout"}, "code": {"$": "exit_code"}},
            output_schema={
                "type": "object",
                "properties": {"argv": {"type": "string"}, "code": {"type": "integer"}},
                "required": ["argv", "code"],
            },
        ),
    )
    write(
        tmp_path / "wrong.json",
        probe_doc(
            "wrong",
            result={"code": {"$": "exit_code"}},
            output_schema={"type": "object", "properties": {"code": {"type": "string"}}},
        ),
    )
    toolbox = Toolbox.load(tmp_path)
    result = call(toolbox, "probe", {"words": ["w"]})
    assert not result.is_error
    assert result.structured["code"] == 0  # type: ignore[index]
    assert json.loads(result.content)["code"] == 0
    wrong = call(toolbox, "wrong", {})
    assert wrong.is_error and "output schema" in wrong.content


# -- credentials --------------------------------------------------------------------

CANARY = "canary-7f3a9c1e5b"


def credential_doc(**fields: Any) -> dict[str, Any]:
    return probe_doc(
        "secret-tool",
        security={"scheme": "apiKey", "name": "production-api-key"},
        environment={"API_KEY": {"$credential": "keyValue"}, "MODE": "fixed"},
        **fields,
    )


def test_a_credential_reaches_the_child_and_nothing_else(
    tmp_path: Path, call: Call, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[AuditEvent] = []
    approvals: list[ApprovalRequest] = []
    seen: list[tuple[Any, str]] = []

    def resolve(principal: Any, handle: Any) -> dict[str, str]:
        seen.append((principal, handle.security["name"]))
        return {"scheme": "apiKey", "keyValue": CANARY}

    def approve(request: ApprovalRequest) -> bool:
        approvals.append(request)
        return True

    write(tmp_path / "t.json", credential_doc())
    toolbox = Toolbox.load(tmp_path, credentials=resolve, approve=approve, events=events.append)
    with caplog.at_level(logging.DEBUG, logger="command_handle"):
        result = call(toolbox, "secret-tool", {"words": ["w"]}, principal="alice")
    assert seen == [("alice", "production-api-key")]
    # The child got it...
    assert not result.is_error
    assert CANARY in child_stdout(result)
    # ...the model sees it redacted, and it is nowhere else.
    assert CANARY not in result.content and "[credential]" in result.content
    assert CANARY not in json.dumps(result.structured)
    assert CANARY not in json.dumps([e.to_json() for e in events])
    assert CANARY not in caplog.text and "spawned" in caplog.text
    plan = approvals[0].plan
    assert plan["environment"]["API_KEY"] == "********" and plan["environment"]["MODE"] == "fixed"
    assert CANARY not in json.dumps(plan)


def test_the_model_cannot_set_or_override_a_credential(tmp_path: Path, call: Call) -> None:
    parameters = {
        "type": "object",
        "properties": {"words": {"type": "array", "items": {"type": "string"}}},
    }  # open: extra properties are allowed, and still reach nothing
    write(tmp_path / "t.json", credential_doc(parameters=parameters))
    toolbox = Toolbox.load(
        tmp_path, credentials=lambda p, h: {"scheme": "apiKey", "keyValue": CANARY}
    )
    result = call(toolbox, "secret-tool", {"keyValue": "model", "API_KEY": "model"})
    assert result.result is not None
    assert json.loads(child_stdout(result))["env"]["API_KEY"] == CANARY


def test_credentials_are_resolved_per_call_and_principal(tmp_path: Path, call: Call) -> None:
    keys = {"alice": "key-of-alice-1234", "bob": "key-of-bob-5678"}
    calls: list[str] = []

    def resolve(principal: str, handle: Any) -> dict[str, str]:
        calls.append(principal)
        return {"scheme": "apiKey", "keyValue": keys[principal]}

    write(tmp_path / "t.json", credential_doc())
    toolbox = Toolbox.load(tmp_path, credentials=resolve)
    for principal in ("alice", "bob", "alice"):
        result = call(toolbox, "secret-tool", {}, principal)
        assert result.result is not None
        assert json.loads(child_stdout(result))["env"]["API_KEY"] == keys[principal]
    assert calls == ["alice", "bob", "alice"]  # nothing cached


def test_an_async_resolver_works_on_every_path(tmp_path: Path, call: Call) -> None:
    async def resolve(principal: Any, handle: Any) -> dict[str, str]:
        return {"scheme": "apiKey", "keyValue": CANARY}

    write(tmp_path / "t.json", credential_doc())
    result = call(Toolbox.load(tmp_path, credentials=resolve), "secret-tool", {})
    assert result.result is not None
    assert json.loads(child_stdout(result))["env"]["API_KEY"] == CANARY


@pytest.mark.parametrize("failure", ["raises", "not-a-mapping", "no-resolver"])
def test_a_failed_resolution_refuses_and_reveals_nothing(
    tmp_path: Path, call: Call, failure: str
) -> None:
    def resolve(principal: Any, handle: Any) -> Any:
        if failure == "raises":
            raise PermissionError(f"vault says no for {CANARY}")
        return CANARY

    events: list[AuditEvent] = []
    write(tmp_path / "t.json", credential_doc())
    toolbox = Toolbox.load(
        tmp_path,
        credentials=None if failure == "no-resolver" else resolve,
        events=events.append,
    )
    result = call(toolbox, "secret-tool", {})
    assert result.is_error and "could not be obtained" in result.content
    assert toolbox.executor.spawned == 0
    everything = result.content + json.dumps([e.to_json() for e in events])
    assert CANARY not in everything and "vault" not in everything
    assert [e.kind for e in events if e.call_id] == ["refused"]


def test_a_credential_in_stdin_is_masked_in_the_plan(tmp_path: Path, call: Call) -> None:
    approvals: list[ApprovalRequest] = []
    document = probe_doc(
        "stdin-secret",
        security={"scheme": "basic"},
        io={"stdin": {"$credential": "password"}},
    )
    write(tmp_path / "t.json", document)
    toolbox = Toolbox.load(
        tmp_path,
        credentials=lambda p, h: {"scheme": "basic", "password": CANARY},
        approve=lambda r: not approvals.append(r),  # type: ignore[func-returns-value]
    )
    result = call(toolbox, "stdin-secret", {})
    assert CANARY in child_stdout(result)
    # the digest is of what is shown, the credential masked: never of a secret
    assert approvals[0].plan["stdin"] == {
        "bytes": len(CANARY),
        "sha256": hashlib.sha256(b"********").hexdigest(),
    }
    assert CANARY not in result.content


def test_render_masks_credentials(tmp_path: Path) -> None:
    write(tmp_path / "t.json", credential_doc())
    handle = Toolbox.load(tmp_path)["secret-tool"].handle
    assert handle is not None
    invocation = handle.render({}, credential={"scheme": "apiKey", "keyValue": CANARY})
    assert invocation.env["API_KEY"] == CANARY  # what the child gets
    assert invocation.to_json()["env"] == {"API_KEY": "********", "MODE": "fixed"}


# -- context ------------------------------------------------------------------------


def test_context_values_reach_templates_and_not_the_model(tmp_path: Path, call: Call) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    document = probe_doc(
        "ctx",
        directory={"$context": "workspace"},
        environment={"TENANT": {"$context": "tenant"}},
    )
    write(tmp_path / "t.json", document)
    toolbox = Toolbox.load(tmp_path, policy=None)
    shown = toolbox.describe("mcp")[0]
    assert "workspace" not in json.dumps(shown) and "tenant" not in json.dumps(shown)
    got = report(
        call(
            toolbox,
            "ctx",
            {"workspace": "/", "tenant": "evil"},
            context={"workspace": str(workspace), "tenant": "acme"},
        )
    )
    assert got["cwd"] == str(workspace) and got["env"]["TENANT"] == "acme"
    # absent context: the variable is absent, the directory the default
    bare = report(call(toolbox, "ctx", {}))
    assert "TENANT" not in bare["env"]


# -- approval -----------------------------------------------------------------------


def test_a_denial_is_an_error_and_nothing_runs(tmp_path: Path, call: Call) -> None:
    events: list[AuditEvent] = []
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').close()"
    write(tmp_path / "t.json", script_doc("touch", tmp_path, code))
    toolbox = Toolbox.load(tmp_path, approve=lambda request: False, events=events.append)
    result = call(toolbox, "touch", {})
    assert result.is_error and "declined" in result.content and "nothing ran" in result.content
    assert not marker.exists() and toolbox.executor.spawned == 0
    assert [e.kind for e in events if e.call_id] == ["denied"]
    assert events[-1].details["plan_hash"] == result.plan_hash


def test_the_approver_sees_the_whole_plan_and_a_stable_hash(tmp_path: Path, call: Call) -> None:
    requests: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> bool:
        requests.append(request)
        return True

    write(tmp_path / "t.json", probe_doc(io={"stdin": {"$": "words[0]"}}))
    toolbox = Toolbox.load(tmp_path, approve=approve)
    first = call(toolbox, "probe", {"words": ["a"]})
    again = call(toolbox, "probe", {"words": ["a"]})
    other = call(toolbox, "probe", {"words": ["b"]})
    plan = requests[0].plan
    assert plan["program"] == PY and plan["argv"] == [PY, PROBE, "a"]
    assert plan["cwd"] == os.getcwd() and plan["environment"] == {}
    assert plan["stdin"]["bytes"] == 1 and len(plan["stdin"]["sha256"]) == 64
    assert plan["limits"]["timeout"] == 60 and plan["limits"]["no_new_privs"] is True
    assert plan["sandbox"] is None
    assert requests[0].plan_hash == plan_hash(plan) == first.plan_hash == again.plan_hash
    assert other.plan_hash != first.plan_hash
    assert requests[0].arguments == {"words": ["a"]} and requests[0].tool == "probe"


def test_an_approver_that_raises_propagates_and_nothing_runs(tmp_path: Path, call: Call) -> None:
    def approve(request: ApprovalRequest) -> bool:
        raise RuntimeError("approval service down")

    write(tmp_path / "t.json", probe_doc())
    toolbox = Toolbox.load(tmp_path, approve=approve)
    with pytest.raises(RuntimeError, match="approval service down"):
        call(toolbox, "probe", {})
    assert toolbox.executor.spawned == 0


def test_preview_then_call_exactly_that_plan(tmp_path: Path, call: Call) -> None:
    write(tmp_path / "t.json", credential_doc())
    toolbox = Toolbox.load(
        tmp_path, credentials=lambda p, h: {"scheme": "apiKey", "keyValue": CANARY}
    )
    shown = toolbox.preview_sync("secret-tool", {"words": ["a"]})
    assert shown.error is None and shown.plan is not None and shown.plan_hash
    assert shown.plan["environment"]["API_KEY"] == "********"
    assert trio.run(lambda: toolbox.preview("secret-tool", {"words": ["a"]})).plan_hash == (
        shown.plan_hash
    )
    assert toolbox.executor.spawned == 0
    changed = call(toolbox, "secret-tool", {"words": ["b"]}, expect_plan=shown.plan_hash)
    assert changed.is_error and "changed" in changed.content and toolbox.executor.spawned == 0
    ran = call(toolbox, "secret-tool", {"words": ["a"]}, expect_plan=shown.plan_hash)
    assert not ran.is_error and ran.plan_hash == shown.plan_hash
    refused = toolbox.preview_sync("secret-tool", {"words": "x"})
    assert refused.plan is None and refused.error and "`words`" in refused.error


def database_doc(tmp_path: Path, **fields: Any) -> dict[str, Any]:
    """A handle whose variable and stdin hold both the credential and the model's
    data (the database and the statement); it writes what it got to ``ran``."""
    code = (
        "import os, sys\n"
        f"open({str(tmp_path / 'ran')!r}, 'w').write(os.environ['DSN'] + ' ' + sys.stdin.read())\n"
    )
    document = script_doc(
        "db",
        tmp_path,
        code,
        security={"scheme": "basic", "name": "database"},
        parameters={
            "type": "object",
            "properties": {"db": {"type": "string"}, "sql": {"type": "string"}},
            "required": ["db", "sql"],
        },
        environment={"DSN": {"$use": [{"$credential": "password"}, "@{{db}}"], "$join": ""}},
        io={"stdin": {"$use": ["{{sql}}\n-- ", {"$credential": "password"}], "$join": ""}},
    )
    document.update(fields)
    return document


def test_model_data_beside_a_credential_is_in_the_plan_hash(tmp_path: Path, call: Call) -> None:
    """Issue 22 finding 14: a variable or stdin that holds a credential is shown
    with only the credential masked, so the model's data in it is hashed: a
    plan approved for SELECT on staging does not run DROP on production-main
    (the statements have one length: before, only stdin's size was hashed)."""
    write(tmp_path / "t.json", database_doc(tmp_path))
    toolbox = Toolbox.load(
        tmp_path / "t.json", credentials=lambda p, h: {"scheme": "basic", "password": CANARY}
    )
    approved_args = {"db": "staging", "sql": "SELECT * FROM accounts;"}
    swapped_args = {"db": "production-main", "sql": "DROP TABLE accounts; --"}
    approved = toolbox.preview_sync("db", approved_args)
    assert approved.plan is not None and approved.plan_hash is not None
    assert approved.plan["environment"]["DSN"] == "********@staging"
    other_db = toolbox.preview_sync("db", {**approved_args, "db": "production-main"})
    other_sql = toolbox.preview_sync("db", {**swapped_args, "db": "staging"})
    assert len({approved.plan_hash, other_db.plan_hash, other_sql.plan_hash}) == 3
    for shown in (approved, other_db, other_sql):
        assert CANARY not in json.dumps(shown.plan)
    # The stdin digest is of the text shown (the credential masked), never of a secret.
    masked_stdin = b"SELECT * FROM accounts;\n-- ********"
    assert approved.plan["stdin"] == {
        "bytes": len(f"SELECT * FROM accounts;\n-- {CANARY}"),
        "sha256": hashlib.sha256(masked_stdin).hexdigest(),
    }
    swapped = call(toolbox, "db", swapped_args, expect_plan=approved.plan_hash)
    assert swapped.is_error and "changed" in swapped.content
    assert toolbox.executor.spawned == 0 and not (tmp_path / "ran").exists()
    ran = call(toolbox, "db", approved_args, expect_plan=approved.plan_hash)
    assert not ran.is_error, ran.content
    ran_text = (tmp_path / "ran").read_text()
    assert ran_text == f"{CANARY}@staging SELECT * FROM accounts;\n-- {CANARY}"


def test_a_transformed_credential_is_never_shown_and_its_data_is_hashed(tmp_path: Path) -> None:
    """A credential encoded with the model's data (HTTP Basic: base64 of
    user:password) is shown as the same template given a masked credential:
    neither the secret nor its encoding is in the plan, and the user is hashed."""
    auth = {"$use": ["{{user}}:", {"$credential": "password"}], "$join": "", "$encode": "base64"}
    write(
        tmp_path / "t.json",
        probe_doc(
            "basic",
            security={"scheme": "basic", "name": "api"},
            parameters={"type": "object", "properties": {"user": {"type": "string"}}},
            environment={"AUTH": auth},
        ),
    )
    toolbox = Toolbox.load(
        tmp_path / "t.json", credentials=lambda p, h: {"scheme": "basic", "password": CANARY}
    )
    alice = toolbox.preview_sync("basic", {"user": "alice"})
    bob = toolbox.preview_sync("basic", {"user": "bob"})
    assert alice.plan is not None and bob.plan is not None
    encoded = base64.b64encode(f"alice:{CANARY}".encode()).decode()
    for shown in (json.dumps(alice.plan), json.dumps(bob.plan)):
        assert CANARY not in shown and encoded[8:] not in shown
    assert alice.plan["environment"]["AUTH"] == base64.b64encode(b"alice:********").decode()
    assert alice.plan_hash != bob.plan_hash
    handle = toolbox["basic"].handle
    assert handle is not None
    credential = {"scheme": "basic", "password": CANARY}
    invocation = handle.render({"user": "alice"}, credential=credential)
    assert invocation.env["AUTH"] == encoded  # what the child gets
    assert invocation.shown_environment()["AUTH"] == alice.plan["environment"]["AUTH"]


def canary_script(path: Path, canary: Path) -> Path:
    """An executable script that creates ``canary`` when run."""
    path.write_text(f"#!{PY}\nopen({str(canary)!r}, 'w').close()\n")
    path.chmod(0o755)
    return path


def program_doc(command: Path) -> dict[str, Any]:
    return {"name": "tool", "handler": "command", "command": str(command)}


def _retarget(link: Path, target: Path) -> None:
    link.unlink()
    link.symlink_to(target)


def _rewrite(script: Path, canary: Path) -> None:
    """The same file (inode), the same size, another program."""
    old_inode, old_size = script.stat().st_ino, script.stat().st_size
    with script.open("r+") as rewritten:
        rewritten.write(f"#!{PY}\nopen({str(canary)!r}, 'w').close()\n")
    assert (script.stat().st_ino, script.stat().st_size) == (old_inode, old_size)


@pytest.mark.parametrize("change", ["retarget", "rewrite"])
def test_a_program_changed_after_the_preview_is_refused(
    tmp_path: Path, call: Call, change: str
) -> None:
    """Issue 22 finding 15: the plan names the program file (its real path,
    inode, times and content), so a link retargeted, or a script rewritten in
    place, after the preview does not run under the approved hash."""
    good, evil = tmp_path / "good-ran", tmp_path / "evil-ran"
    script = canary_script(tmp_path / "good", good)
    canary_script(tmp_path / "evil", evil)
    link = tmp_path / "tool"
    link.symlink_to(script)
    write(tmp_path / "tools" / "t.json", program_doc(link))
    toolbox = Toolbox.load(tmp_path / "tools")
    shown = toolbox.preview_sync("tool", {})
    assert shown.plan is not None
    assert shown.plan["program_file"]["path"] == str(script)
    if change == "retarget":
        _retarget(link, tmp_path / "evil")
    else:
        _rewrite(script, evil)
    result = call(toolbox, "tool", {}, expect_plan=shown.plan_hash)
    assert result.is_error and "changed" in result.content, result.content
    assert toolbox.executor.spawned == 0 and not evil.exists() and not good.exists()


@pytest.mark.parametrize("change", ["retarget", "rewrite"])
def test_a_program_changed_while_the_approver_looks_is_refused_at_launch(
    tmp_path: Path, call: Call, change: str
) -> None:
    """The prepared call keeps the program file's identity from its description
    and checks it again right before the launch: a change between the approval
    and the launch is refused, and nothing is spawned."""
    good, evil = tmp_path / "good-ran", tmp_path / "evil-ran"
    script = canary_script(tmp_path / "good", good)
    canary_script(tmp_path / "evil", evil)
    link = tmp_path / "tool"
    link.symlink_to(script)
    events: list[AuditEvent] = []

    def approve(request: ApprovalRequest) -> bool:
        if change == "retarget":
            _retarget(link, tmp_path / "evil")
        else:
            _rewrite(script, evil)
        return True

    write(tmp_path / "tools" / "t.json", program_doc(link))
    toolbox = Toolbox.load(tmp_path / "tools", approve=approve, events=events.append)
    result = call(toolbox, "tool", {})
    assert result.is_error and "changed" in result.content, result.content
    assert toolbox.executor.spawned == 0 and not evil.exists() and not good.exists()
    assert [e.kind for e in events if e.call_id] == ["approved", "refused"]


def test_describing_a_program_swapped_for_a_fifo_refuses_at_once(tmp_path: Path) -> None:
    """Reading the program file to describe it must not hang on a FIFO put in
    its place after the call was prepared."""
    link = tmp_path / "tool"
    link.symlink_to(canary_script(tmp_path / "good", tmp_path / "good-ran"))
    handle = CommandHandle.load(program_doc(link))
    executor = Executor()
    prepared = handle.prepare({}, executor.policy)
    os.mkfifo(tmp_path / "fifo")
    _retarget(link, tmp_path / "fifo")
    started = time.monotonic()
    with pytest.raises(CommandError, match="not a regular file"):
        executor.describe(prepared)
    assert time.monotonic() - started < 5 and executor.spawned == 0


def test_a_plain_call_runs_a_program_that_changed(tmp_path: Path, call: Call) -> None:
    """Without an approver, a preview or an expected plan, nothing was described,
    so nothing is pinned (and no file is hashed on the call's path)."""
    ran = tmp_path / "ran"
    script = canary_script(tmp_path / "script", ran)
    write(tmp_path / "tools" / "t.json", program_doc(script))
    toolbox = Toolbox.load(tmp_path / "tools")
    assert not call(toolbox, "tool", {}).is_error and ran.exists()


# -- events -------------------------------------------------------------------------


def test_events_of_a_call(tmp_path: Path, call: Call) -> None:
    events: list[AuditEvent] = []
    write(tmp_path / "t.json", probe_doc())
    write(
        tmp_path / "slow.json",
        script_doc("slow", tmp_path, "import time; time.sleep(30)", timeout=0.5),
    )
    toolbox = Toolbox.load(tmp_path, approve=lambda r: True, events=events.append)
    assert sorted((e.kind, e.tool) for e in events) == [("loaded", "probe"), ("loaded", "slow")]
    events.clear()
    result = call(toolbox, "probe", {})
    kinds = [e.kind for e in events]
    assert kinds == ["approved", "spawned", "exited"]
    assert len({e.call_id for e in events}) == 1 and events[0].call_id == result.call_id
    spawned, exited = events[1], events[2]
    assert spawned.details["program"] == PY and spawned.details["pid"] > 0
    assert exited.details["exit_code"] == 0 and exited.details["stdout_bytes"] > 0
    assert exited.details["stdout_truncated"] is False and exited.details["duration_s"] > 0
    events.clear()
    call(toolbox, "slow", {})
    assert [e.kind for e in events] == ["approved", "spawned", "timed_out", "killed", "exited"]
    assert events[3].details["signal"] in ("SIGTERM", "SIGKILL")


def test_events_reach_the_standard_logger(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path / "t.json", probe_doc())
    toolbox = Toolbox.load(tmp_path)
    with caplog.at_level(logging.INFO, logger="command_handle"):
        toolbox.call_sync("probe", {"words": 5})
    records = [r for r in caplog.records if hasattr(r, "command_handle_event")]
    assert [r.command_handle_event["kind"] for r in records] == ["refused"]
    assert records[0].command_handle_event["tool"] == "probe"


def test_a_failing_event_sink_does_not_stop_the_call(tmp_path: Path) -> None:
    def sink(event: AuditEvent) -> None:
        raise ValueError("sink broken")

    write(tmp_path / "t.json", probe_doc())
    result = Toolbox.load(tmp_path, events=sink).call_sync("probe", {"words": ["ok"]})
    assert report(result)["argv"] == ["ok"]


# -- UTCP tools -----------------------------------------------------------------------


def test_utcp_tools_are_called_by_name(tmp_path: Path, call: Call) -> None:
    manual = {
        "utcp_version": "1.0.1",
        "manual_version": "1.0.0",
        "tools": [
            {
                "name": "greet",
                "description": "says hello",
                "inputs": {
                    "type": "object",
                    "properties": {"who": {"type": "string"}},
                    "required": ["who"],
                },
                "tool_call_template": {
                    "call_template_type": "cli",
                    "commands": [{"command": "/bin/echo hello UTCP_ARG_who_UTCP_END"}],
                },
            }
        ],
    }
    write(tmp_path / "greetings.json", manual)
    events: list[AuditEvent] = []
    toolbox = Toolbox.load(tmp_path, events=events.append, approve=lambda r: True)
    assert toolbox.names() == ["greetings_greet"]
    result = call(toolbox, "greetings_greet", {"who": "$(touch x); world"})
    assert not result.is_error and result.content == "hello $(touch x); world"
    assert [e.kind for e in events if e.call_id][:2] == ["approved", "spawned"]
    missing = call(toolbox, "greetings_greet", {})
    assert missing.is_error and "`who` is required" in missing.content


# -- the command line ---------------------------------------------------------------


def cli(*argv: str, cwd: Path | None = None) -> tuple[int, str, str]:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "command_handle", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr


def test_cli_tools_prints_definitions() -> None:
    code, out, _ = cli("tools", str(HANDLES), "--format", "openai-strict")
    assert code == 0
    definitions = json.loads(out)
    assert len(definitions) == len(Toolbox.load(HANDLES)) and definitions[0]["function"]["strict"]
    code, _, err = cli("tools", str(HANDLES), "--format", "nope")
    assert code == 2 and "--format" in err


def test_cli_call(tmp_path: Path) -> None:
    write(tmp_path / "t.json", probe_doc())
    code, out, _ = cli("call", str(tmp_path), "--tool", "probe", "--args", '{"words": ["x"]}')
    shown = json.loads(out)
    assert code == 0 and set(shown) == {"is_error", "content", "structured"}
    assert json.loads(shown["content"])["argv"] == ["x"]
    code, out, _ = cli("call", str(tmp_path), "--tool", "probe", "--args", '{"words": 1}')
    assert code == 2 and json.loads(out)["is_error"] is True  # refused: nothing ran
    code, _, err = cli("call", str(tmp_path), "--tool", "nope")
    assert code == 2 and "no tool named" in err
    code, _, err = cli("call", str(tmp_path / "missing"), "--tool", "probe")
    assert code == 2 and "no such file or folder" in err


def test_cli_validate_accepts_folders(tmp_path: Path) -> None:
    code, out, _ = cli("validate", str(HANDLES), str(UTCP))
    # its `path` parameter has no `paths` rule: a warning, not a failure
    assert code == 0 and "list-directory.json: ok with 1 warning(s) (list-directory)" in out
    bad = write(tmp_path / "nested" / "bad.json", probe_doc(timeout=-1))
    write(tmp_path / "good.json", probe_doc())
    code, out, err = cli("validate", str(tmp_path))
    assert code == 2 and str(bad) in err and "/timeout" in err and "good.json: ok" in out


def test_cli_render_then_run_with_the_expected_plan(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    handle = write(
        tmp_path / "touch.json",
        {
            "name": "touch",
            "handler": "command",
            "command": "touch",
            "parameters": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
            "arguments": ["--", {"$": "name"}],
            "directory": str(tmp_path),
        },
    )
    code, out, _ = cli("render", str(handle), "--args", '{"name": "ran"}')
    assert code == 0
    digest = json.loads(out)["plan_hash"]
    assert digest == plan_hash(json.loads(out)["plan"])
    code, _, err = cli("run", str(handle), "--args", '{"name": "other"}', "--expect-plan", digest)
    assert code == 2 and "the plan changed" in err and "nothing ran" in err
    assert not (tmp_path / "other").exists()
    code, _, _ = cli("run", str(handle), "--args", '{"name": "ran"}', "--expect-plan", digest)
    assert code == 0 and marker.exists()


def test_cli_run_refuses_a_program_retargeted_after_render(tmp_path: Path) -> None:
    good, evil = tmp_path / "good-ran", tmp_path / "evil-ran"
    canary_script(tmp_path / "good", good)
    canary_script(tmp_path / "evil", evil)
    link = tmp_path / "tool"
    link.symlink_to(tmp_path / "good")
    handle = write(tmp_path / "tool.json", program_doc(link))
    code, out, _ = cli("render", str(handle))
    assert code == 0
    rendered = json.loads(out)
    assert rendered["plan"]["program_file"]["path"] == str(tmp_path / "good")
    _retarget(link, tmp_path / "evil")
    code, _, err = cli("run", str(handle), "--expect-plan", rendered["plan_hash"])
    assert code == 2 and "the plan changed" in err and not evil.exists() and not good.exists()
