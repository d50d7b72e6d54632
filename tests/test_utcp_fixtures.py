"""Every example template of the UTCP documents, run offline (see fixtures/utcp/README.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import ArgumentsError, EnvironmentVariableError, Executor, Policy, utcp

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "utcp"
PROBE = ROOT / "fixtures" / "programs" / "probe.py"
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "HOME": "/nonexistent",
    "PATH": "/usr/bin:/bin",
}


def fixture(name: str, replace: dict[str, str] | None = None) -> dict[str, Any]:
    text = (FIXTURES / f"{name}.json").read_text()
    for old, new in (replace or {}).items():
        text = text.replace(old, new)
    document: dict[str, Any] = json.loads(text)
    return document


def call(
    source: Any, args: dict[str, Any] | None = None, policy: Policy | None = None, **kw: Any
) -> Any:
    return trio.run(lambda: utcp.call(source, args or {}, policy=policy, **kw))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    (path / "a.py").write_text("print('a')\n")
    (path / "b.py").write_text("print('b')\n")
    (path / "README").write_text("readme\n")
    for command in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "first"]):
        subprocess.run(["git", *command], cwd=path, env=GIT_ENV, check=True)
    return path


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    """``python`` (this interpreter), and ``docker``/``node`` stand-ins that run the probe."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    for name in ("docker", "node"):
        stand_in = bin_dir / name
        stand_in.write_text(
            f"#!{sys.executable}\nimport runpy, sys\nrunpy.run_path({str(PROBE)!r}, "
            "run_name='__main__')\n"
        )
        stand_in.chmod(0o755)
    return bin_dir


def stand_in_policy(bin_dir: Path, **kw: Any) -> Policy:
    return Policy(search_path=(str(bin_dir), "/usr/bin", "/bin"), **kw)


def test_api_basic_command_step(repo: Path) -> None:
    template = fixture("api-basic-command-step") | {"working_dir": str(repo)}
    assert "On branch main" in str(call(template))


def test_api_placeholder_and_output_reference(repo: Path) -> None:
    template = fixture("api-placeholder-and-output-reference") | {"working_dir": str(repo)}
    out = str(call(template, {"target_dir": "/srv/copy"}))
    assert out.startswith("Cloning to: /srv/copy, previous status: On branch main")


def test_api_cross_platform_dir_tool_cd_reaches_the_next_step(repo: Path) -> None:
    out = str(call(fixture("api-cross-platform-dir-tool"), {"target_dir": str(repo)}))
    assert "a.py" in out and "README" in out


def test_api_reference_previous_output_tool(repo: Path) -> None:
    (repo / "new.txt").write_text("x")
    template = fixture("api-reference-previous-output-tool") | {"working_dir": str(repo)}
    assert call(template) == "Found changes: ?? new.txt"


def test_api_python_multi_step_tool(
    tmp_path: Path, tools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "setup.py").write_text("print('installed')\n")
    (tmp_path / "script.py").write_text(
        "import json, os, sys\nprint(json.dumps({'argv': sys.argv[1:], 'env': {k: os.environ.get(k)"
        " for k in ('API_KEY', 'PYTHONPATH', 'OPENAI_API_KEY', 'AWS_PROFILE', 'PATH')}}))\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "host-openai")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    policy = stand_in_policy(
        tools, allow_environment=("PYTHONPATH",), inherit_environment=("OPENAI_API_KEY",)
    )
    out = call(
        fixture("api-python-multi-step-tool"),
        {"input_file": "in.txt"},
        policy,
        variables={"API_KEY_VAR": "from-variables"},
    )
    assert out == {
        "argv": ["--input", "in.txt", "--result", "installed"],
        "env": {
            "API_KEY": "from-variables",
            "PYTHONPATH": "/custom/path",
            "OPENAI_API_KEY": "host-openai",
            "AWS_PROFILE": None,  # named but not set on the host: skipped
            "PATH": None,  # not inherited: the list replaces the default allowlist
        },
    }


def test_api_python_multi_step_tool_needs_the_policy_for_pythonpath(tools: Path) -> None:
    with pytest.raises(EnvironmentVariableError) as refused:
        call(fixture("api-python-multi-step-tool"), {"input_file": "x"}, stand_in_policy(tools))
    assert "PYTHONPATH" in str(refused.value)


