"""Tool arguments are values, never shell syntax: hostile payloads in every
placeholder position reach the probe as inert text, and nothing else runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import AfterRunError, Executor, Policy, utcp

ROOT = Path(__file__).resolve().parent.parent
PROBE = str(ROOT / "fixtures" / "programs" / "probe.py")
PY = sys.executable

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


def test_a_glob_match_that_begins_like_an_option_is_refused(tmp_path: Path) -> None:
    """Red-team finding 17: a `*` written in the template expanded to file names the
    model created (`--checkpoint-action=exec=...`), and tar ran the model's command.
    A name a glob matched is the file system's choice, so it is guarded as data."""
    work = tmp_path / "work"
    work.mkdir()
    canary = tmp_path / "PWNED"
    (work / "notes.txt").write_text("x")
    template = {
        "call_template_type": "cli",
        "working_dir": str(work),
        "commands": [
            {"command": "touch -- UTCP_ARG_a_UTCP_END UTCP_ARG_b_UTCP_END"},
            {"command": f"tar -cf {tmp_path / 'out.tar'} *"},
        ],
    }
    args = {"a": "--checkpoint=1", "b": f"--checkpoint-action=exec=touch {canary}"}
    with pytest.raises(AfterRunError) as caught:
        utcp.run_sync(template, args)
    assert "must not start with '-'" in str(caught.value)
    assert not canary.exists()
    # A glob after a written `--` names operands, and a match that begins with the
    # template's own text is the template's.
    safe = {
        "call_template_type": "cli",
        "working_dir": str(work),
        "commands": [{"command": f"{PY} {PROBE} -- * && {PY} {PROBE} n*"}],
    }
    result = utcp.run_sync(safe)
    assert result.steps[0].status == 0, result.output
    assert not canary.exists()
