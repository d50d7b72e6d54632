"""Bash tool plugins: loaded in every form the authoring guide shows, checked by
its contract, and run through the Toolbox, the CLI and MCP with real processes.

The tools are the guide's two examples and a json-mode tool using jq
(fixtures/plugins/), and small scripts written here whose ``run`` hands its
argv, environment and stdin to the probe program.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from command_handle import Policy, Toolbox
from command_handle.cli import main
from command_handle.toolbox import FORMATS, ApprovalRequest, AuditEvent, ToolLoadError

from .processes import PROBE, PY, ROOT

PLUGINS = ROOT / "fixtures" / "plugins"
ECHO = PLUGINS / "template-bash-tool"
LINES = PLUGINS / "bash-read-line-range"
GREET = PLUGINS / "json-greet"
CONFIG = ROOT / "fixtures" / "plugin-configs" / "app.json"
CANARY = "canary-plugin-7f3a91c2e5"
NAMES = ["read_line_range", "json_greet", "template_bash_echo"]


@pytest.fixture(autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test starts with an empty schema and clone cache."""
    folder = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


def schema(
    name: str = "probe_tool",
    mode: str = "flags",
    properties: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "id": name,
        "version": "0.1.0",
        "args_mode": mode,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": f"the {name} test tool",
                    "parameters": {"type": "object", "properties": properties or {}},
                },
            }
        ],
        **extra,
    }


def bash_tool(
    folder: Path,
    document: dict[str, Any] | str,
    *,
    run: str = f'exec "$AGENT_TOOL_PYTHON" {PROBE} "$@"',
    preview: str = 'echo "preview $*"',
    error: str | None = None,
    file: str = "",
) -> Path:
    """A bash tool file whose schema prints ``document`` and whose run hands
    everything to the probe (by default)."""
    text = document if isinstance(document, str) else json.dumps(document)
    name = file or (f"{document['id']}.bash" if isinstance(document, dict) else "tool.bash")
    path = folder / name
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        "#!/usr/bin/env bash",
        'sub="${1:-}"; shift || true',
        'case "$sub" in',
        f"schema) cat <<'JSON'\n{text}\nJSON\n;;",
        f"run) {run} ;;",
        f"preview) {preview} ;;",
    ]
    if error is not None:
        lines.append(f"error) {error} ;;")
    lines += ['*) echo "usage" >&2; exit 2 ;;', "esac", ""]
    path.write_text("\n".join(lines))
    return path


def structured(result: Any) -> dict[str, Any]:
    value: dict[str, Any] = result.structured
    return value