def test_protocol_call_template_structure(repo: Path, tmp_path: Path) -> None:
    (repo / "new.txt").write_text("x")
    (repo / "a.py").write_text("changed\n")
    template = fixture("protocol-call-template-structure", {'"/tmp"': json.dumps(str(tmp_path))})
    out = call(template, {"target_dir": str(repo)})
    # The JSON's \" decode to plain quotes, so the inner echo keeps both lines.
    assert out == "Status:  M a.py\n?? new.txt, Files: 2"


def test_protocol_argument_substitution_clones_offline(repo: Path, tmp_path: Path) -> None:
    template = fixture("protocol-argument-substitution") | {"working_dir": str(tmp_path)}
    out = str(call(template, {"repo_url": str(repo), "target_dir": "clone dir"}))
    assert "Cloning into 'clone dir'" in out
    assert (tmp_path / "clone dir" / "a.py").exists()


def test_protocol_output_referencing(repo: Path) -> None:
    (repo / "README").write_text("changed\n")
    template = fixture("protocol-output-referencing") | {"working_dir": str(repo)}
    assert call(template) == "Changes detected:  M README"


def test_protocol_safe_file_read(tmp_path: Path) -> None:
    safe = tmp_path / "safe" / "directory"
    safe.mkdir(parents=True)
    (safe / "notes.txt").write_text("safe content\n")
    tool = utcp.load(fixture("protocol-safe-file-read", {"/safe/directory": str(safe)}))
    assert call(tool, {"filename": "notes.txt"}) == "safe content"
    executor = Executor()
    with pytest.raises(ArgumentsError) as refused:
        trio.run(lambda: utcp.call(tool, {"filename": "../../etc/passwd"}, executor=executor))
    assert refused.value.violations[0].keyword == "pattern"
    assert executor.spawned == 0


def test_protocol_sandboxing_runs_docker_with_one_word_per_argument(tools: Path) -> None:
    out = call(fixture("protocol-sandboxing"), {"filename": "a b;c"}, stand_in_policy(tools))
    assert isinstance(out, dict)
    assert out["argv"] == [
        *("run", "--rm", "--read-only", "-v", "/safe/data:/data:ro", "alpine:latest"),
        *("cat", "/data/a b;c"),
    ]


def test_protocol_get_system_info() -> None:
    tool = utcp.load(FIXTURES / "protocol-get-system-info.json")
    assert str(call(tool)).startswith(os.uname().sysname)


def test_protocol_analyze_directory(tmp_path: Path) -> None:
    for name in ("x", "y", "z"):
        (tmp_path / name).write_text(name * 100)
    out = str(
        call(utcp.load(FIXTURES / "protocol-analyze-directory.json"), {"path": str(tmp_path)})
    )
    assert re.fullmatch(r"Directory Analysis: \S+\t\. total size, 3 files", out), out


