"""Tool arguments are values, never shell syntax: hostile payloads in every
placeholder position reach the probe as inert text, and nothing else runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import Executor, Policy, utcp

ROOT = Path(__file__).resolve().parent.parent
PROBE = str(ROOT / "fixtures" / "programs" / "probe.py")

PAYLOADS = [
    "; touch PWNED",
    "&& touch PWNED",
    "| touch PWNED",
    "$(touch PWNED)",
    "`touch PWNED`",
    "' ; touch PWNED ; '",
    '" ; touch PWNED ; "',
    '\\" ; touch PWNED ; \\"',
    "\\",
    "line\n; touch PWNED\n",
    "$HOME ${HOME} $CMD_0_OUTPUT",
    "* ?.txt [a]",
    "> PWNED",
    "UTCP_ARG_other_UTCP_END",
    "' \" ` $ ( ) { } ; & | < > \\ ~ # !",
]

# (template text, the argv the probe must report)
POSITIONS: dict[str, Any] = {
    "bare": ("UTCP_ARG_v_UTCP_END", lambda v: [v]),
    "double quoted": ('"pre UTCP_ARG_v_UTCP_END post"', lambda v: [f"pre {v} post"]),
    "single quoted": ("'pre UTCP_ARG_v_UTCP_END post'", lambda v: [f"pre {v} post"]),
    "joined to text": ("--opt=UTCP_ARG_v_UTCP_END", lambda v: [f"--opt={v}"]),
    "two in one word": ("UTCP_ARG_v_UTCP_END/UTCP_ARG_v_UTCP_END", lambda v: [f"{v}/{v}"]),
    "inside substitution": (
        '"$(echo -E UTCP_ARG_v_UTCP_END)"',
        lambda v: [v.rstrip("\n")],
    ),
}


def _template(words: str, prefix: str = "") -> dict[str, Any]:
    return {
        "name": "injection",
        "call_template_type": "cli",
        "commands": [
            {"command": "echo first", "append_to_final_output": False},
            {"command": f"{prefix}{sys.executable} {PROBE} {words}"},
        ],
    }


def _call(template: dict[str, Any], value: str, cwd: Path) -> tuple[dict[str, Any], int]:
    template = {**template, "working_dir": str(cwd)}
    executor = Executor(Policy())
    result = trio.run(lambda: utcp.run(template, {"v": value}, executor=executor))
    report = json.loads(result.output)
    assert isinstance(report, dict)
    return report, executor.spawned


@pytest.mark.parametrize("position", POSITIONS, ids=list(POSITIONS))
@pytest.mark.parametrize("payload", PAYLOADS)
def test_payload_is_inert_text(position: str, payload: str, tmp_path: Path) -> None:
    words, expected = POSITIONS[position]
    report, spawned = _call(_template(words), payload, tmp_path)
    assert report["argv"] == expected(payload)
    assert spawned == 1  # the probe, and nothing the payload named
    assert not (tmp_path / "PWNED").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payload_in_an_environment_prefix(payload: str, tmp_path: Path) -> None:
    report, spawned = _call(_template("", prefix="V=UTCP_ARG_v_UTCP_END "), payload, tmp_path)
    assert report["env"]["V"] == payload
    assert spawned == 1
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payload_in_a_redirection_target_names_one_file(payload: str, tmp_path: Path) -> None:
    if "/" in payload or "\x00" in payload:
        pytest.skip("not a file name")
    template = {
        "name": "redirect",
        "call_template_type": "cli",
        "working_dir": str(tmp_path),
        "commands": [{"command": "echo written > 'out-UTCP_ARG_v_UTCP_END'"}],
    }
    executor = Executor(Policy())
    trio.run(lambda: utcp.run(template, {"v": payload}, executor=executor))
    assert executor.spawned == 0  # echo is a builtin; nothing ran
    assert [p.name for p in tmp_path.iterdir()] == [f"out-{payload}"]
