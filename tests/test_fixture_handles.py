"""Every handle in fixtures/handles runs against real programs."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from command_handle import CommandError, CommandHandle, Executor, Policy

ROOT = Path(__file__).resolve().parent.parent
HANDLES = ROOT / "fixtures" / "handles"


def load(name: str) -> CommandHandle:
    return CommandHandle.load(HANDLES / name)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("alpha\nBeta\ngamma beta\n")
    (tmp_path / ".hidden").write_text("h")
    (tmp_path / "-tricky.txt").write_text("beta\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.txt").write_text("beta deep\n")
    return tmp_path


def test_list_directory(tree: Path) -> None:
    executor = Executor()
    names = executor.call_sync(load("list-directory.json"), {"path": str(tree)}).stdout
    assert names == "-tricky.txt\nnotes.txt\nsub\n"
    hidden = executor.call_sync(
        load("list-directory.json"), {"path": str(tree), "all": True}
    ).stdout
    assert ".hidden" in str(hidden)


def test_search_text(tree: Path) -> None:
    args = {
        "pattern": "beta",
        "files": ["notes.txt", "-tricky.txt"],
        "directory": str(tree),
        "ignore_case": True,
    }
    result = Executor().call_sync(load("search-text.json"), args)
    assert result.stdout == "notes.txt:2:Beta\nnotes.txt:3:gamma beta\n-tricky.txt:1:beta\n"
    # A pattern that looks like an option is still the pattern (it follows -e).
    result = Executor().call_sync(load("search-text.json"), args | {"pattern": "-v"})
    assert result.exit_code == 1 and result.stdout == ""


def test_find_files(tree: Path) -> None:
    result = Executor().call_sync(load("find-files.json"), {"root": str(tree), "name": "*.txt"})
    assert sorted(str(result.stdout).split()) == sorted(
        str(tree / p) for p in ("notes.txt", "-tricky.txt", "sub/deep.txt")
    )


def test_sort_lines_json_and_yaml() -> None:
    executor = Executor()
    assert executor.call_sync(
        load("sort-lines.json"), {"text": "10\n9\n100\n", "numeric": True}
    ).stdout == ("9\n10\n100\n")
    assert executor.call_sync(
        load("sort-lines.yaml"), {"text": "a\nc\nb\n", "reverse": True}
    ).stdout == ("c\nb\na\n")


def test_word_count_view() -> None:
    result = Executor().call_sync(load("word-count.json"), {"text": "one two\nthree\n"})
    assert result.view == {"counts": result.stdout}
    assert str(result.stdout).split() == ["2", "3", "14"]


def test_list_archive(tmp_path: Path) -> None:
    member = tmp_path / "member.txt"
    member.write_text("x")
    archive = tmp_path / "a, b.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(member, arcname="member.txt")
    result = Executor().call_sync(load("list-archive.json"), {"archive": str(archive)})
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "member.txt\n"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def test_git_log_and_the_a2_commit_example(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("a")
    (repo / "-b.txt").write_text("b")
    git(repo, "add", "--", "a.txt", "-b.txt")
    executor = Executor()
    commit = executor.call_sync(
        load("a2-git-commit.json"),
        {
            "repository": str(repo),
            "message": "First commit, from an agent",
            "files": ["a.txt", "-b.txt"],
        },
    )
    assert commit.exit_code == 0, commit.stderr
    log = executor.call_sync(load("git-log.json"), {"repository": str(repo), "count": 1})
    assert log.exit_code == 0, log.stderr
    assert str(log.stdout).strip().endswith("First commit, from an agent")
    assert isinstance(log.view, dict) and log.view["ok"] is True


def test_format_json() -> None:
    result = Executor().call_sync(load("format-json.json"), {"document": '{"b": 1, "a": [1]}'})
    assert json.loads(str(result.stdout)) == {"a": [1], "b": 1}
    assert str(result.stdout).index('"a"') < str(result.stdout).index('"b"')


def test_a1_build_project_runs_make_in_src(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "Makefile").write_text(
        "all:\n\t@echo built with $(CFLAGS) $(MAKEFLAGS) in $(CURDIR)\n"
    )
    monkeypatch.chdir(tmp_path)  # the example's directory "src" is relative to the caller's cwd
    result = Executor().call_sync(load("a1-build-project.json"))
    assert result.exit_code == 0, result.stderr
    assert str(result.stdout).startswith("built with -O2 ")
    assert "j4" in str(result.stdout) and str(tmp_path / "src") in str(result.stdout)


def test_a3_deploy_service_runs_the_applications_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "deploy").mkdir()
    script = tmp_path / "deploy" / "deploy.sh"
    script.write_text(
        '#!/bin/sh\necho "deploying $SERVICE_NAME on $SERVICE_PORT with ${API_KEY:+a key}"\n'
    )
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path)  # deploy/ is relative to the application's directory
    args = {"service": {"name": "payments", "port": 8443}, "credentials": {"api_key": "k-123"}}
    result = Executor().call_sync(load("a3-deploy-service.json"), args)
    assert result.stdout == "deploying payments on 8443 with a key\n"
    # Appendix A.3's own shape, a relative script in a directory the model names, is
    # refused: the model would choose the program (red-team finding 5).
    original = load("a3-deploy-service.json").model_copy(
        update={"directory": {"$": "path"}, "parameters": {"type": "object"}}
    )
    with pytest.raises(CommandError, match="directory computed from the arguments"):
        Executor().call_sync(original, {"path": str(tmp_path / "deploy")})


def test_probe_fixture_reports_exactly_what_it_got(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("CH_TEST_SECRET", "nope")
    result = Executor(Policy(search_path=("/usr/bin",))).call_sync(
        load("probe.json"), {"words": ["a b", "$(x)"], "input": "in", "value": "v"}
    )
    report = json.loads(str(result.stdout))
    assert (
        report["argv"] == ["a b", "$(x)"]
        and report["env"] == {"PROBE_VALUE": "v"}
        and report["stdin"] == "in"
    )
    assert report["pgid"] == report["pid"]  # the child leads its own process group


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "command_handle", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_run_render_validate_schema(tmp_path: Path) -> None:
    ran = run_cli("run", "fixtures/handles/word-count.json", "--args", '{"text": "a b c"}')
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["view"]["counts"].split() == ["0", "3", "5"]
    raw = run_cli(
        "run", "fixtures/handles/sort-lines.json", "--args", '{"text": "b\\na\\n"}', "--raw"
    )
    assert raw.returncode == 0 and raw.stdout == "a\nb\n"
    failing = tmp_path / "fail.json"
    failing.write_text(json.dumps({"name": "f", "handle": "command", "command": "false"}))
    assert run_cli("run", str(failing), "--raw").returncode == 1
    rendered = run_cli("render", "fixtures/handles/list-directory.json", "--args", '{"path": "-x"}')
    assert json.loads(rendered.stdout)["argv"][1:] == ["-1", "--", "-x"]
    refused = run_cli("run", "fixtures/handles/list-directory.json", "--args", "{}")
    assert (
        refused.returncode == 2
        and "ArgumentsError" in refused.stderr
        and "'path'" in refused.stderr
    )
    validated = run_cli("validate", *(str(p) for p in sorted(HANDLES.iterdir())))
    assert validated.returncode == 0, validated.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "b", "handle": "command", "command": "ls", "colour": 1}))
    invalid = run_cli("validate", str(bad))
    assert invalid.returncode == 2 and "unknown field 'colour'" in invalid.stderr
    schema = json.loads(run_cli("schema").stdout)
    assert schema["additionalProperties"] is False and "io" in schema["properties"]
