"""The safe general command tool (fixtures/general/run-program.json, the recipe
in docs/agents.md): the model picks a program from the application's list and
gives its arguments as arrays; the workspace sandbox, the flag guard and
approval for programs that change files hold."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from command_handle import Denied, Policy, Toolbox
from command_handle.toolbox import ApprovalRequest

from .processes import ROOT

READ_ONLY = {"ls", "cat", "head", "tail", "wc", "grep", "sort", "uniq", "stat", "du"}
CHANGES_FILES = {"mkdir", "touch", "cp"}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\nalpha beta\n")
    return root


def toolbox(workspace: Path, asked: list[ApprovalRequest]) -> Toolbox:
    def approve(request: ApprovalRequest) -> bool | Denied:
        asked.append(request)
        if request.arguments["program"] in READ_ONLY:
            return True
        return Denied("changing files needs the user's approval; ask them first")

    policy = Policy(
        sandbox="workspace-write",
        workspace=str(workspace),
        allow_computed_command=True,  # the model picks the program, from the enum
        allowed_commands=frozenset(READ_ONLY | CHANGES_FILES),
        match_command_names=True,
        network=False,
    )
    return Toolbox.load(ROOT / "fixtures" / "general", policy=policy, approve=approve)


def test_a_read_only_program_runs_in_the_workspace(workspace: Path) -> None:
    asked: list[ApprovalRequest] = []
    result = toolbox(workspace, asked).call_sync(
        "run-program", {"program": "grep", "flags": ["--count"], "operands": ["alpha", "notes.txt"]}
    )
    assert (result.is_error, result.content) == (False, "2")
    assert asked[0].plan["argv"][-4:] == ["--count", "--", "alpha", "notes.txt"]


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"program": "sh", "operands": ["-c", "id"]}, "`program` must be one of"),
        ({"program": "/bin/sh"}, "`program` must be one of"),
        ({"program": "grep", "flags": ["--include=x"]}, "`flags[0]` must be one of"),
        ({"program": "cat", "operands": ["/etc/passwd"]}, "`operands` must be a path inside"),
        (
            {"program": "cat", "operands": ["../../etc/hostname"]},
            "`operands` must be a path inside",
        ),
        ({"program": "ls", "shell": "id"}, "`shell` is not a parameter"),
        # stat -c and touch -r take a value: the `--` after them would be that
        # value, and the operands options (stat -c -- --version ran --version).
        (
            {"program": "stat", "flags": ["-c"], "operands": ["--version"]},
            "`flags[0]` must be one of",
        ),
        ({"program": "touch", "flags": ["-r"], "operands": ["-d", "x"]}, "`flags[0]` must be"),
        # diff -r follows the links inside the directories it walks, where the
        # paths rule, which checks the names the model gives, does not look.
        ({"program": "diff", "flags": ["--recursive"]}, "`program` must be one of"),
    ],
)
def test_what_the_model_cannot_do(workspace: Path, arguments: dict[str, object], says: str) -> None:
    box = toolbox(workspace, [])
    result = box.call_sync("run-program", arguments)
    assert result.is_error and result.result is None
    assert says in result.content and "Nothing ran" in result.content.replace(
        "nothing ran", "Nothing ran"
    )


def test_an_operand_is_never_an_option(workspace: Path) -> None:
    result = toolbox(workspace, []).call_sync("run-program", {"program": "cat", "operands": ["-n"]})
    assert result.is_error  # cat looked for a file named -n
    assert "-n: No such file or directory" in result.content


def test_a_program_that_changes_files_needs_approval(workspace: Path) -> None:
    asked: list[ApprovalRequest] = []
    result = toolbox(workspace, asked).call_sync(
        "run-program", {"program": "mkdir", "operands": ["made"]}
    )
    assert result.is_error and result.result is None
    assert "changing files needs the user's approval" in result.content
    assert not (workspace / "made").exists()
    assert asked[0].plan["argv"][-2:] == ["--", "made"]


def test_the_sandbox_keeps_writes_in_the_workspace(workspace: Path, tmp_path: Path) -> None:
    """Even an approved cp cannot write outside: a link that points out is refused
    by the paths rule, and the sandbox stops the write at the kernel."""
    (workspace / "out").symlink_to(tmp_path)
    policy = Policy(
        sandbox="workspace-write",
        workspace=str(workspace),
        allow_computed_command=True,
        allowed_commands=frozenset(READ_ONLY | CHANGES_FILES),
        match_command_names=True,
    )
    box = Toolbox.load(ROOT / "fixtures" / "general", policy=policy)
    refused = box.call_sync("run-program", {"program": "cp", "operands": ["notes.txt", "out/x"]})
    assert refused.is_error and "inside the workspace" in refused.content
    assert not (tmp_path / "x").exists()
    copied = box.call_sync("run-program", {"program": "cp", "operands": ["notes.txt", "copy.txt"]})
    assert not copied.is_error, copied.content
    assert (workspace / "copy.txt").read_text() == (workspace / "notes.txt").read_text()


def _schema() -> dict[str, object]:
    import json

    loaded = json.loads((ROOT / "fixtures" / "general" / "run-program.json").read_text())
    return dict(loaded["parameters"]["properties"])


def test_no_flag_takes_the_double_dash_as_its_value(tmp_path: Path) -> None:
    """For every program and every flag of the fixture's lists, on this machine's
    programs: `program flag -- --version` reads --version as an operand, never as
    an option, even with a file named `--` there for a value-taking flag to use."""
    import subprocess

    properties = _schema()
    programs = properties["program"]["enum"]  # type: ignore[index]
    flags = properties["flags"]["items"]["enum"]  # type: ignore[index]
    (tmp_path / "--").write_text("")
    swallowed = []
    for program in programs:
        for flag in flags:
            ran = subprocess.run(
                [program, flag, "--", "--version"],
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=10,
            )
            if "Free Software Foundation" in ran.stdout + ran.stderr:
                swallowed.append(f"{program} {flag}")
            if (tmp_path / "--version").is_dir():  # mkdir made it: an operand, as meant
                (tmp_path / "--version").rmdir()
            (tmp_path / "--version").unlink(missing_ok=True)
    assert swallowed == []


def test_the_programs_exist_here() -> None:
    assert all(shutil.which(name) for name in READ_ONLY | CHANGES_FILES)
