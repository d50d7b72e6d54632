"""The UTCP red-team findings 8 to 12, each replayed with real processes and a
canary: the attack's program would create a file, and the test checks that it
did not, and that the refusal came before anything ran where it can.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import (
    AfterRunError,
    ArgumentsError,
    CommandError,
    EnvironmentVariableError,
    Executor,
    OptionArgumentError,
    Policy,
    TranslationError,
    utcp,
)

from .processes import ROOT

FIXTURES = ROOT / "fixtures" / "utcp"


def template(*commands: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": "redteam",
        "call_template_type": "cli",
        "commands": [{"command": command} for command in commands],
        **fields,
    }


def canary_program(directory: Path, name: str, canary: Path) -> Path:
    """An executable ``name`` in ``directory`` that creates ``canary`` when run."""
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / name
    program.write_text(f"#!/bin/sh\ntouch {canary}\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def run(source: Any, args: dict[str, Any], policy: Policy | None = None) -> Any:
    executor = Executor(policy)
    try:
        return trio.run(lambda: utcp.run(source, args, executor=executor))
    finally:
        run.spawned = executor.spawned  # type: ignore[attr-defined]


# -- 8. the program chosen through variables ----------------------------------------------

THROUGH = [
    "T=UTCP_ARG_x_UTCP_END; $T",
    "$(echo UTCP_ARG_x_UTCP_END)",
    "`echo UTCP_ARG_x_UTCP_END`",
    "X=$CMD_0_OUTPUT; $X",
    "HOME=UTCP_ARG_x_UTCP_END; ~",
    "A=UTCP_ARG_x_UTCP_END; B=$A; $B",
    'export E=UTCP_ARG_x_UTCP_END; "$E"',
]


@pytest.mark.parametrize("command", THROUGH)
def test_an_argument_cannot_choose_the_program_through_a_variable(
    tmp_path: Path, command: str
) -> None:
    canary = tmp_path / "canary"
    program = canary_program(tmp_path, "evil", canary)
    source = template("echo UTCP_ARG_x_UTCP_END", command)
    with pytest.raises(TranslationError) as refused:
        run(source, {"x": str(program)})
    assert refused.value.construct == "computed program" and refused.value.step == 1
    assert run.spawned == 0 and not canary.exists()  # type: ignore[attr-defined]


def test_a_program_written_through_a_variable_of_the_author_still_runs() -> None:
    result = run(template("P=printf; $P '%s' UTCP_ARG_x_UTCP_END"), {"x": "ok"})
    assert result.output == "ok"


def test_an_empty_expansion_cannot_let_an_argument_become_the_program(tmp_path: Path) -> None:
    """Seen only at run time: ``$EMPTY`` is nothing, so the next word would run."""
    canary = tmp_path / "canary"
    program = canary_program(tmp_path, "evil", canary)
    with pytest.raises(CommandError, match="comes from a tool argument"):
        run(template("$EMPTY UTCP_ARG_x_UTCP_END"), {"x": str(program)})
    assert not canary.exists()


def test_a_directory_chosen_by_an_argument_cannot_pick_a_relative_program(
    tmp_path: Path,
) -> None:
    canary = tmp_path / "canary"
    canary_program(tmp_path / "attacker", "run.sh", canary)
    with pytest.raises(CommandError, match="relative program"):
        run(template("cd UTCP_ARG_dir_UTCP_END && ./run.sh"), {"dir": str(tmp_path / "attacker")})
    assert not canary.exists()


def test_path_set_from_data_cannot_pick_the_program(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    canary_program(tmp_path / "bin", "ls", canary)
    # From an argument: refused before anything runs (PATH takes no argument).
    with pytest.raises(EnvironmentVariableError, match="PATH"):
        run(template("PATH=UTCP_ARG_p_UTCP_END; ls"), {"p": str(tmp_path / "bin")})
    assert run.spawned == 0  # type: ignore[attr-defined]
    # From a step's output: refused at run time, before the lookup.
    with pytest.raises((CommandError, AfterRunError), match="PATH"):
        run(
            template("echo UTCP_ARG_p_UTCP_END", "PATH=$CMD_0_OUTPUT; ls"),
            {"p": str(tmp_path / "bin")},
        )
    assert not canary.exists()


def test_exporting_a_dangerous_name_is_refused_whatever_the_origin(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    with pytest.raises(EnvironmentVariableError, match="LD_PRELOAD"):
        run(template("export LD_PRELOAD=/nonexistent.so; touch " + str(canary)), {})
    assert not canary.exists()
    # Reached through a variable, the export builtin still checks the name.
    with pytest.raises((EnvironmentVariableError, AfterRunError)) as refused:
        run(
            template("T=export; $T LD_PRELOAD=UTCP_ARG_x_UTCP_END; touch " + str(canary)),
            {"x": "/nonexistent.so"},
        )
    assert "LD_PRELOAD" in str(refused.value)
    assert not canary.exists()


def test_an_argument_cannot_set_an_option_variable() -> None:
    with pytest.raises(EnvironmentVariableError, match="GIT_SSH_COMMAND"):
        run(template("GIT_SSH_COMMAND=UTCP_ARG_x_UTCP_END git --version"), {"x": "touch /tmp/x"})
    assert run.spawned == 0  # type: ignore[attr-defined]


# -- 10. 0.x argument names become options -------------------------------------------------


def legacy(command: str, inputs: dict[str, Any] | None = None) -> Any:
    tool: dict[str, Any] = {
        "name": "legacy",
        "description": "a 0.x provider",
        "tool_provider": {"name": "p", "provider_type": "cli", "command_name": command},
    }
    if inputs is not None:
        tool["inputs"] = inputs
    return utcp.load(tool)


def test_legacy_argument_names_cannot_smuggle_an_option(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    archive = tmp_path / "a.tar"
    (tmp_path / "f").write_text("x")
    os.system(f"tar -cf {archive} -C {tmp_path} f")
    tool = legacy(f"tar -tf {archive}")
    attack = {f"checkpoint-action=exec=touch {canary}": True, "checkpoint": True}
    with pytest.raises(ArgumentsError) as refused:
        run(tool, attack)
    assert "is not a name a flag can have" in str(refused.value)
    assert run.spawned == 0 and not canary.exists()  # type: ignore[attr-defined]


def test_legacy_arguments_must_be_declared_and_values_not_options() -> None:
    tool = legacy("grep -rh", {"type": "object", "properties": {"regexp": {"type": "string"}}})
    with pytest.raises(ArgumentsError, match="not a parameter of this tool"):
        run(tool, {"regexp": "x", "include": "*.py"})
    with pytest.raises(ArgumentsError, match="must not start with '-'"):
        run(tool, {"regexp": "--exec=x"})
    result = run(
        legacy("printf %s|"),
        {"value": "-x"},
        Policy(allow_utcp_options=True),
    )
    assert result.output == "--value|-x|"


# -- 11. oversized values before the first step --------------------------------------------


def test_an_oversized_value_is_refused_before_the_first_step(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    source = template(f"touch {canary}", "echo UTCP_ARG_x_UTCP_END")
    with pytest.raises(ArgumentsError, match="`x` is 200000 bytes"):
        run(source, {"x": "y" * 200_000})
    assert run.spawned == 0 and not canary.exists()  # type: ignore[attr-defined]


# -- 12. placeholders get the flag guard ----------------------------------------------------


def test_the_git_analysis_fixture_cannot_run_an_upload_pack(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    source = json.loads((FIXTURES / "protocol-git-analysis.json").read_text())
    with pytest.raises(OptionArgumentError) as refused:
        run(
            utcp.load(source),
            {"repo_url": f"--upload-pack=touch {canary}", "target_dir": str(tmp_path / "x")},
        )
    assert refused.value.parameter == "repo_url" and "`repo_url` must not start" in str(
        refused.value
    )
    assert run.spawned == 0 and not canary.exists()  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", ["-n", "+x", "@file"])
def test_a_word_begun_by_an_argument_may_not_look_like_an_option(value: str) -> None:
    with pytest.raises(OptionArgumentError):
        run(template("printf '%s\\n' UTCP_ARG_v_UTCP_END"), {"v": value})
    assert run(template("printf -- '%s\\n' UTCP_ARG_v_UTCP_END"), {"v": value}).output == value
    assert (
        run(template("printf '%s\\n' x=UTCP_ARG_v_UTCP_END"), {"v": value}).output == f"x={value}"
    )
    compatible = Policy(allow_utcp_options=True)
    assert run(template("printf '<%s>' UTCP_ARG_v_UTCP_END"), {"v": value}, compatible).output == (
        f"<{value}>"
    )


def test_a_value_reaching_a_word_through_a_variable_gets_the_guard_too() -> None:
    with pytest.raises(OptionArgumentError):
        run(template("V=UTCP_ARG_v_UTCP_END; printf '%s' $V"), {"v": "a -n"})
    assert run(template("printf '%s' -"), {}).output == "-"
