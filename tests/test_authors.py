"""What tool authors rely on: exit codes that mean what they mean, approval
with a reason, and refusals that name the parameter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from command_handle import CommandHandle, Denied, Toolbox
from command_handle.errors import HandleLoadError
from command_handle.toolbox import ApprovalRequest

from .processes import PROBE, PY, ROOT


def write(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document))
    return path


def exits(name: str = "exits", **fields: Any) -> dict[str, Any]:
    """A tool whose program exits with the code it is given, after printing it."""
    return {
        "name": name,
        "description": "exits with a code",
        "handle": "command",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^[0-9]+$"}},
            "required": ["code"],
        },
        "command": PY,
        "arguments": [
            "-I",
            "-c",
            "import sys; print('out'); sys.exit(int(sys.argv[1]))",
            "{{code}}",
        ],
        **fields,
    }


# -- exit codes ----------------------------------------------------------------


def test_success_exit_codes_make_an_answer_of_a_non_zero_exit(tmp_path: Path) -> None:
    toolbox = Toolbox.load(write(tmp_path / "t.json", exits(success_exit_codes=[0, 1])))
    one = toolbox.call_sync("exits", {"code": "1"})
    assert not one.is_error
    assert one.content == "out\n\nThe command ran and exited with code 1, a success for this tool."
    two = toolbox.call_sync("exits", {"code": "2"})
    assert two.is_error
    assert two.content == "out\n\nThe command ran and reported failure: exit code 2."


def test_by_default_only_zero_is_success(tmp_path: Path) -> None:
    toolbox = Toolbox.load(write(tmp_path / "t.json", exits()))
    assert not toolbox.call_sync("exits", {"code": "0"}).is_error
    assert toolbox.call_sync("exits", {"code": "1"}).is_error


def test_a_result_template_decides_is_error_and_the_key_is_not_shown(tmp_path: Path) -> None:
    result = {
        "is_error": {"$use": {"$": "exit_code"}, "$matches": {"not": {"enum": [0, 1]}}},
        "printed": {"$": "stdout"},
        "code": {"$": "exit_code"},
    }
    toolbox = Toolbox.load(write(tmp_path / "t.json", exits(result=result)))
    one = toolbox.call_sync("exits", {"code": "1"})
    assert not one.is_error
    assert one.structured == {"printed": "out\n", "code": 1}
    assert "is_error" not in one.content
    assert toolbox.call_sync("exits", {"code": "3"}).is_error


def test_a_result_template_reads_success(tmp_path: Path) -> None:
    document = exits(success_exit_codes=[0, 4], result={"ok": {"$": "success"}})
    toolbox = Toolbox.load(write(tmp_path / "t.json", document))
    four = toolbox.call_sync("exits", {"code": "4"})
    assert (four.is_error, four.structured) == (False, {"ok": True})
    five = toolbox.call_sync("exits", {"code": "5"})
    assert (five.is_error, five.structured) == (True, {"ok": False})


def test_could_not_run_reads_differently_from_ran_and_failed(tmp_path: Path) -> None:
    document = exits(name="gone", command=str(tmp_path / "missing-program"))
    toolbox = Toolbox.load(write(tmp_path / "t.json", document))
    refused = toolbox.call_sync("gone", {"code": "1"})
    assert refused.is_error and refused.result is None
    assert "Nothing ran" in refused.content and "ran and reported" not in refused.content


@pytest.mark.parametrize("codes", [[], [256], [-1]])
def test_success_exit_codes_are_checked_at_load(codes: list[int]) -> None:
    with pytest.raises(HandleLoadError) as caught:
        CommandHandle.from_dict(exits(success_exit_codes=codes))
    assert "success_exit_codes" in str(caught.value)


def test_run_exits_by_success_exit_codes(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", exits(success_exit_codes=[0, 1]))
    for code, expected in (("1", 0), ("2", 1)):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "command_handle",
                "run",
                str(path),
                "--args",
                f'{{"code":"{code}"}}',
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert done.returncode == expected, done.stderr


def test_a_utcp_tool_that_fails_says_it_ran(tmp_path: Path) -> None:
    manual = {
        "utcp_version": "1.0.1",
        "manual_version": "1.0.0",
        "tools": [
            {
                "name": "fails",
                "description": "fails",
                "inputs": {"type": "object", "properties": {}},
                "tool_call_template": {
                    "call_template_type": "cli",
                    "commands": [{"command": "false"}],
                },
            }
        ],
    }
    toolbox = Toolbox.load(write(tmp_path / "m.json", manual))
    result = toolbox.call_sync("m_fails", {})
    assert result.is_error
    assert "ran and reported failure" in result.content


# -- approval -------------------------------------------------------------------


def api_call(tmp_path: Path) -> Path:
    """A tool that sends a body with a token on stdin, and has a token variable."""
    document = {
        "name": "api",
        "description": "calls an API",
        "handle": "command",
        "parameters": {
            "type": "object",
            "properties": {"endpoint": {"type": "string"}},
            "required": ["endpoint"],
        },
        "command": PY,
        "arguments": ["-I", PROBE],
        "security": {"type": "http", "scheme": "bearer"},
        "environment": {
            "TOKEN": {"$credential": "token"},
            "ENDPOINT": "{{endpoint}}",
        },
        "io": {
            "stdin": {
                "$join": "",
                "$use": [
                    "POST {{endpoint}}\nAuthorization: Bearer ",
                    {"$credential": "token"},
                    "\n",
                ],
            }
        },
    }
    return write(tmp_path / "api.json", document)


CANARY = "canary-secret-7f3a9c1e"


def test_the_approver_sees_stdin_and_environment_with_only_the_credential_masked(
    tmp_path: Path,
) -> None:
    seen: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        seen.append(request)
        return True

    toolbox = Toolbox.load(
        api_call(tmp_path),
        credentials=lambda principal, handle: {"scheme": "bearer", "token": CANARY},
        approve=approve,
    )
    result = toolbox.call_sync("api", {"endpoint": "/v1/users/delete"})
    assert not result.is_error, result.content
    (request,) = seen
    assert request.stdin is not None
    text = request.stdin.decode()
    assert "POST /v1/users/delete" in text and CANARY not in text and "********" in text
    assert request.environment["ENDPOINT"] == "/v1/users/delete"
    assert CANARY not in json.dumps(dict(request.environment))
    assert CANARY not in repr(request)


def test_a_denial_gives_the_model_its_reason(tmp_path: Path) -> None:
    events: list[Any] = []
    toolbox = Toolbox.load(
        api_call(tmp_path),
        credentials=lambda principal, handle: {"scheme": "bearer", "token": CANARY},
        approve=lambda request: Denied(f"use the staging endpoint, not {CANARY}"),
        events=events.append,
    )
    result = toolbox.call_sync("api", {"endpoint": "/v1/users/delete"})
    assert result.is_error and result.result is None
    assert result.content.startswith(
        "The application declined to run this call to `api`: use the staging endpoint"
    )
    assert result.content.endswith("Nothing ran.")
    assert CANARY not in result.content
    denied = [event for event in events if event.kind == "denied"]
    assert denied and CANARY not in json.dumps(denied[0].to_json())


def test_a_plain_no_still_reads_as_before(tmp_path: Path) -> None:
    toolbox = Toolbox.load(write(tmp_path / "t.json", exits()), approve=lambda request: False)
    result = toolbox.call_sync("exits", {"code": "0"})
    assert result.content == "The application declined to run this call to `exits`; nothing ran."


@pytest.mark.parametrize("answer", ["no", "deny: use staging", 1, None, [False]])
def test_only_true_approves(tmp_path: Path, answer: object) -> None:
    """A hook that answers with text, or falls off its end, has not said yes:
    the call does not run (a truthy "no" used to run it)."""
    marker = tmp_path / "ran"
    handle = {
        "name": "touch-marker",
        "description": "creates a file",
        "handle": "command",
        "command": "touch",
        "arguments": [str(marker)],
    }
    toolbox = Toolbox.load(
        write(tmp_path / "t.json", handle),
        approve=lambda request: answer,  # type: ignore[arg-type,return-value]
    )
    result = toolbox.call_sync("touch-marker", {})
    assert result.is_error
    assert result.content == (
        "The application declined to run this call to `touch-marker`; nothing ran."
    )
    assert not marker.exists()


# -- refusals name the parameter ----------------------------------------------------


def probe_tool(tmp_path: Path) -> Toolbox:
    document = {
        "name": "echo",
        "description": "prints its words",
        "handle": "command",
        "parameters": {
            "type": "object",
            "properties": {"first": {"type": "string"}, "text": {"type": "string"}},
        },
        "command": PY,
        "arguments": ["-I", PROBE, "{{first}}", "{{text}}"],
        "environment": {"PROBE_VALUE": {"$": "first"}},
    }
    return Toolbox.load(write(tmp_path / "t.json", document))


def test_a_nul_is_refused_naming_its_parameter(tmp_path: Path) -> None:
    result = probe_tool(tmp_path).call_sync("echo", {"first": "a", "text": "x\x00y"})
    assert result.is_error and result.result is None
    assert "`text` holds a NUL character" in result.content


def test_a_nul_in_an_environment_value_names_its_parameter(tmp_path: Path) -> None:
    result = probe_tool(tmp_path).call_sync("echo", {"first": "a\x00b", "text": "x"})
    assert result.is_error and result.result is None
    assert "`first` holds a NUL character" in result.content


def test_an_argument_too_large_is_refused_naming_its_parameter(tmp_path: Path) -> None:
    result = probe_tool(tmp_path).call_sync("echo", {"first": "a", "text": "x" * 3_000_000})
    assert result.is_error and result.result is None
    assert "`text` is too large to pass to a program (3000000 bytes;" in result.content
    assert "argv[" not in result.content


def array_tool(tmp_path: Path) -> Toolbox:
    """Items of an array through the args encoding, and a value in the environment."""
    document = {
        "name": "listing",
        "description": "prints its items",
        "handle": "command",
        "parameters": {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "items": {"type": "array", "items": {"type": "string"}},
            },
        },
        "command": "/bin/echo",
        "arguments": {"$encode": "args", "--": {"$": "items"}},
        "environment": {"LABEL": {"$": "label"}},
    }
    return Toolbox.load(write(tmp_path / "listing.json", document))


@pytest.mark.parametrize("character", ["\x00", "\x1b"])
def test_a_character_the_args_encoding_refuses_names_the_item(
    tmp_path: Path, character: str
) -> None:
    result = array_tool(tmp_path).call_sync("listing", {"items": ["ok", f"a{character}b"]})
    assert result.is_error and result.result is None
    assert result.content.startswith("The call to `listing` was refused: `items[1]` holds")
    assert f"(U+{ord(character):04X})" in result.content


def test_an_environment_value_too_large_names_its_parameter(tmp_path: Path) -> None:
    """Linux refuses one NAME=value over 128 KiB as it refuses such an argument:
    the check before launch names the parameter instead of 'could not run'."""
    result = array_tool(tmp_path).call_sync("listing", {"label": "x" * 200_000})
    assert result.is_error and result.result is None
    assert "`label` is too large to pass to a program (200000 bytes;" in result.content
    assert "could not run" not in result.content


def test_arguments_too_large_together_say_so_and_name_the_largest(tmp_path: Path) -> None:
    import os

    limit = os.sysconf("SC_ARG_MAX")
    if limit > 64 << 20:
        pytest.skip(f"ARG_MAX is {limit} here (an unlimited stack)")
    count = limit // 100_000 + 1
    items = ["y" * 100_000] * count + ["z" * 120_000]
    result = array_tool(tmp_path).call_sync("listing", {"items": items})
    assert result.is_error and result.result is None
    assert "the arguments are too large to pass to a program (" in result.content
    assert "bytes in all; the system allows" in result.content
    assert f"the largest is `items[{count}]` (120000 bytes)" in result.content


# -- mistakes found at load, and validate's warnings --------------------------------


def handle_doc(**fields: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "name": "greet",
        "description": "greets",
        "handle": "command",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}},
        "command": "/bin/echo",
        "arguments": ["hello", "{{name}}"],
    }
    document.update(fields)
    return document


@pytest.mark.parametrize(
    ("arguments", "pointer"),
    [
        (["hello", "{{nmae}}"], "/arguments/1"),
        ({"$encode": "args", "-n": {"$": "nmae | sort"}}, "/arguments/-n/$"),
        ({"$uri": "https://example.com/{nmae}"}, "/arguments/$uri"),
        (["{{$.nmae}}"], "/arguments/0"),
    ],
)
def test_a_template_reading_an_undeclared_name_is_a_load_error(
    arguments: object, pointer: str
) -> None:
    with pytest.raises(HandleLoadError) as caught:
        CommandHandle.from_dict(handle_doc(arguments=arguments))
    assert caught.value.pointer == pointer
    assert "`nmae`" in str(caught.value) and "did you mean `name`?" in str(caught.value)


def test_names_a_schema_provides_are_not_load_errors() -> None:
    each = {"$each": "$.name", "$as": "item", "$value": "{{item}}"}
    CommandHandle.from_dict(handle_doc(arguments=each))
    patterned = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "patternProperties": {"^x_": {"type": "string"}},
    }
    CommandHandle.from_dict(handle_doc(parameters=patterned, arguments=["{{x_y}}"]))
    open_schema = {"type": "object", "additionalProperties": {"type": "string"}}
    CommandHandle.from_dict(handle_doc(parameters=open_schema, arguments=["{{anything}}"]))
    CommandHandle.from_dict(handle_doc(parameters={"type": "object"}, arguments=["{{any}}"]))
    via_ref = {
        "type": "object",
        "$defs": {"base": {"properties": {"extra": {"type": "string"}}}},
        "allOf": [{"$ref": "#/$defs/base"}],
        "properties": {"name": {"type": "string"}},
    }
    CommandHandle.from_dict(handle_doc(parameters=via_ref, arguments=["{{extra}}"]))


def test_a_result_template_reading_no_result_field_is_a_load_error() -> None:
    with pytest.raises(HandleLoadError) as caught:
        CommandHandle.from_dict(handle_doc(result={"out": {"$": "stdot"}}))
    assert caught.value.pointer == "/result/out/$"
    assert "did you mean `stdout`?" in str(caught.value)


def validate(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "command_handle", "validate", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_validate_warns_with_pointer_and_fix_and_strict_fails(tmp_path: Path) -> None:
    write(tmp_path / "missing.json", handle_doc(name="missing", command="rg-not-installed-here"))
    shell = handle_doc(
        name="shell",
        command="/bin/sh",
        parameters={"type": "object", "properties": {"msg": {"type": "string"}}},
        arguments=["-c", "echo {{msg}}"],
    )
    write(tmp_path / "shell.json", shell)
    write(tmp_path / "echo.json", handle_doc(name="dashes", arguments=["--", "{{name}}"]))
    reader = handle_doc(
        name="reader",
        command="/bin/cat",
        parameters={"type": "object", "properties": {"file": {"type": "string"}}},
        arguments={"$encode": "args", "--": [{"$": "file"}]},
    )
    write(tmp_path / "reader.json", reader)
    done = validate(str(tmp_path))
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert (
        "missing: /command: the program `rg-not-installed-here` is not on this machine's PATH"
        in err
    )
    assert "shell: /arguments/1: model data reaches the code string of `sh`" in err
    assert "dashes: /arguments/0: `echo` does not take `--`" in err
    assert "reader: /parameters/properties/file: the parameter `file` looks like a path" in err
    assert '(fix: add "paths": {"file": {"within": "workspace"}})' in err
    strict = validate("--strict", str(tmp_path))
    assert strict.returncode == 2
    assert "failed: 1 warning(s) with --strict" in strict.stdout


def test_the_sh_c_warning_is_about_a_real_injection(tmp_path: Path) -> None:
    """What the warning is about: the value runs as code."""
    shell = handle_doc(
        name="shell",
        command="/bin/sh",
        parameters={"type": "object", "properties": {"msg": {"type": "string"}}},
        arguments=["-c", "echo {{msg}}"],
    )
    toolbox = Toolbox.load(write(tmp_path / "shell.json", shell))
    assert "uid=" in toolbox.call_sync("shell", {"msg": "hi; id"}).content


@pytest.mark.parametrize(
    ("command", "arguments", "pointer", "interpreter"),
    [
        ("env", ["sh", "-c", "echo {{msg}}"], "/arguments/2", "sh"),
        ("/usr/bin/env", ["LANG=C", "bash", "-lc", "{{msg}}"], "/arguments/3", "bash"),
        ("timeout", ["5", "python3", "-c", {"$": "msg"}], "/arguments/3", "python"),
        ("nice", ["-n", "5", "node", "-e", "{{msg}}"], "/arguments/4", "node"),
    ],
)
def test_a_wrapper_does_not_hide_a_code_string(
    command: str, arguments: list[object], pointer: str, interpreter: str
) -> None:
    """``env sh -c "echo {{msg}}"`` is the same injection as ``sh -c``."""
    from command_handle.handle import lint

    handle = CommandHandle.from_dict(
        handle_doc(
            command=command,
            parameters={"type": "object", "properties": {"msg": {"type": "string"}}},
            arguments=arguments,
        )
    )
    (warning,) = [w for w in lint(handle) if "code string" in w.message]
    assert warning.pointer == pointer
    assert f"the code string of `{interpreter}`" in warning.message


def test_a_wrapper_with_written_code_and_data_as_arguments_has_no_warning() -> None:
    from command_handle.handle import lint

    handle = CommandHandle.from_dict(
        handle_doc(
            command="env",
            parameters={"type": "object", "properties": {"msg": {"type": "string"}}},
            arguments=["sh", "-c", 'echo "$1"', "sh", "{{msg}}"],
        )
    )
    assert lint(handle) == []


def test_a_clean_handle_has_no_warning() -> None:
    done = validate("--strict", "fixtures/handles/word-count.json")
    assert done.returncode == 0 and done.stderr == ""


def test_validate_warns_about_options_written_after_the_end_of_options(tmp_path: Path) -> None:
    document = handle_doc(
        name="late",
        command="/bin/ls",
        arguments={"$encode": "args", "--": {"$": "name"}, "--all": True},
    )
    write(tmp_path / "late.json", document)
    done = validate(str(tmp_path))
    assert "late: /arguments/--all: `--all` is written after `--`" in done.stderr
    # and it is true: ls reads it as a file name
    toolbox = Toolbox.load(tmp_path)
    assert "--all" in toolbox.call_sync("late", {"name": "x"}).content


def test_a_utcp_refusal_names_its_parameter_once(tmp_path: Path) -> None:
    toolbox = Toolbox.load(ROOT / "fixtures" / "utcp" / "protocol-echo-chain.json")
    (name,) = toolbox.names()
    nul = toolbox.call_sync(name, {"message": "a\x00b"})
    assert nul.is_error and "`message` the value contains a NUL character" in nul.content
    big = toolbox.call_sync(name, {"message": "x" * 3_000_000})
    assert big.is_error and "- `message` is 3000000 bytes;" in big.content
