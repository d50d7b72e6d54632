"""UTCP templates as people published them: the 1.0-era format, fields beyond
the documented ones, per-tool discovery, and the smaller gaps. Constructs whose
behaviour is bash's are also in the oracle (tests/test_utcp_oracle.py)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import ArgumentsError, Policy, TranslationError, utcp

PY_LINES = "import sys; print('\\n'.join(sys.argv[1:]))"


def run(source: Any, args: dict[str, Any] | None = None, policy: Policy | None = None) -> Any:
    return trio.run(lambda: utcp.run(source, args or {}, policy=policy))


def call(source: Any, args: dict[str, Any] | None = None, policy: Policy | None = None) -> Any:
    return trio.run(lambda: utcp.call(source, args or {}, policy=policy))


def template(*steps: dict[str, Any] | str, **fields: Any) -> dict[str, Any]:
    commands = [{"command": s} if isinstance(s, str) else s for s in steps]
    return {"name": "wild", "call_template_type": "cli", "commands": commands, **fields}


# -- 1. the 1.0-era format --------------------------------------------------------------


def test_a_1_0_call_template_with_command_name_runs_as_0_x_did() -> None:
    # The utcp-examples CLI example and the 1.0 READMEs write it this way.
    source = {"name": "echo_tool", "call_template_type": "cli", "command_name": "echo hello"}
    loaded = utcp.load(source)
    assert isinstance(loaded, utcp.LegacyCliProvider)
    assert call(source, {"name": "ana", "loud": True}) == "hello --name ana --loud"


def test_a_1_0_tool_in_a_manual() -> None:
    manual = {
        "utcp_version": "1.0.0",
        "manual_version": "1.0.0",
        "tools": [
            {
                "name": "greet",
                "description": "greets",
                "inputs": {"type": "object", "properties": {"who": {"type": "string"}}},
                "tool_call_template": {"call_template_type": "cli", "command_name": "echo hi"},
            }
        ],
    }
    tool = utcp.load(manual).tool("greet")  # type: ignore[union-attr]
    assert call(tool, {"who": "bo"}) == "hi --who bo"


# -- 2. parameter operators (semantics in the oracle) ------------------------------------


def test_the_error_operator_ends_the_step_with_its_message() -> None:
    result = run(template("echo ${MISSING:?is required}; echo not-here", "echo next"))
    assert [step.status for step in result.steps] == [1, 0]
    assert result.steps[0].output == b"command-handle: MISSING: is required\n"


def test_an_operator_word_may_hold_a_placeholder_and_it_is_required() -> None:
    source = template('printf "<%s>" "${NAME:-UTCP_ARG_fallback_UTCP_END}"')
    assert utcp.translate(source).arguments == ("fallback",)
    assert run(source, {"fallback": "a  b"}).output == "<a  b>"
    with pytest.raises(ArgumentsError, match="missing argument 'fallback'"):
        run(source, {})


@pytest.mark.parametrize("expansion", ["${X#pre}", "${X%suf}", "${X/a/b}", "${X:1:2}", "${!X}"])
def test_other_parameter_expansions_stay_refused(expansion: str) -> None:
    with pytest.raises(TranslationError) as refused:
        utcp.translate(template(f"echo {expansion}"))
    assert refused.value.construct == "parameter expansion"


# -- 3. exit -----------------------------------------------------------------------------


def test_exit_ends_the_step_not_the_plan() -> None:
    result = run(template("echo a; exit 7; echo b", "echo status $?", "exit"))
    assert [(step.status, step.output) for step in result.steps] == [
        (7, b"a\n"),
        (0, b"status 7\n"),
        (0, b""),
    ]


# -- 4. [ ] and [[ ]] --------------------------------------------------------------------


def test_single_brackets_run_the_test_program_and_double_stay_refused() -> None:
    assert call(template("[ -d /tmp ] && echo dir")) == "dir"
    with pytest.raises(TranslationError, match=r"\[\[ \]\] test"):
        utcp.translate(template("[[ -d /tmp ]] && echo dir"))


# -- 5. fields beyond the documented ones ------------------------------------------------


def test_a_per_step_working_dir_is_a_cd_at_the_start_of_the_step(tmp_path: Path) -> None:
    source = template({"command": "pwd", "working_dir": str(tmp_path)}, "pwd")
    result = run(source)
    assert [step.output for step in result.steps] == [f"{tmp_path}\n".encode()] * 2
    missing = run(template({"command": "echo no", "working_dir": str(tmp_path / "x")}))
    assert missing.steps[0].status == 1 and b"No such file" in missing.steps[0].output


def test_a_template_timeout_is_milliseconds_capped_by_the_policy() -> None:
    assert not run(template("sleep 0.3"), policy=Policy(timeout=10)).timed_out
    quick = run(template("sleep 5", timeout=200), policy=Policy(timeout=10))
    assert quick.timed_out and quick.duration_s < 4
    plan = utcp.translate(template("true", timeout=90_000))
    assert plan.timeout == 90.0


def test_0_x_env_output_format_and_refused_fields() -> None:
    provider = {
        "name": "p",
        "provider_type": "cli",
        "command_name": "printenv GREETING",
        "env": {"GREETING": '{"a": 1}'},
        "output_format": "text",
    }
    assert call(provider) == '{"a": 1}'  # text: not parsed
    assert call({**provider, "output_format": "json"}) == {"a": 1}
    for field, value in (("param_style", "flags"), ("execute_command", "ls")):
        with pytest.raises(utcp.UtcpLoadError) as refused:
            utcp.load({**provider, field: value})
        assert refused.value.pointer == f"/{field}"
    described = {**provider, "description": "says hello", "tags": ["demo"]}
    assert call(described) == '{"a": 1}'  # descriptive fields are accepted


# -- 6. discovery per tool ---------------------------------------------------------------


def test_one_invalid_discovered_tool_is_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    output = json.dumps(
        {
            "utcp_version": "1.0.1",
            "manual_version": "1.0.0",
            "tools": [
                {
                    "name": "good",
                    "description": "fine",
                    "tool_call_template": {
                        "call_template_type": "cli",
                        "commands": [{"command": "echo ok"}],
                    },
                },
                {"name": "broken", "tool_call_template": {"call_template_type": "cli"}},
                {
                    "name": "legacy-commands",
                    "description": "python-utcp's tests emit a tool_provider with commands",
                    "tool_provider": {
                        "provider_type": "cli",
                        "commands": [{"command": "echo converted"}],
                    },
                },
            ],
        }
    )
    with caplog.at_level(logging.WARNING, logger="command_handle"):
        manual = utcp.manual_from_output(output)
    assert manual is not None
    assert [tool.name for tool in manual.tools] == ["good", "legacy-commands"]
    assert [s.name for s in manual.skipped] == ["broken"]
    assert "commands" in manual.skipped[0].reason
    assert "broken" in caplog.text
    assert call(manual.tool("legacy-commands")) == "converted"


# -- 7. smaller gaps -----------------------------------------------------------------------


def test_an_empty_step_yields_an_empty_output() -> None:
    result = run(template({"command": "", "append_to_final_output": True}, "echo x"))
    assert [(step.status, step.output) for step in result.steps] == [(0, b""), (0, b"x\n")]


@pytest.mark.parametrize(
    ("command", "construct"),
    [
        ("time ls", "time"),
        ("printf -v X %s a", "printf -v"),
        ("IFS=:; echo a", "IFS"),
        ("export IFS=:", "IFS"),
        ("echo $'a'", "ANSI-C quoting $'...'"),
        ("echo $((1 + 2))", "arithmetic expansion $(( ))"),
        ("echo {a,b}", "brace expansion"),
        ("cat <<< text", "a here-string"),
    ],
)
def test_refused_constructs_say_what_and_where(command: str, construct: str) -> None:
    with pytest.raises(TranslationError) as refused:
        utcp.translate(template("echo ok", command))
    assert refused.value.construct == construct and refused.value.step == 1


def test_the_cli_passes_host_variables_and_options_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from command_handle.cli import main

    monkeypatch.setenv("LANG", "C.UTF-8")
    source = tmp_path / "t.json"
    source.write_text(json.dumps(template("printenv LANG; printf '<%s>' UTCP_ARG_v_UTCP_END")))
    assert main(["utcp", "run", str(source), "--args", '{"v": "x"}']) == 0
    assert capsys.readouterr().out == "<x>\n"  # LANG is not passed by default
    assert main(["utcp", "run", str(source), "--args", '{"v": "x"}', "--inherit-env", "LANG"]) == 0
    assert capsys.readouterr().out == "C.UTF-8\n<x>\n"
    assert main(["utcp", "run", str(source), "--args", '{"v": "-n"}']) == 2
    assert "must not start with '-'" in capsys.readouterr().err
    assert main(["utcp", "run", str(source), "--args", '{"v": "-n"}', "--allow-options"]) == 0
    assert capsys.readouterr().out == "<-n>\n"
