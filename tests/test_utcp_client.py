"""UtcpClient: utcp's client surface for CLI manuals, on the core; variables in the
Toolbox, ``call`` and ``mcp``; manuals discovered at load and named ``manual.tool``."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio

from command_handle import Policy
from command_handle.call import PlanResult
from command_handle.errors import EnvironmentVariableError, HandleError
from command_handle.toolbox import Toolbox, ToolLoadError
from command_handle.utcp import (
    MAX_VARIABLES_FILE,
    ProtocolNotAllowedError,
    UnknownToolError,
    UtcpClient,
    UtcpLoadError,
    dotenv_variables,
)

from .processes import PROBE, PY, ROOT, wait_dead

CANARY = "canary-7c1e9d0b4a"


def manual(*extra_tools: dict[str, Any]) -> dict[str, Any]:
    """A manual whose ``probe`` tool prints what the program got (argv, env) as JSON."""
    return {
        "manual_version": "1.0.0",
        "utcp_version": "1.0.2",
        "tools": [
            {
                "name": "probe",
                "description": "Report the arguments and environment the program received",
                "tags": ["diagnostics", "probe"],
                "inputs": {
                    "type": "object",
                    "properties": {"q": {"type": "string"}},
                    "required": ["q"],
                },
                "tool_call_template": {
                    "call_template_type": "cli",
                    "commands": [{"command": f"{PY} {PROBE} UTCP_ARG_q_UTCP_END"}],
                    "env_vars": {"TOKEN": "${TOKEN}"},
                },
            },
            {
                "name": "count",
                "description": "Count the words of a text",
                "tags": ["text"],
                "inputs": {"type": "object", "properties": {"text": {"type": "string"}}},
                "tool_call_template": {
                    "call_template_type": "cli",
                    "commands": [{"command": "echo UTCP_ARG_text_UTCP_END"}],
                },
            },
            *extra_tools,
        ],
    }


HTTP_TOOL = {
    "name": "weather",
    "description": "Get the weather",
    "tool_call_template": {"call_template_type": "http", "url": "https://example.com/w"},
}


def discovery(directory: Path, name: str = "readme_tools", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "call_template_type": "cli",
        "commands": [{"command": "cat manual.json"}],
        "working_dir": str(directory),
        **extra,
    }


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "manual.json").write_text(json.dumps(manual(HTTP_TOOL)))
    monkeypatch.chdir(tmp_path)
    return tmp_path


# The UTCP README's client.py ("Using the UTCP Client"), its three ways of making
# a client, with the manual a CLI discovery template instead of an HTTP one. Only
# the import lines differ between the two runs below.
README_CLIENT = """
async def main():
    # Option 1: Initialize from a config file path
    client_from_file = await UtcpClient.create(config="./config.json")

    # Option 2: Initialize from a dictionary
    client_from_dict = await UtcpClient.create(config={
        "variables": {"readme__tools_GREETING": "hello"},
        "load_variables_from": [
            {"variable_loader_type": "dotenv", "env_file_path": ".env"}
        ],
        "tool_repository": {"tool_repository_type": "in_memory"},
        "tool_search_strategy": {"tool_search_strategy_type": "tag_and_description_word_match"},
        "manual_call_templates": [MANUAL_TEMPLATE],
        "post_processing": [
            {
                "tool_post_processor_type": "filter_dict",
                "only_include_keys": ["argv", "TOKEN"],
                "only_include_tools": ["readme_tools.probe"],
            }
        ],
    })

    # Option 3: Initialize with a full-featured UtcpClientConfig object
    config_obj = UtcpClientConfig(
        variables={"readme__tools_GREETING": "hello"},
        load_variables_from=[
            VariableLoaderSerializer().validate_dict({
                "variable_loader_type": "dotenv", "env_file_path": ".env"
            })
        ],
        manual_call_templates=[CliCallTemplate(**MANUAL_TEMPLATE)],
        post_processing=[
            ToolPostProcessorConfigSerializer().validate_dict({
                "tool_post_processor_type": "filter_dict",
                "only_include_keys": ["argv", "TOKEN"],
                "only_include_tools": ["readme_tools.probe"],
            })
        ],
    )
    client = await UtcpClient.create(config=config_obj)

    results = []
    for each in (client_from_file, client_from_dict, client):
        # Call a tool. The name is namespaced: `manual_name.tool_name`
        result = await each.call_tool(
            tool_name="readme_tools.probe", tool_args={"q": "J. K. Rowling"}
        )
        results.append(result)
    found = await client.search_tools("diagnostics for a probe", limit=1)
    return results, [tool.name for tool in found]