def test_protocol_git_analysis(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    tool = utcp.load(FIXTURES / "protocol-git-analysis.json")
    out = str(call(tool, {"repo_url": str(repo), "target_dir": "analysis"}))
    assert re.fullmatch(r"[0-9a-f]+ first\nRepository has 2 Python files", out), out


def test_protocol_python_pipeline(tmp_path: Path, tools: Path) -> None:
    workspace = tmp_path / "workspace"
    project = workspace / "proj"
    project.mkdir(parents=True)
    (project / "requirements.txt").write_text("# nothing to install\n")
    (project / "main.py").write_text("import os\nprint('ran with', os.environ['VIRTUAL_ENV'])\n")
    tool = utcp.load(fixture("protocol-python-pipeline", {"/workspace": str(workspace)}))
    policy = stand_in_policy(tools, allow_environment=("PYTHONPATH",))
    out = call(tool, {"project_dir": str(project), "script_name": "main.py"}, policy)
    assert out == f"ran with {workspace}/venv"


def test_protocol_environment_variables(tools: Path) -> None:
    out = call(
        fixture("protocol-environment-variables"),
        policy=stand_in_policy(tools),
        variables={"API_KEY": "k-123"},
    )
    assert isinstance(out, dict)
    assert out["argv"] == ["app.js"]
    env = out["env"]
    assert (env["NODE_ENV"], env["API_KEY"], env["PORT"]) == ("production", "k-123", "3000")


def test_protocol_working_directory(tmp_path: Path) -> None:
    src = tmp_path / "project" / "src"
    src.mkdir(parents=True)
    (src / "Makefile").write_text("build:\n\t@echo built in $(notdir $(CURDIR))\n")
    template = fixture("protocol-working-directory", {"/project/src": str(src)})
    # make runs its recipe through PATH: the template asks for it (utcp-cli's
    # default list), and the policy passes it.
    assert call(template, policy=Policy(inherit_environment=("PATH",))) == "built in src"


def test_protocol_powershell_commands_are_not_found_on_unix() -> None:
    result = trio.run(
        lambda: utcp.run(fixture("protocol-powershell-commands"), {"path": ".", "dir": "."})
    )
    assert [step.status for step in result.steps] == [127, 127]
    assert result.output == "command-handle: Set-Location: command not found"


def test_protocol_bash_commands(tmp_path: Path) -> None:
    (tmp_path / "listed.txt").write_text("")
    result = trio.run(
        lambda: utcp.run(fixture("protocol-bash-commands"), {"path": str(tmp_path), "dir": "/"})
    )
    assert "listed.txt" in result.steps[0].text
    assert result.output == ""  # only the last step (cd) is appended, and it prints nothing


def test_protocol_universal_commands(repo: Path, tools: Path) -> None:
    template = fixture("protocol-universal-commands") | {"working_dir": str(repo)}
    result = trio.run(lambda: utcp.run(template, {}, policy=stand_in_policy(tools)))
    assert "On branch main" in result.steps[0].text
    assert result.steps[1].text.startswith("Python 3.")
    assert json.loads(result.output)["argv"] == ["-v"]


def test_protocol_echo_chain() -> None:
    assert call(fixture("protocol-echo-chain"), {"message": "hello"}) == "Previous: hello"


def test_readme_multi_step_cli_tool(repo: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    template = fixture("readme-multi-step-cli-tool", {'"/tmp"': json.dumps(str(work))})
    # UTCP namespaces variables by template name, with '_' doubled.
    variables = {"multi__step__cli__tool_MY_API_KEY": "namespaced"}
    assert call(template, {"repo_url": str(repo)}, variables=variables) == "2"


def test_readme_weather_manual_skips_the_http_tool() -> None:
    manual = utcp.load(FIXTURES / "readme-weather-manual.json")
    assert isinstance(manual, utcp.UtcpManual)
    assert manual.tools == []
    assert [(s.name, s.call_template_type) for s in manual.skipped] == [("get_weather", "http")]
    with pytest.raises(KeyError, match="skipped"):
        manual.tool("get_weather")


def test_legacy_provider_tool_gets_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "hay.txt").write_text("needle\nhay\nneedle\n")
    monkeypatch.chdir(tmp_path)
    tool = utcp.load(FIXTURES / "legacy-provider-tool.json")
    assert call(tool, {"regexp": "needle", "count": True}) == 2  # 0.x parses any JSON: '2'
    plan = utcp.translate(tool)
    assert (plan.mode, plan.legacy_command) == ("legacy", ("grep", "-rh"))
    # Flags get the refusals a handle's argv gets, before anything runs.
    with pytest.raises(ArgumentsError, match=r"argv\[3\] contains a NUL"):
        call(tool, {"regexp": "a\x00b"})
    with pytest.raises(ArgumentsError, match="lone surrogate"):
        call(tool, {"regexp": "\ud800"})
    with pytest.raises(ArgumentsError, match=r"argv\[3\] is 200000 bytes; one argument may have"):
        call(tool, {"regexp": "n" * 200_000})


def test_discovery_runs_the_commands_and_parses_the_manual(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    manual = trio.run(lambda: utcp.discover(FIXTURES / "discovery.json"))
    assert [tool.name for tool in manual.tools] == ["echo_chain", "count_lines"]
    assert [s.name for s in manual.skipped] == ["get_weather"]
    assert call(manual.tool("local_tools.echo_chain"), {"message": "hi"}) == "Previous: hi"