def report(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data: dict[str, Any] = json.loads(structured(result)["stdout"])
    return data


# -- loading, every form ---------------------------------------------------------


def test_a_single_bash_file_loads_and_runs() -> None:
    toolbox = Toolbox.load(ECHO / "template_bash_echo.bash", allow_bash_tools=True)
    assert toolbox.names() == ["template_bash_echo"]
    assert toolbox["template_bash_echo"].kind == "bash"
    result = toolbox.call_sync("template_bash_echo", {"value": "hi there", "uppercase": True})
    assert not result.is_error and result.content == "HI THERE"


def test_a_plugin_folder_and_its_descriptor_load() -> None:
    for given in (ECHO, ECHO / "agent_plugin.json"):
        toolbox = Toolbox.load(given, allow_bash_tools=True)
        assert toolbox.names() == ["template_bash_echo"]


def test_a_folder_of_plugin_folders_loads_each_plugin() -> None:
    toolbox = Toolbox.load(PLUGINS, allow_bash_tools=True)
    assert sorted(toolbox.names()) == sorted(NAMES)
    assert toolbox.skipped == []  # tests/ and other files of a plugin folder are the plugin's


def test_loose_bash_files_in_a_folder_load_and_other_files_are_listed(tmp_path: Path) -> None:
    for source in (ECHO / "template_bash_echo.bash", LINES / "read_line_range.bash"):
        shutil.copy(source, tmp_path)
    (tmp_path / "README.md").write_text("notes")
    toolbox = Toolbox.load(tmp_path, allow_bash_tools=True)
    assert sorted(toolbox.names()) == ["read_line_range", "template_bash_echo"]
    assert toolbox.skipped == [
        f"{tmp_path / 'README.md'}: not a tool (only .json, .yaml, .yml and .bash files are read)"
    ]


def test_an_application_config_loads_its_plugins_relative_to_itself(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # the config's paths are relative to its folder, not here
    toolbox = Toolbox.load(CONFIG, tool_config={"greeting": "Howdy"})
    assert sorted(toolbox.names()) == sorted(NAMES)
    result = toolbox.call_sync("json_greet", {"names": ["Ada"]})
    assert result.content == "Howdy, Ada!"


def test_a_config_s_timeout_lowers_the_policy_s() -> None:
    toolbox = Toolbox.load(CONFIG, policy=Policy(timeout=60))
    shown = toolbox.preview_sync("template_bash_echo", {"value": "x", "uppercase": False})
    assert shown.plan is not None and shown.plan["limits"]["timeout"] == 30


def test_a_config_lists_other_plugins_as_skipped(tmp_path: Path) -> None:
    shutil.copytree(ECHO, tmp_path / "echo")
    config = {
        "plugins": ["bash:./echo", "path:./python-plugin", {"python": {"module": "x"}}],
        "plugin_policy": {"allow_bash_tools": True},
    }
    (tmp_path / "app.json").write_text(json.dumps(config))
    toolbox = Toolbox.load(tmp_path / "app.json")
    assert toolbox.names() == ["template_bash_echo"]
    assert len(toolbox.skipped) == 2 and "/plugins/1" in toolbox.skipped[0]


def test_string_shortcuts_load_as_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    toolbox = Toolbox.load(
        "bash:fixtures/plugins/json-greet",
        "bash:fixtures/plugins/template-bash-tool/template_bash_echo.bash",
        allow_bash_tools=True,
    )
    assert toolbox.names() == ["json_greet", "template_bash_echo"]


def git(*argv: str, cwd: Path) -> None:
    subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A local git repository holding the line-range plugin, tagged v0.1.0, with a
    later commit that breaks it (so a checkout of the tag is what loads)."""
    repo = tmp_path / "repo"
    shutil.copytree(LINES, repo)
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", ".", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one", cwd=repo)
    git("tag", "v0.1.0", cwd=repo)
    (repo / "agent_plugin.json").write_text('{"bash_tools": [{"file": "missing.bash"}]}')
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two", cwd=repo)
    return repo


def test_a_git_plugin_is_cloned_at_its_ref_once(
    repository: Path, tmp_path: Path, cache: Path
) -> None:
    config = {
        "plugins": [{"bash_tool": {"git": str(repository), "ref": "v0.1.0"}}],
        "plugin_policy": {"allow_bash_tools": True},
    }
    (tmp_path / "app.json").write_text(json.dumps(config))
    toolbox = Toolbox.load(tmp_path / "app.json")
    assert toolbox.names() == ["read_line_range"]
    clones = list((cache / "command-handle" / "git").iterdir())
    assert len(clones) == 1
    shutil.rmtree(repository)  # the second load is served from the cache
    assert Toolbox.load(tmp_path / "app.json").names() == ["read_line_range"]


def test_the_git_shortcut_and_a_missing_ref(repository: Path) -> None:
    toolbox = Toolbox.load(f"bash+git:{repository}#v0.1.0", allow_bash_tools=True)
    assert toolbox.names() == ["read_line_range"]
    with pytest.raises(ToolLoadError, match=r"v9\.9\.9"):
        Toolbox.load(f"bash+git:{repository}#v9.9.9", allow_bash_tools=True)
    with pytest.raises(ToolLoadError, match="needs a ref"):
        Toolbox.load(f"bash+git:{repository}", allow_bash_tools=True)


@pytest.mark.parametrize(
    "given",
    [ECHO / "template_bash_echo.bash", ECHO, ECHO / "agent_plugin.json", PLUGINS],
    ids=["file", "folder", "descriptor", "folder-of-plugins"],
)
def test_without_the_permission_a_bash_tool_is_a_load_error(given: Path) -> None:
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(given)
    assert "--allow-bash-tools" in str(caught.value) and ".bash" in str(caught.value)


def test_a_config_without_allow_bash_tools_is_a_load_error(tmp_path: Path) -> None:
    config = {"plugins": [f"bash:{ECHO}"], "plugin_policy": {"allow_bash_tools": False}}
    (tmp_path / "app.json").write_text(json.dumps(config))
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(tmp_path / "app.json")
    assert caught.value.path == str(tmp_path / "app.json") and caught.value.pointer == "/plugins/0"
    assert "allow_bash_tools" in str(caught.value)
    assert Toolbox.load(tmp_path / "app.json", allow_bash_tools=True).names() == [
        "template_bash_echo"
    ]


def test_a_folder_with_no_tool_is_an_error_that_lists_its_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "tool.sh").write_text("echo hi")
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(tmp_path)
    assert "no tool in this folder" in str(caught.value)
    assert "notes.txt: not a tool" in str(caught.value) and "tool.sh" in str(caught.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ToolLoadError, match="no tool in this folder"):
        Toolbox.load(empty)


# -- the contract ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "message", "pointer"),
    [
        ("{not json", "did not print valid JSON", ""),
        ("[1]", "must print a JSON object", ""),
        ({k: v for k, v in schema().items() if k != "id"}, "no 'id'", "/id"),
        ({k: v for k, v in schema().items() if k != "version"}, "no 'version'", "/version"),
        ({k: v for k, v in schema().items() if k != "args_mode"}, "no 'args_mode'", "/args_mode"),
        ({k: v for k, v in schema().items() if k != "tools"}, "no 'tools'", "/tools"),
        (schema(args_mode="shell"), "args_mode must be one of", "/args_mode"),
        ({**schema(), "tools": schema()["tools"] * 2}, "exactly one tool", "/tools"),
        (
            {**schema(), "id": "other"},
            "must equal the schema's id 'other'",
            "/tools/0/function/name",
        ),
        (schema(mode="positional"), 'needs a "positional" list', "/positional"),
        (
            schema(mode="positional", positional=[{"name": "x"}]),
            "'x' is not a parameter",
            "/positional/0/name",
        ),
        (schema(config_keys="key"), "config_keys must be a list", "/config_keys"),
        (
            schema(environment={"LD_PRELOAD": "x", "AGENT_TOOL_X": "y"}),
            "AGENT_TOOL_",
            "/environment/AGENT_TOOL_X",
        ),
        (schema(environment={"X": "{{path}}"}), "without", "/environment/X"),
    ],
    ids=lambda value: None if not isinstance(value, str) else value[:24],
)
def test_each_schema_rule_is_a_load_error_naming_the_file(
    tmp_path: Path, document: Any, message: str, pointer: str
) -> None:
    path = bash_tool(tmp_path, document, file="tool.bash")
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(path, allow_bash_tools=True)
    assert caught.value.path == str(path)
    assert message in str(caught.value) and caught.value.pointer == pointer


def test_a_schema_that_fails_or_hangs_is_a_load_error(tmp_path: Path) -> None:
    failing = tmp_path / "failing.bash"
    failing.write_text('echo "cannot start: missing helper" >&2; exit 3\n')
    with pytest.raises(ToolLoadError, match="exit status 3: cannot start: missing helper"):
        Toolbox.load(failing, allow_bash_tools=True)
    hanging = tmp_path / "hanging.bash"
    hanging.write_text(f"exec -a {CANARY}-hang sleep 30\n")
    started = time.monotonic()
    with pytest.raises(ToolLoadError, match=r"did not finish within 0\.5 s"):
        Toolbox.load(hanging, allow_bash_tools=True, policy=Policy(timeout=0.5))
    assert time.monotonic() - started < 10
    assert subprocess.run(["pgrep", "-f", f"{CANARY}-hang"], capture_output=True).stdout == b""


def test_the_schema_is_cached_by_the_file_s_content(tmp_path: Path) -> None:
    counter = tmp_path / "schema-runs"
    document = json.dumps(schema())
    path = tmp_path / "probe_tool.bash"
    path.write_text(
        f"if [ \"$1\" = schema ]; then echo x >> {counter}; cat <<'JSON'\n{document}\nJSON\nfi\n"
    )
    for _ in range(3):
        Toolbox.load(path, allow_bash_tools=True)
    assert counter.read_text() == "x\n"
    path.write_text(path.read_text() + "# changed\n")
    Toolbox.load(path, allow_bash_tools=True)
    assert counter.read_text() == "x\nx\n"


def test_a_schema_that_breaks_a_rule_is_not_cached(tmp_path: Path, cache: Path) -> None:
    path = bash_tool(tmp_path, {**schema(), "id": "other"}, file="tool.bash")
    with pytest.raises(ToolLoadError):
        Toolbox.load(path, allow_bash_tools=True)
    assert not (cache / "command-handle" / "bash-schemas").exists()


def test_describe_exports_a_bash_tool_in_every_format() -> None:
    toolbox = Toolbox.load(PLUGINS, allow_bash_tools=True)
    for format in FORMATS:
        described = toolbox.describe(format)
        assert len(described) == 3 and "read_line_range" in json.dumps(described)


# -- running ---------------------------------------------------------------------


def test_argv_environment_and_cwd_are_built_from_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLUGIN_CANARY", CANARY)
    path = bash_tool(
        tmp_path / "tools",
        schema(properties={"text": {"type": "string"}, "loud": {"type": "boolean"}}),
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    toolbox = Toolbox.load(path, allow_bash_tools=True, policy=Policy(workspace=str(workspace)))
    seen = report(toolbox.call_sync("probe_tool", {"text": "a; rm -rf / $(id)", "loud": False}))
    assert seen["argv"] == ["--text", "a; rm -rf / $(id)", "--no-loud"]
    assert seen["cwd"] == str(workspace)
    assert CANARY not in json.dumps(seen)
    assert seen["env"]["AGENT_TOOL_PYTHON"] == sys.executable
    assert set(seen["env"]) <= {"AGENT_TOOL_PYTHON", "PWD", "SHLVL", "_", "OLDPWD"}


def test_config_keys_come_from_the_application_never_the_model(tmp_path: Path) -> None:
    path = bash_tool(
        tmp_path,
        schema(
            mode="json",
            properties={"AGENT_TOOL_CONFIG_TOKEN": {"type": "string"}},
            config_keys=["token", "smtpUser", "list_value", "flag"],
        ),
    )
    toolbox = Toolbox.load(
        path,
        allow_bash_tools=True,
        tool_config={"token": "from-toolbox", "smtpUser": "u", "list_value": [1], "flag": True},
    )
    seen = report(
        toolbox.call_sync(
            "probe_tool",
            {"AGENT_TOOL_CONFIG_TOKEN": "from-model"},
            context={"token": "from-context", "working_directory": str(tmp_path)},
        )
    )
    env = seen["env"]
    assert env["AGENT_TOOL_CONFIG_TOKEN"] == "from-context"
    assert env["AGENT_TOOL_CONFIG_SMTP_USER"] == "u"
    assert env["AGENT_TOOL_CONFIG_FLAG"] == "true"
    assert "AGENT_TOOL_CONFIG_LIST_VALUE" not in env  # lists and objects are not passed
    assert seen["cwd"] == str(tmp_path)
    assert json.loads(seen["stdin"]) == {"AGENT_TOOL_CONFIG_TOKEN": "from-model"}


def test_model_data_never_becomes_an_option_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = bash_tool(
        tmp_path,
        schema(
            mode="positional",
            properties={"path": {"type": "string"}},
            positional=[{"name": "path"}],
        ),
        run=f"touch {marker}",
        preview=f"touch {marker}",
    )
    toolbox = Toolbox.load(path, allow_bash_tools=True)
    for value in ("-rf", "--output=/etc/x", "+cmd", "@file"):
        result = toolbox.call_sync("probe_tool", {"path": value})
        assert result.is_error and "`path` must not start with" in result.content
    shown = toolbox.preview_sync("probe_tool", {"path": "-x"})
    assert shown.plan is None and shown.error is not None
    assert not marker.exists()


def test_an_author_opts_a_parameter_out_with_options_allowed(tmp_path: Path) -> None:
    path = bash_tool(
        tmp_path,
        schema(properties={"pattern": {"type": "string"}}, options_allowed=["pattern"]),
    )
    toolbox = Toolbox.load(path, allow_bash_tools=True)
    assert report(toolbox.call_sync("probe_tool", {"pattern": "-v"}))["argv"] == ["--pattern", "-v"]


def test_the_document_s_two_examples_run_as_written(tmp_path: Path) -> None:
    text = tmp_path / "text.txt"
    text.write_text("one\ntwo\nthree\nfour\n")
    toolbox = Toolbox.load(PLUGINS, allow_bash_tools=True)
    result = toolbox.call_sync(
        "read_line_range", {"path": str(text), "start_line": 2, "end_line": 3}
    )
    assert not result.is_error and result.content == "two\nthree"
    numbered = toolbox.call_sync(
        "read_line_range",
        {"path": str(text), "start_line": 1, "end_line": 2, "show_line_numbers": True},
    )
    assert numbered.content == "1: one\n2: two"
    echoed = toolbox.call_sync("template_bash_echo", {"value": "it's $HOME", "uppercase": False})
    assert echoed.content == "it's $HOME"
    bad = toolbox.call_sync("read_line_range", {"path": "x", "start_line": 0, "end_line": 1})
    assert bad.is_error and "start_line" in bad.content


def test_error_formats_a_failure(tmp_path: Path) -> None:
    toolbox = Toolbox.load(PLUGINS, allow_bash_tools=True)
    result = toolbox.call_sync(
        "read_line_range", {"path": str(tmp_path / "missing"), "start_line": 1, "end_line": 1}
    )
    assert result.is_error
    assert result.content == f"read_line_range could not read {tmp_path / 'missing'} (exit_code=3)"
    assert structured(result)["exit_code"] == 3
    assert "no such file" in structured(result)["stderr"]


def test_without_a_useful_error_subcommand_the_default_message_stands(tmp_path: Path) -> None:
    silent = bash_tool(tmp_path / "a", schema("silent"), run="echo out; exit 4", error="exit 0")
    absent = bash_tool(tmp_path / "b", schema("absent"), run="echo out; exit 4")
    failing = bash_tool(tmp_path / "c", schema("failing"), run="exit 4", error="echo nope; exit 1")
    toolbox = Toolbox.load(silent, absent, failing, allow_bash_tools=True)
    default = "The command ran and reported failure: exit code 4."
    expected = {"silent": f"out\n\n{default}", "absent": f"out\n\n{default}", "failing": default}
    for name, content in expected.items():
        result = toolbox.call_sync(name, {})
        assert result.is_error and result.content == content


def test_a_timeout_runs_error_with_the_timeout_variables(tmp_path: Path) -> None:
    path = bash_tool(
        tmp_path,
        schema(),
        run=f"exec -a {CANARY}-run sleep 30",
        error='echo "code=$1 timed_out=$AGENT_TOOL_TIMED_OUT"'
        ' "after=$AGENT_TOOL_TIMEOUT_SECONDS"; exit 0',
    )
    toolbox = Toolbox.load(path, allow_bash_tools=True, policy=Policy(timeout=0.5, kill_grace=0.2))
    result = toolbox.call_sync("probe_tool", {})
    assert result.is_error and result.content == "code=124 timed_out=1 after=0.5"
    assert structured(result)["timed_out"] is True
    assert subprocess.run(["pgrep", "-f", f"{CANARY}-run"], capture_output=True).stdout == b""


def test_preview_is_the_summary_a_person_and_the_approver_see(tmp_path: Path) -> None:
    requests: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        requests.append(request)
        return True

    toolbox = Toolbox.load(PLUGINS, allow_bash_tools=True, approve=approve)
    shown = toolbox.preview_sync("template_bash_echo", {"value": "a b", "uppercase": True})
    assert shown.summary == "template_bash_echo value=a\\ b uppercase=true"
    result = toolbox.call_sync("template_bash_echo", {"value": "a b", "uppercase": True})
    assert result.content == "A B"
    assert requests[0].summary == shown.summary and requests[0].plan_hash == shown.plan_hash
    greet = toolbox.preview_sync("json_greet", {"names": ["a", "b"]})
    assert greet.summary == "json_greet 2 name(s)"


def test_a_failing_preview_gives_an_empty_summary(tmp_path: Path) -> None:
    path = bash_tool(tmp_path, schema(), preview="echo partial; exit 1")
    toolbox = Toolbox.load(path, allow_bash_tools=True)
    shown = toolbox.preview_sync("probe_tool", {})
    assert shown.plan is not None and shown.summary == ""


def test_every_tool_kind_has_a_summary() -> None:
    handles = Toolbox.load(ROOT / "fixtures" / "handles")
    shown = handles.preview_sync("list-directory", {"path": "docs"})
    assert shown.summary.endswith("docs") and "ls" in shown.summary
    utcp = Toolbox.load(ROOT / "fixtures" / "utcp" / "api-basic-command-step.json")
    assert utcp.preview_sync(utcp.names()[0], {}).summary == "git status"


def test_a_plugin_s_credential_reaches_it_and_nothing_the_model_sees(tmp_path: Path) -> None:
    path = bash_tool(
        tmp_path,
        schema(
            security={"scheme": "apiKey", "name": "billing"},
            environment={"API_KEY": {"$credential": "value"}, "REGION": "eu"},
        ),
        run='echo "key=$API_KEY region=$REGION"',
        preview='echo "would use $API_KEY"',
    )
    events: list[AuditEvent] = []
    toolbox = Toolbox.load(
        path,
        allow_bash_tools=True,
        credentials=lambda principal, handle: {"value": CANARY},
        events=events.append,
    )
    lines: list[str] = []
    result = toolbox.call_sync("probe_tool", {}, on_output=lambda stream, line: lines.append(line))
    assert not result.is_error and result.content == "key=[credential] region=eu"
    shown = toolbox.preview_sync("probe_tool", {})
    assert shown.summary == "would use [credential]"
    assert shown.plan is not None and shown.plan["environment"]["API_KEY"] == "********"
    everything = json.dumps([result.to_json(), lines, [e.to_json() for e in events], shown.plan])
    assert CANARY not in everything
    assert [e.kind for e in events if e.kind in ("loaded", "spawned", "exited")][:3] == [
        "loaded",
        "spawned",
        "exited",
    ]


def test_output_streams_and_preview_or_error_output_does_not(tmp_path: Path) -> None:
    path = bash_tool(
        tmp_path,
        schema(),
        run="echo one; echo two >&2; exit 1",
        preview="echo previewed",
        error="echo formatted; exit 0",
    )
    toolbox = Toolbox.load(path, allow_bash_tools=True, approve=lambda request: True)
    lines: list[tuple[str, str]] = []
    result = toolbox.call_sync("probe_tool", {}, on_output=lambda s, line: lines.append((s, line)))
    assert result.content == "formatted"
    assert sorted(lines) == [("stderr", "two"), ("stdout", "one")]


def test_a_bash_tool_runs_in_the_sandbox(tmp_path: Path) -> None:
    from command_handle.executor import sandbox_support

    if not sandbox_support()["filesystem"]:
        pytest.skip("the kernel cannot enforce the sandbox here")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    outside = tmp_path / "outside"
    path = bash_tool(tmp_path / "tools", schema(), run=f'echo x > "{outside}" && echo wrote')
    policy = Policy(sandbox="workspace-write", workspace=str(workspace))
    toolbox = Toolbox.load(path, allow_bash_tools=True, policy=policy)
    result = toolbox.call_sync("probe_tool", {})
    assert result.is_error and not outside.exists()


async def _async_call(toolbox: Toolbox) -> Any:
    return await toolbox.call("template_bash_echo", {"value": "async", "uppercase": True})


def test_the_async_call_runs_the_same_flow() -> None:
    toolbox = Toolbox.load(ECHO, allow_bash_tools=True)
    assert anyio.run(_async_call, toolbox).content == "ASYNC"


# -- the command line ----------------------------------------------------------------


def test_the_cli_loads_calls_and_validates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["tools", str(PLUGINS)]) == 2
    assert "--allow-bash-tools" in capsys.readouterr().err
    assert main(["tools", str(PLUGINS), "--allow-bash-tools"]) == 0
    assert sorted(t["name"] for t in json.loads(capsys.readouterr().out)) == sorted(NAMES)
    args = ["call", str(CONFIG), "--tool", "json_greet", "--args", '{"names": ["x"]}']
    assert main([*args, "--tool-config", "greeting=Yo"]) == 0
    assert json.loads(capsys.readouterr().out)["content"] == "Yo, x!"
    assert main(["validate", str(PLUGINS), "--allow-bash-tools"]) == 0
    assert capsys.readouterr().out.count(": ok (") == 3
    assert main(["validate", str(PLUGINS)]) == 2
    (tmp_path / "notes.txt").write_text("x")
    assert main(["validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no tool in this folder" in err and "notes.txt: not a tool" in err
    assert main(["tools", str(tmp_path)]) == 2
    assert main(["call", str(tmp_path), "--tool", "x"]) == 2


def test_mcp_refuses_to_serve_a_folder_with_no_tool(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    done = subprocess.run(
        [PY, "-m", "command_handle", "mcp", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "no tool in this folder" in done.stderr


def text_of(result: Any) -> str:
    from mcp.types import TextContent

    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def test_mcp_serves_bash_tools_with_progress(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    text = tmp_path / "text.txt"
    text.write_text("".join(f"line {i}\n" for i in range(1, 6)))
    ticker = bash_tool(
        tmp_path / "more",
        schema("ticker"),
        run='for i in 0 1 2 3 4 5 6 7; do echo "tick $i"; sleep 0.25; done',
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    params = StdioServerParameters(
        command=PY,
        args=[
            "-m",
            "command_handle",
            "mcp",
            str(PLUGINS),
            str(ticker),
            "--allow-bash-tools",
            "--tool-config",
            "greeting=Hi",
        ],
        env=env,
        cwd=str(ROOT),
    )
    messages: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    async def main_() -> tuple[list[str], Any, Any, Any]:
        async with Client(params, cache=None) as client:
            listed = await client.list_tools()
            greet = await client.call_tool("json_greet", {"names": ["Ada", "Bo"]})
            ticks = await client.call_tool("ticker", {}, progress_callback=on_progress)
            assert text_of(ticks).endswith("tick 7")
            lines = await client.call_tool(
                "read_line_range", {"path": str(text), "start_line": 2, "end_line": 3}
            )
            failed = await client.call_tool(
                "read_line_range", {"path": str(tmp_path / "nope"), "start_line": 1, "end_line": 1}
            )
            return [tool.name for tool in listed.tools], greet, lines, failed

    names, greet, lines, failed = anyio.run(main_)

    assert sorted(names) == sorted([*NAMES, "ticker"])
    assert not greet.is_error and text_of(greet) == "Hi, Ada!\nHi, Bo!"
    assert any(message.startswith("tick ") for message in messages)
    assert text_of(lines) == "line 2\nline 3"
    assert failed.is_error and "could not read" in text_of(failed)


def test_an_edited_tool_file_is_refused_until_reloaded(tmp_path: Path) -> None:
    """What runs is the file whose schema was checked and whose plan an approver saw."""
    marker = tmp_path / "ran"
    path = bash_tool(tmp_path, schema(), run="echo original")
    events: list[AuditEvent] = []
    toolbox = Toolbox.load(path, allow_bash_tools=True, events=events.append)
    shown = toolbox.preview_sync("probe_tool", {})
    path.write_text(path.read_text().replace("echo original", f"touch {marker}"))
    result = toolbox.call_sync("probe_tool", {}, expect_plan=shown.plan_hash)
    assert result.is_error and "Nothing ran" in result.content and not marker.exists()
    assert "changed or went away" in events[-1].details["reason"]
    path.unlink()
    assert toolbox.call_sync("probe_tool", {}).is_error


def test_hostile_text_reaches_the_script_as_one_argument_or_is_refused(tmp_path: Path) -> None:
    path = bash_tool(tmp_path, schema(properties={"text": {"type": "string"}}))
    toolbox = Toolbox.load(path, allow_bash_tools=True)
    for text in ("a\nb", "$(touch x)", "`id`", "x' ; echo '", "*", "é\u202e"):
        assert report(toolbox.call_sync("probe_tool", {"text": text}))["argv"] == ["--text", text]
    refused = toolbox.call_sync("probe_tool", {"text": "a\x00b"})
    assert refused.is_error and "a\x00b" not in refused.content


def test_the_config_s_timeout_bounds_the_schema_run_too(tmp_path: Path) -> None:
    hanging = tmp_path / "hanging.bash"
    hanging.write_text(f"exec -a {CANARY}-schema sleep 30\n")
    config = {
        "plugins": [{"bash_tool": {"file": "hanging.bash"}}],
        "plugin_policy": {"allow_bash_tools": True, "bash_timeout_seconds": 0.5},
    }
    (tmp_path / "app.json").write_text(json.dumps(config))
    started = time.monotonic()
    with pytest.raises(ToolLoadError, match=r"within 0\.5 s"):
        Toolbox.load(tmp_path / "app.json", policy=Policy(timeout=60, kill_grace=0.2))
    assert time.monotonic() - started < 10
    assert subprocess.run(["pgrep", "-f", f"{CANARY}-schema"], capture_output=True).stdout == b""


# -- a bash tool whose program outlives its call (the session extension) ---------


def test_a_bash_tool_with_a_session_outlives_its_call_and_is_stopped(tmp_path: Path) -> None:
    document = schema("watcher", session={"ready": "watching", "yield_after": 10})
    path = bash_tool(tmp_path, document, run='echo "watching $*"; exec sleep 300')
    with Toolbox.load(path, allow_bash_tools=True) as toolbox:
        assert "process_read" in toolbox
        started = toolbox.call_sync("watcher", {})
        assert not started.is_error, started.content
        process_id = structured(started)["process_id"]
        assert structured(started)["running"] is True and "watching" in started.content
        pid = next(p.pid for p in toolbox.executor.processes() if p.id == process_id)
        assert os.path.exists(f"/proc/{pid}")
        stopped = toolbox.stop_process_sync(process_id)
        assert not stopped.is_error and structured(stopped)["running"] is False
    assert not os.path.exists(f"/proc/{pid}")


def test_a_bash_tool_s_bad_session_is_a_load_error_with_its_pointer(tmp_path: Path) -> None:
    path = bash_tool(tmp_path, schema("watcher", session={"ready": "(", "yield_after": 1}))
    with pytest.raises(ToolLoadError) as refused:
        Toolbox.load(path, allow_bash_tools=True)
    assert refused.value.pointer == "/session/ready" and str(path) in str(refused.value)


# -- found by attacking the loader and the call flow as an outsider -------------------


def test_a_script_edited_while_the_approver_looks_does_not_run(tmp_path: Path) -> None:
    """The file is checked again after the approver's yes, right before the run."""
    marker = tmp_path / "ran"
    path = bash_tool(tmp_path, schema(), run="echo original")

    def approve(request: ApprovalRequest) -> bool:
        path.write_text(path.read_text().replace("echo original", f"touch {marker}"))
        return True

    events: list[AuditEvent] = []
    toolbox = Toolbox.load(path, allow_bash_tools=True, approve=approve, events=events.append)
    result = toolbox.call_sync("probe_tool", {})
    assert result.is_error and "Nothing ran" in result.content and not marker.exists()
    assert [event.kind for event in events][-2:] == ["approved", "refused"]
    assert "changed or went away" in events[-1].details["reason"]


def test_a_config_found_in_a_folder_does_not_allow_its_own_bash_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config dropped into a folder of tools is like a .bash file dropped
    there: its plugin_policy counts only when the application names it."""
    marker = tmp_path / "schema-ran"
    script = tmp_path / "elsewhere" / "tool.bash"
    script.parent.mkdir()
    script.write_text(f"touch {marker}\n")
    tools = tmp_path / "tools"
    tools.mkdir()
    config = {"plugins": [f"bash:{script}"], "plugin_policy": {"allow_bash_tools": True}}
    (tools / "app.json").write_text(json.dumps(config))
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(tools)
    assert caught.value.path == str(tools / "app.json") and caught.value.pointer == "/plugins/0"
    assert "found in a folder" in str(caught.value) and "--allow-bash-tools" in str(caught.value)
    assert main(["validate", str(tools)]) == 2
    assert "found in a folder" in capsys.readouterr().err
    assert main(["tools", str(tools)]) == 2
    assert not marker.exists()
    with pytest.raises(ToolLoadError, match="printed nothing"):  # named: the application's
        Toolbox.load(tools / "app.json")
    assert marker.exists()


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink", "linked-folder"])
def test_a_plugin_s_descriptor_names_only_files_in_its_folder(tmp_path: Path, how: str) -> None:
    """A plugin (a git clone, say) cannot make this machine run one of its other
    files: not through "..", an absolute path or a symbolic link."""
    marker = tmp_path / "ran"
    outside = tmp_path / "outside" / "other.bash"
    outside.parent.mkdir()
    outside.write_text(f"touch {marker}\n")
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    listed = {
        "dotdot": "../outside/other.bash",
        "absolute": str(outside),
        "symlink": "tool.bash",
        "linked-folder": "lib/other.bash",
    }[how]
    if how == "symlink":
        (plugin / "tool.bash").symlink_to(outside)
    if how == "linked-folder":
        (plugin / "lib").symlink_to(outside.parent)
    (plugin / "agent_plugin.json").write_text(json.dumps({"bash_tools": [{"file": listed}]}))
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(plugin, allow_bash_tools=True)
    assert caught.value.path == str(plugin / "agent_plugin.json")
    assert caught.value.pointer == "/bash_tools/0/file"
    assert "outside the plugin's folder" in str(caught.value)
    assert not marker.exists()


def test_a_relative_git_path_is_the_document_s_and_control_characters_are_refused(
    repository: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    """git runs in the cache folder: a relative path must not be read from there,
    and two documents' "./repo" are two repositories, two cache folders."""
    config = {
        "plugins": [{"bash_tool": {"git": "./repo", "ref": "v0.1.0"}}],
        "plugin_policy": {"allow_bash_tools": True},
    }
    (tmp_path / "app.json").write_text(json.dumps(config))
    assert Toolbox.load(tmp_path / "app.json").names() == ["read_line_range"]
    monkeypatch.chdir(tmp_path)
    assert Toolbox.load("bash+git:repo#v0.1.0", allow_bash_tools=True).names() == [
        "read_line_range"
    ]
    other = tmp_path / "other"
    other.mkdir()
    (other / "app.json").write_text(json.dumps(config))  # its ./repo does not exist
    with pytest.raises(ToolLoadError, match="could not get"):
        Toolbox.load(other / "app.json")
    for ref in ("v0.1.0\n--upload-pack=x", "v0.1.0\x00x"):
        with pytest.raises(ToolLoadError, match="control characters"):
            Toolbox.load(f"bash+git:{repository}#{ref}", allow_bash_tools=True)
    assert len(list((cache / "command-handle" / "git").iterdir())) == 1


def test_a_plugin_or_config_that_yields_no_tool_is_never_silent(tmp_path: Path) -> None:
    """An agent_plugin.json listing nothing is an error in every form; an MCP
    server with nothing to serve does not start, and says what it skipped."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "agent_plugin.json").write_text('{"bash_tools": []}')
    for given in (plugin, plugin / "agent_plugin.json", f"bash:{plugin}"):
        with pytest.raises(ToolLoadError) as caught:
            Toolbox.load(given, allow_bash_tools=True)
        assert caught.value.path == str(plugin / "agent_plugin.json")
        assert "lists no tool" in str(caught.value) and caught.value.pointer == "/bash_tools"
    config = tmp_path / "app.json"
    config.write_text(json.dumps({"plugins": ["path:./x"], "plugin_policy": {}}))
    done = subprocess.run(
        [PY, "-m", "command_handle", "mcp", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert "no tool to serve" in done.stderr and "'path:./x' is not a bash tool" in done.stderr


def test_a_cache_that_cannot_be_used_is_a_load_error_naming_it(repository: Path) -> None:
    """An unprivileged user whose cache folder is not theirs gets a load error,
    not an exception of the file system."""
    from .processes import unprivileged

    def scenario() -> dict[str, Any]:
        try:
            Toolbox.load(
                f"bash+git:{repository}#v0.1.0", allow_bash_tools=True, plugin_cache="/root/x"
            )
        except ToolLoadError as exc:
            return {"error": str(exc), "type": type(exc).__name__}
        return {"error": ""}

    if os.geteuid() != 0:
        pytest.skip("dropping to an unprivileged user needs root")
    seen = unprivileged(scenario)
    assert seen["type"] == "ToolLoadError", seen
    assert "the plugin cache /root/x/git cannot be used" in seen["error"]
    assert "plugin_cache" in seen["error"]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_cache_another_user_could_write_is_not_trusted(
    repository: Path, tmp_path: Path, cache: Path
) -> None:
    """A planted clone (or schema) in a cache folder that is not ours does not run."""
    from command_handle.plugins import git_folder_name

    marker = tmp_path / "planted-ran"
    git_root = cache / "command-handle" / "git"
    planted = git_root / git_folder_name(str(repository), "v0.1.0")
    bash_tool(planted, schema("planted"), run=f"touch {marker}", file="planted.bash")
    (planted / "agent_plugin.json").write_text('{"bash_tools": [{"file": "planted.bash"}]}')
    os.chown(planted, 65534, 65534)
    with pytest.raises(ToolLoadError, match="not private") as caught:
        Toolbox.load(f"bash+git:{repository}#v0.1.0", allow_bash_tools=True)
    assert str(planted) in str(caught.value)
    os.chown(planted, 0, 0)
    git_root.chmod(0o777)
    with pytest.raises(ToolLoadError, match="not private"):
        Toolbox.load(f"bash+git:{repository}#v0.1.0", allow_bash_tools=True)
    assert not marker.exists()

    # A schema planted for a script's content in a shared schema folder is not read.
    script = bash_tool(tmp_path / "tools", schema("real_tool"))
    schemas = cache / "command-handle" / "bash-schemas"
    schemas.mkdir(parents=True)
    schemas.chmod(0o777)
    digest = hashlib.sha256(script.read_bytes()).hexdigest()
    (schemas / f"{digest}.json").write_text(json.dumps(schema("planted_tool")))
    assert Toolbox.load(script, allow_bash_tools=True).names() == ["real_tool"]


def test_a_summary_shows_control_characters_as_escapes(tmp_path: Path) -> None:
    """A preview line (or a handle's argv) may carry the model's words: escape
    sequences and bidirectional overrides are shown, not obeyed, by a person's
    terminal or page."""
    path = bash_tool(tmp_path, schema(properties={"text": {"type": "string"}}))
    requests: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        requests.append(request)
        return True

    toolbox = Toolbox.load(path, allow_bash_tools=True, approve=approve)
    hostile = "safe\x1b[2K\x1b[1Grm -rf ~ \u202eexe.txt\x07"
    shown = toolbox.preview_sync("probe_tool", {"text": hostile})
    assert shown.summary == "preview --text safe\\x1b[2K\\x1b[1Grm -rf ~ \\u202eexe.txt\\x07"
    toolbox.call_sync("probe_tool", {"text": hostile})
    assert requests[0].summary == shown.summary
    handles = Toolbox.load(ROOT / "fixtures" / "handles")
    listed = handles.preview_sync("list-directory", {"path": "a\x1b]0;x\x07"}).summary
    assert "\x1b" not in listed and "\\x1b]0;x\\x07" in listed


def test_call_prints_why_a_call_was_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The model reads "its log says why"; at the command line the person is the
    application, and the reason is on standard error."""
    path = bash_tool(tmp_path, schema(environment={"LD_PRELOAD": "/tmp/x.so"}))
    assert (
        main(["call", str(path), "--allow-bash-tools", "--tool", "probe_tool"]) == 2
    )  # refused: nothing ran
    captured = capsys.readouterr()
    assert "its log says why" in captured.out
    assert "probe_tool: refused: LD_PRELOAD" in captured.err


def test_a_tool_file_anyone_may_write_is_a_load_error(tmp_path: Path) -> None:
    """Whoever may write the script chooses what runs, with the application's user."""
    path = bash_tool(tmp_path, schema())
    path.chmod(0o666)
    with pytest.raises(ToolLoadError, match=r"every user .*chmod o-w") as caught:
        Toolbox.load(path, allow_bash_tools=True)
    assert caught.value.path == str(path)
    path.chmod(0o644)
    assert Toolbox.load(path, allow_bash_tools=True).names() == ["probe_tool"]


def test_a_clone_made_under_a_group_umask_is_reused(repository: Path) -> None:
    """git makes a clone with the umask's modes (0775 under umask 002): inside
    the private cache folder, that is no one else's to write."""
    old = os.umask(0o002)
    try:
        first = Toolbox.load(f"bash+git:{repository}#v0.1.0", allow_bash_tools=True)
        again = Toolbox.load(f"bash+git:{repository}#v0.1.0", allow_bash_tools=True)
    finally:
        os.umask(old)
    assert first.names() == again.names() == ["read_line_range"]


@pytest.mark.parametrize("document", [{"plugins": []}, {"plugin_policy": {}}])
def test_a_config_that_lists_no_plugin_is_a_load_error(
    tmp_path: Path, document: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "app.json"
    config.write_text(json.dumps(document))
    with pytest.raises(ToolLoadError, match="lists no plugin") as caught:
        Toolbox.load(config, allow_bash_tools=True)
    assert caught.value.path == str(config) and caught.value.pointer == "/plugins"
    assert main(["tools", str(config)]) == 2
    assert capsys.readouterr().out == ""


def test_events_name_the_preview_and_error_runs(tmp_path: Path) -> None:
    """The preview runs before the approval: its events say it was the preview,
    so an audit log does not show the tool running before it was approved."""
    path = bash_tool(tmp_path, schema(), run="exit 3", error='echo "formatted"')
    events: list[AuditEvent] = []
    toolbox = Toolbox.load(
        path, allow_bash_tools=True, approve=lambda request: True, events=events.append
    )
    result = toolbox.call_sync("probe_tool", {})
    assert result.is_error and result.content == "formatted"
    seen = [
        (event.kind, event.details.get("subcommand", ""))
        for event in events
        if event.kind != "loaded"
    ]
    assert seen == [
        ("spawned", "preview"),
        ("exited", "preview"),
        ("approved", ""),
        ("spawned", ""),
        ("exited", ""),
        ("spawned", "error"),
        ("exited", "error"),
    ]
    assert events[-1].details["exit_code"] == 0 and events[-3].details["exit_code"] == 3


def test_a_failing_schema_s_message_is_shown_not_obeyed(tmp_path: Path) -> None:
    """The last line of a failing schema's stderr reaches the operator's
    terminal in the load error: its escape sequences are shown as text."""
    path = tmp_path / "loud.bash"
    path.write_text('printf "\\033]0;retitled\\007\\033[2Jcleared\\n" >&2; exit 3\n')
    with pytest.raises(ToolLoadError) as caught:
        Toolbox.load(path, allow_bash_tools=True)
    message = str(caught.value)
    assert "\x1b" not in message and "\x07" not in message
    assert "exit status 3: \\x1b]0;retitled\\x07\\x1b[2Jcleared" in message


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_tool_file_of_another_user_is_a_load_error(tmp_path: Path) -> None:
    """Its owner could change what runs as this user: a tool file is this user's
    or root's, as ssh asks of the files it trusts."""
    path = bash_tool(tmp_path, schema())
    os.chown(path, 65534, 65534)
    with pytest.raises(ToolLoadError, match=r"another user \(uid 65534\)") as caught:
        Toolbox.load(path, allow_bash_tools=True)
    assert caught.value.path == str(path)
    os.chown(path, 0, 0)
    assert Toolbox.load(path, allow_bash_tools=True).names() == ["probe_tool"]


def test_a_fifo_in_the_tool_file_s_place_is_refused_without_hanging(tmp_path: Path) -> None:
    path = bash_tool(tmp_path, schema(), run="echo original")
    toolbox = Toolbox.load(path, allow_bash_tools=True)
    path.unlink()
    os.mkfifo(path)
    started = time.monotonic()
    result = toolbox.call_sync("probe_tool", {})
    assert result.is_error and "Nothing ran" in result.content
    assert time.monotonic() - started < 30