"""

OURS = """
from command_handle.utcp import UtcpClient, UtcpClientConfig, CliCallTemplate
from command_handle.utcp import VariableLoaderSerializer, ToolPostProcessorConfigSerializer
"""
THEIRS = """
from utcp.utcp_client import UtcpClient
from utcp.data.utcp_client_config import UtcpClientConfig
from utcp_cli.cli_call_template import CliCallTemplate
from utcp.data.variable_loader import VariableLoaderSerializer
from utcp.interfaces.tool_post_processor import ToolPostProcessorConfigSerializer
"""


def run_readme(imports: str, template: dict[str, Any]) -> Any:
    namespace: dict[str, Any] = {"MANUAL_TEMPLATE": template}
    exec(textwrap.dedent(imports) + README_CLIENT, namespace)
    return asyncio.run(namespace["main"]())


def readme_files(workdir: Path) -> dict[str, Any]:
    template = discovery(workdir)
    (workdir / ".env").write_text(f"readme__tools_TOKEN={CANARY}\n")
    (workdir / "config.json").write_text(
        json.dumps(
            {
                "load_variables_from": [
                    {"variable_loader_type": "dotenv", "env_file_path": ".env"}
                ],
                "manual_call_templates": [template],
            }
        )
    )
    return template


def test_the_readme_client_example_runs_with_only_the_import_changed(workdir: Path) -> None:
    template = readme_files(workdir)
    results, found = run_readme(OURS, template)
    from_file, from_dict, from_object = results
    assert from_file["argv"] == ["J. K. Rowling"]
    assert from_file["env"]["TOKEN"] == CANARY  # from the dotenv file, namespaced
    # filter_dict kept only argv and TOKEN (at any depth), as in utcp
    assert from_dict == from_object == {"argv": from_file["argv"], "env": {"TOKEN": CANARY}}
    assert found == ["readme_tools.probe"]


def test_the_readme_client_example_gives_what_utcp_gives(workdir: Path) -> None:
    pytest.importorskip("utcp_cli", reason="the peer (pip install '.[bench]')")
    template = readme_files(workdir)
    ours, _ = run_readme(OURS, template)
    theirs, _ = run_readme(THEIRS, template)
    assert [r["argv"] for r in ours] == [r["argv"] for r in theirs]
    assert ours[1:] == [
        {"argv": theirs[1]["argv"], "env": theirs[1]["env"]},
        {"argv": theirs[2]["argv"], "env": theirs[2]["env"]},
    ]
    assert ours[0]["env"]["TOKEN"] == theirs[0]["env"]["TOKEN"] == CANARY


def client(config: dict[str, Any], **kw: Any) -> UtcpClient:
    return asyncio.run(UtcpClient.create(config=config, **kw))


def test_variables_are_namespaced_by_manual_and_never_read_from_the_host(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # manual "manual_1" reads API_KEY as manual__1_API_KEY, as the README says
    (workdir / "manual.json").write_text(json.dumps(manual()).replace("${TOKEN}", "${API_KEY}"))
    monkeypatch.setenv("manual__1_API_KEY", "from-the-host")
    monkeypatch.setenv("API_KEY", "from-the-host")
    bare = client({"manual_call_templates": [discovery(workdir, "manual_1")]})
    # named as this client looks it up, and where to give it
    with pytest.raises(EnvironmentVariableError, match=r"give manual__1_API_KEY .*variables"):
        asyncio.run(bare.call_tool("manual_1.probe", {"q": "x"}))

    (workdir / "vars.env").write_text("manual__1_API_KEY=from-file\nAPI_KEY=bare-file\n")
    configured = client(
        {
            "variables": {"API_KEY": "bare-config"},
            "load_variables_from": [
                {"variable_loader_type": "dotenv", "env_file_path": "vars.env"}
            ],
            "manual_call_templates": [discovery(workdir, "manual_1")],
        }
    )
    got = asyncio.run(configured.call_tool("manual_1.probe", {"q": "x"}))
    assert got["env"]["TOKEN"] == "from-file"  # the namespaced name wins over a bare one
    # the dotenv file is read at each call
    (workdir / "vars.env").write_text("manual__1_API_KEY=edited\n")
    got = asyncio.run(configured.call_tool("manual_1.probe", {"q": "x"}))
    assert got["env"]["TOKEN"] == "edited"
    assert asyncio.run(configured.get_required_variables_for_registered_tool("manual_1.probe")) == [
        "manual__1_API_KEY"
    ]


def test_allowed_communication_protocols_filter_at_registration_and_at_call(
    workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="command_handle"):
        default = client({"manual_call_templates": [discovery(workdir)]})
    assert "'weather' uses communication protocol 'http' which is not in allowed" in caplog.text
    names = [t.name for t in asyncio.run(default.search_tools("", limit=10))]
    assert names == ["readme_tools.probe", "readme_tools.count"]
    with pytest.raises(UnknownToolError, match=r"Tool not found: readme_tools\.weather"):
        asyncio.run(default.call_tool("readme_tools.weather", {}))

    both = UtcpClient(default.config)
    result = asyncio.run(
        both.register_manual(discovery(workdir, allowed_communication_protocols=["cli", "http"]))
    )
    assert result.success and "readme_tools.weather" in result.errors[0]
    with pytest.raises(ProtocolNotAllowedError, match="communication protocol 'http'"):
        asyncio.run(both.call_tool("readme_tools.weather", {}))

    empty = UtcpClient(default.config)  # [] is the default: the manual's own protocol
    asyncio.run(empty.register_manual(discovery(workdir, allowed_communication_protocols=[])))
    assert [t.name for t in asyncio.run(empty.search_tools("", limit=10))] == names

    only_http = UtcpClient(default.config)
    asyncio.run(
        only_http.register_manual(discovery(workdir, allowed_communication_protocols=["http"]))
    )
    assert asyncio.run(only_http.search_tools("probe")) == []
    with pytest.raises(ProtocolNotAllowedError):
        asyncio.run(only_http.call_tool("readme_tools.weather", {}))


def test_a_manual_template_of_another_protocol_is_refused_by_name() -> None:
    with pytest.raises(UtcpLoadError, match="'http'") as caught:
        client({"manual_call_templates": [{"name": "api", "call_template_type": "http"}]})
    assert caught.value.pointer == "/manual_call_templates/0/call_template_type"
    with pytest.raises(UtcpLoadError, match="unknown field") as caught:
        client({"manual_call_template": []})
    assert caught.value.pointer == "/manual_call_template"


def test_register_deregister_search_and_post_processing(workdir: Path) -> None:
    config = {
        "manual_call_templates": [discovery(workdir)],
        "post_processing": [{"tool_post_processor_type": "limit_strings", "limit": 3}],
    }
    made = client(config)
    with pytest.raises(UtcpLoadError, match="already registered"):
        asyncio.run(made.register_manual(discovery(workdir)))
    assert asyncio.run(made.call_tool("readme_tools.count", {"text": "abcdef"})) == "abc"
    ranked = asyncio.run(made.search_tools("count the words", limit=2))
    assert [t.name for t in ranked] == ["readme_tools.count", "readme_tools.probe"]
    tagged = asyncio.run(made.search_tools("x", any_of_tags_required=["TEXT"]))
    assert [t.name for t in tagged] == ["readme_tools.count"]
    assert asyncio.run(made.deregister_manual("readme_tools")) is True
    assert asyncio.run(made.deregister_manual("readme_tools")) is False
    with pytest.raises(UnknownToolError):
        asyncio.run(made.call_tool("readme_tools.count", {"text": "a"}))
    asyncio.run(made.close())


def test_a_manual_that_prints_no_manual_fails_create(workdir: Path) -> None:
    template = {"name": "empty", "call_template_type": "cli", "commands": [{"command": "true"}]}
    with pytest.raises(UtcpLoadError, match="'empty' could not be registered"):
        client({"manual_call_templates": [template]})


def test_calls_run_under_the_policy_and_under_trio(workdir: Path) -> None:
    config: dict[str, Any] = {"manual_call_templates": [discovery(workdir)]}
    cat = "/usr/bin/cat" if os.path.exists("/usr/bin/cat") else "/bin/cat"
    config["variables"] = {"readme__tools_TOKEN": "x"}
    strict = client(config, policy=Policy(allowed_commands=frozenset({cat})))
    with pytest.raises(HandleError, match="does not allow the command"):
        asyncio.run(strict.call_tool("readme_tools.probe", {"q": "a"}))

    async def under_trio() -> object:
        made = await UtcpClient.create(config=config)
        return await made.call_tool("readme_tools.count", {"text": "hi"})

    assert trio.run(under_trio) == "hi"


# -- the Toolbox, call and mcp ---------------------------------------------------


def toolbox_files(tmp_path: Path) -> Path:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tmp_path / "manual.json").write_text(json.dumps(manual(HTTP_TOOL)))
    (tools / "client.json").write_text(
        json.dumps({"manual_call_templates": [discovery(tmp_path, "team")]})
    )
    (tmp_path / "team.env").write_text(f"team_TOKEN={CANARY}\n")
    return tools


def test_a_toolbox_discovers_manuals_at_load_and_names_them_both_ways(tmp_path: Path) -> None:
    tools = toolbox_files(tmp_path)
    box = Toolbox.load(tools, variable_files=[tmp_path / "team.env"], secret_variables=["TOKEN"])
    assert box.names() == ["team_probe", "team_count"]
    assert box["team.probe"] is box["team_probe"] and "team.count" in box
    assert [d["name"] for d in box.describe("mcp")] == ["team.probe", "team.count"]
    assert [d["function"]["name"] for d in box.describe("openai")] == ["team_probe", "team_count"]
    assert any("weather" in note for note in box.skipped)

    result = box.call_sync("team.probe", {"q": "hi"})
    assert not result.is_error
    # the secret variable reached the program, and is redacted from what is shown
    assert isinstance(result.result, PlanResult) and CANARY in result.result.output
    assert CANARY not in result.content and CANARY not in json.dumps(result.structured)
    preview = anyio.run(lambda: box.preview("team.probe", {"q": "hi"}))
    assert preview.plan is not None and CANARY not in json.dumps(preview.plan)


def test_a_missing_variable_is_refused_naming_it_and_how_to_give_it(tmp_path: Path) -> None:
    events: list[Any] = []
    box = Toolbox.load(toolbox_files(tmp_path), events=events.append)
    result = box.call_sync("team_probe", {"q": "hi"})
    # the model is told nothing ran and that the application must act; the log says why
    assert result.is_error and "Nothing ran" in result.content
    refused = [e for e in events if e.kind == "refused"]
    assert "'TOKEN'" in refused[0].details["reason"]
    assert "variable_files=" in refused[0].details["reason"]
    assert not [e for e in events if e.kind == "spawned"]


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "command_handle", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_call_takes_variables_from_flags(tmp_path: Path) -> None:
    tools = toolbox_files(tmp_path)
    done = cli("call", str(tools), "--tool", "team.probe", "--args", '{"q": "a"}')
    assert done.returncode != 0 and "Nothing ran" in done.stdout
    assert "'TOKEN'" in done.stderr and "--variable NAME=VALUE" in done.stderr

    given = cli(
        "call", str(tools), "--tool", "team.probe", "--args", '{"q": "a"}',
        "--variable", "team_TOKEN=on-the-command-line",
    )  # fmt: skip
    assert given.returncode == 0, given.stderr
    assert "on-the-command-line" in given.stdout

    secret = cli(
        "call", str(tools), "--tool", "team_probe", "--args", '{"q": "a"}',
        "--variables-file", str(tmp_path / "team.env"), "--secret-variable", "TOKEN",
    )  # fmt: skip
    assert secret.returncode == 0, secret.stderr
    assert CANARY not in secret.stdout and "[credential]" in secret.stdout


def test_mcp_serves_manual_tools_as_manual_dot_tool_with_variables(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    tools = toolbox_files(tmp_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "command_handle",
            "mcp",
            str(tools),
            "--variables-file",
            str(tmp_path / "team.env"),
            "--secret-variable",
            "team_TOKEN",
        ],
        cwd=str(ROOT),
    )

    async def main() -> tuple[list[str], Any]:
        async with Client(params, cache=None) as session:
            listed = await session.list_tools()
            return [t.name for t in listed.tools], await session.call_tool("team.probe", {"q": "z"})

    names, result = anyio.run(main)
    assert names == ["team.probe", "team.count"]
    assert result.is_error is False
    text = result.content[0].text
    assert '"z"' in text and CANARY not in text and "[credential]" in text


def test_one_manual_never_reads_another_manuals_variables(tmp_path: Path) -> None:
    (tmp_path / "manual.json").write_text(
        json.dumps(manual()).replace("${TOKEN}", "${other_TOKEN}")
    )
    config = {
        "variables": {"other_TOKEN": CANARY},
        "manual_call_templates": [discovery(tmp_path, "reader"), discovery(tmp_path, "other")],
    }
    made = client(config)
    with pytest.raises(EnvironmentVariableError, match="'other_TOKEN'"):
        asyncio.run(made.call_tool("reader.probe", {"q": "x"}))
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "client.json").write_text(
        json.dumps({"manual_call_templates": config["manual_call_templates"]})
    )
    box = Toolbox.load(tools, variables={"other_TOKEN": CANARY})
    result = box.call_sync("reader.probe", {"q": "x"})
    assert result.is_error and CANARY not in json.dumps(result.to_json())


def test_toolbox_discovery_honours_allowed_protocols_and_its_timeout(tmp_path: Path) -> None:
    tools = toolbox_files(tmp_path)
    config = json.loads((tools / "client.json").read_text())
    config["manual_call_templates"][0]["allowed_communication_protocols"] = ["http"]
    (tools / "client.json").write_text(json.dumps(config))
    # Every tool filtered out leaves the folder with none: an error saying why.
    with pytest.raises(ToolLoadError, match=r"no tool in this folder: .*allowed_communication"):
        Toolbox.load(tools)
    box = Toolbox.load(tools / "client.json")
    assert box.names() == [] and any("allowed_communication_protocols" in n for n in box.skipped)

    slow = {
        "name": "slow",
        "call_template_type": "cli",
        "commands": [{"command": f"{PY} -c 'import time; time.sleep(30)'"}],
        "timeout": 300,
    }
    (tools / "client.json").write_text(json.dumps({"manual_call_templates": [slow]}))
    with pytest.raises(ToolLoadError, match=r"'slow' failed: .*timed out after 0\.3 s") as failed:
        Toolbox.load(tools)
    assert failed.value.pointer == "/manual_call_templates/0"


def test_two_manuals_with_one_utcp_name_are_refused(tmp_path: Path) -> None:
    for stem in ("team-a", "team_a"):
        (tmp_path / f"{stem}.json").write_text(json.dumps(manual()))
    with pytest.raises(ToolLoadError, match=r"'team_a\.probe' is also defined in"):
        Toolbox.load(tmp_path)


def test_a_discovered_description_holding_a_secret_is_refused(tmp_path: Path) -> None:
    tools = toolbox_files(tmp_path)
    leaky = manual()
    leaky["tools"][1]["description"] = f"counts words; token {CANARY}"
    (tmp_path / "manual.json").write_text(json.dumps(leaky))
    files = [tmp_path / "team.env"]
    with pytest.raises(ToolLoadError, match="'team_count' holds the value of a secret") as refused:
        Toolbox.load(tools, variable_files=files, secret_variables=["TOKEN"])
    assert CANARY not in str(refused.value)
    assert Toolbox.load(tools, variable_files=files).names() == ["team_probe", "team_count"]
    # a value with a quote or a backslash, which JSON text escapes, is found too;
    # so is one in a schema's key
    quoted = 'k"ey\\' + CANARY
    leaky["tools"][1]["description"] = f"token {quoted}"
    (tmp_path / "manual.json").write_text(json.dumps(leaky))
    with pytest.raises(ToolLoadError, match="'team_count' holds the value of a secret"):
        Toolbox.load(tools, variables={"team_TOKEN": quoted}, secret_variables=["TOKEN"])
    leaky["tools"][1]["description"] = "counts words"
    leaky["tools"][1]["inputs"]["properties"] = {quoted: {"type": "string"}}
    (tmp_path / "manual.json").write_text(json.dumps(leaky))
    with pytest.raises(ToolLoadError, match="'team_count' holds the value of a secret"):
        Toolbox.load(tools, variables={"team_TOKEN": quoted}, secret_variables=["TOKEN"])


def test_the_mcp_server_log_says_why_a_call_was_refused(tmp_path: Path) -> None:
    tools = toolbox_files(tmp_path)
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "log-test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "team.probe", "arguments": {"q": "x"}},
        },
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "command_handle", "mcp", str(tools)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    for message in messages:
        process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()
    reply: dict[str, Any] = {}
    while reply.get("id") != 2:
        line = process.stdout.readline()
        assert line, "the server closed stdout"
        reply = json.loads(line)
    process.stdin.close()
    assert process.wait(timeout=30) == 0 and process.stderr is not None
    stderr = process.stderr.read().decode()
    process.stdout.close()
    process.stderr.close()
    assert reply["result"]["isError"] is True
    assert "'TOKEN'" in stderr and "--variable NAME=VALUE" in stderr


def test_a_discovery_that_times_out_says_so(tmp_path: Path) -> None:
    slow = {
        "name": "slow",
        "call_template_type": "cli",
        "commands": [{"command": f"{PY} -c 'import time; time.sleep(30)'"}],
        "timeout": 300,
    }
    with pytest.raises(UtcpLoadError, match=r"'slow' could not be registered: .* 0\.3 s"):
        client({"manual_call_templates": [slow]})


def test_utcp_run_and_tools_take_variables(tmp_path: Path) -> None:
    (tmp_path / "manual.json").write_text(json.dumps(manual()))
    template = tmp_path / "discovery.json"
    found = discovery(tmp_path, "team")
    template.write_text(
        json.dumps({**found, "commands": [{"command": "cat $F"}], "env_vars": {"F": "${FILE}"}})
    )
    listed = cli("utcp", "tools", str(template), "--variable", "FILE=manual.json")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("probe: ")
    refused = cli("utcp", "tools", str(template))
    assert refused.returncode != 0 and "'FILE'" in refused.stderr

    printer = tmp_path / "printer.json"
    printer.write_text(
        json.dumps(
            {
                "name": "m_1",
                "call_template_type": "cli",
                "commands": [{"command": "echo $KEY"}],
                "env_vars": {"KEY": "${API_KEY}"},
            }
        )
    )
    (tmp_path / "vars.env").write_text("m__1_API_KEY=from-file\n")
    from_file = cli("utcp", "run", str(printer), "--variables-file", str(tmp_path / "vars.env"))
    assert from_file.stdout.strip() == "from-file", from_file.stderr
    flag = cli(
        "utcp", "run", str(printer), "--variables", '{"API_KEY": "j"}', "--variable", "API_KEY=k"
    )
    assert flag.stdout.strip() == "k", flag.stderr


def test_a_manual_never_reads_a_longer_named_manuals_variables(tmp_path: Path) -> None:
    # UTCP's doubling makes ``a__b_TOKEN`` both manual ``a_b``'s TOKEN and manual
    # ``a``'s ``_b_TOKEN``: the name belongs to ``a_b`` alone.
    (tmp_path / "manual.json").write_text(json.dumps(manual()))
    reader = tmp_path / "reader"
    reader.mkdir()
    (reader / "manual.json").write_text(json.dumps(manual()).replace("${TOKEN}", "${_b_TOKEN}"))
    config = {
        "variables": {"a__b_TOKEN": CANARY},
        "manual_call_templates": [discovery(reader, "a"), discovery(tmp_path, "a_b")],
    }
    made = client(config)
    assert CANARY in json.dumps(asyncio.run(made.call_tool("a_b.probe", {"q": "x"})))
    with pytest.raises(EnvironmentVariableError, match="'_b_TOKEN'"):
        asyncio.run(made.call_tool("a.probe", {"q": "x"}))
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "client.json").write_text(
        json.dumps({"manual_call_templates": config["manual_call_templates"]})
    )
    box = Toolbox.load(tools, variables={"a__b_TOKEN": CANARY})
    assert CANARY in json.dumps(box.call_sync("a_b.probe", {"q": "x"}).to_json())
    result = box.call_sync("a.probe", {"q": "x"})
    assert result.is_error and CANARY not in json.dumps(result.to_json())


def test_a_variables_file_must_be_a_small_regular_file(tmp_path: Path) -> None:
    # read at each call: a FIFO would block every call, a device never end
    fifo = tmp_path / "fifo.env"
    os.mkfifo(fifo)
    big = tmp_path / "big.env"
    big.write_text("A=" + "a" * MAX_VARIABLES_FILE + "\n")
    for path, why in (
        (fifo, "is not a regular file"),
        (Path("/dev/zero"), "is not a regular file"),
        (big, "is larger than"),
        (tmp_path, "Is a directory"),
        (tmp_path / "missing.env", "No such file"),
    ):
        with pytest.raises(UtcpLoadError, match=why):
            dotenv_variables(path)
    # a link to a file is read as the file; nothing is interpolated
    (tmp_path / "real.env").write_text('A=1\nB=${A}x\nC=${HOME}\nD="$(id)"\n')
    (tmp_path / "link.env").symlink_to(tmp_path / "real.env")
    assert dotenv_variables(tmp_path / "link.env") == {
        "A": "1",
        "B": "${A}x",
        "C": "${HOME}",
        "D": "$(id)",
    }
    # a file that becomes a FIFO after load refuses the call instead of blocking it
    tools = toolbox_files(tmp_path)
    box = Toolbox.load(tools, variable_files=[tmp_path / "team.env"])
    (tmp_path / "team.env").unlink()
    os.mkfifo(tmp_path / "team.env")
    result = box.call_sync("team.probe", {"q": "x"})
    assert result.is_error and "nothing ran" in str(result.content).lower()


def test_utcp_run_reads_a_manual_files_variables_as_call_does(tmp_path: Path) -> None:
    # `call` names a manual file's manual after the file; `utcp run` on the same
    # file and tool reads the same namespaced variables.
    leaky = manual()
    leaky["tools"][1]["tool_call_template"]["commands"] = [{"command": "printenv TOKEN"}]
    leaky["tools"][1]["tool_call_template"]["env_vars"] = {"TOKEN": "${TOKEN}"}
    (tmp_path / "my-team.json").write_text(json.dumps(leaky))
    (tmp_path / "vars.env").write_text(f"TOKEN=bare\nmy__team_TOKEN={CANARY}\n")
    file = str(tmp_path / "my-team.json")
    env = ("--variables-file", str(tmp_path / "vars.env"))
    ran = cli("utcp", "run", file, "--tool", "count", *env)
    assert ran.stdout.strip() == CANARY, ran.stderr
    called = cli("call", "--tool", "my_team.count", "--args", "{}", *env, file)
    assert json.loads(called.stdout)["content"] == CANARY, called.stderr
    flag = cli("utcp", "run", file, "--tool", "count", "--variable", "my__team_TOKEN=k")
    assert flag.stdout.strip() == "k", flag.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_during_discovery_at_load_kills_the_discovery(
    tmp_path: Path, signum: signal.Signals
) -> None:
    # The pid file is written by the discovery program itself; its group must
    # be dead when the CLI has exited with 128 + n.
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(300)"
    slow = {
        "name": "slow",
        "call_template_type": "cli",
        "commands": [{"command": f"{PY} -c {shlex.quote(code)}"}],
    }
    (tmp_path / "client.json").write_text(json.dumps({"manual_call_templates": [slow]}))
    argv = ["call", "--tool", "slow.x", "--timeout", "120", str(tmp_path / "client.json")]
    running = subprocess.Popen(
        [sys.executable, "-m", "command_handle", *argv],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(300):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.05)
        discovery_pid = int(pid_file.read_text())
        running.send_signal(signum)
        _, stderr = running.communicate(timeout=30)
    finally:
        if running.poll() is None:
            running.kill()
            running.wait()
    assert running.returncode == 128 + signum, stderr
    assert "timed out" not in stderr
    assert wait_dead([discovery_pid]) == []


def test_a_discovery_at_load_never_reads_another_manuals_variables(tmp_path: Path) -> None:
    (tmp_path / "manual.json").write_text(json.dumps(manual()))
    tools = tmp_path / "tools"
    tools.mkdir()
    for reads in ("${b_TOKEN}", "${_b_TOKEN}"):
        nosy = discovery(tmp_path, "a", env_vars={"T": reads})
        config = {
            "manual_call_templates": [nosy, discovery(tmp_path, "b"), discovery(tmp_path, "a_b")]
        }
        (tools / "client.json").write_text(json.dumps(config))
        variables = {"b_TOKEN": CANARY, "a__b_TOKEN": CANARY}
        with pytest.raises(
            ToolLoadError, match=r"discovery of manual 'a' failed: .*_TOKEN"
        ) as refused:
            Toolbox.load(tools, variables=variables)
        assert CANARY not in str(refused.value)
    # its own, namespaced or bare, it reads
    own = discovery(tmp_path, "a", env_vars={"T": "${TOKEN}"})
    (tools / "client.json").write_text(json.dumps({"manual_call_templates": [own]}))
    assert Toolbox.load(tools, variables={"a_TOKEN": "x"}).names() == ["a_probe", "a_count"]


def test_validate_discovers_a_client_configurations_manuals(tmp_path: Path) -> None:
    tools = toolbox_files(tmp_path)
    checked = cli("validate", str(tools / "client.json"))
    assert checked.returncode == 0, checked.stderr
    assert "ok (team_probe, team_count)" in checked.stdout
    nosy = discovery(tmp_path, "team", env_vars={"T": "${TOKEN}"})
    (tools / "client.json").write_text(json.dumps({"manual_call_templates": [nosy]}))
    refused = cli("validate", str(tools / "client.json"))
    assert refused.returncode == 2 and "'TOKEN'" in refused.stderr
    given = cli("validate", "--variable", "team_TOKEN=x", str(tools / "client.json"))
    assert given.returncode == 0, given.stderr
