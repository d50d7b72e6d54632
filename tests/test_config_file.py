"""One configuration file (TOML) for the toolbox commands: the whole Policy,
credentials and the server's options; flags override it; unknown keys and
wrong types are errors naming their line; MCP roots as the workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from command_handle.cli import build_parser
from command_handle.cli.options import apply_config, policy_of

from .processes import PROBE, PY, ROOT

CANARY = "canary-config-5d1e0b"


def cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "command_handle", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )


def parsed(*argv: str) -> Any:
    parser = build_parser()
    return apply_config(parser, list(argv), parser.parse_args(list(argv)))


def probe_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "probe.json").write_text(
        json.dumps(
            {
                "name": "probe",
                "description": "reports what it got",
                "handle": "command",
                "command": PY,
                "arguments": ["-I", PROBE],
                "security": {"scheme": "apiKey", "name": "key"},
                "environment": {"KEY": {"$credential": "apiKey"}},
            }
        )
    )
    return folder


def test_the_file_sets_the_whole_policy_and_flags_override_it(tmp_path: Path) -> None:
    config = tmp_path / "settings.toml"
    config.write_text(
        """
[policy]
timeout = 7
max_output = 4096
inherit_environment = ["LANG", "TZ"]
allowed_commands = ["/usr/bin/wc"]
sandbox = "read-only"
deny_read = ["/etc/shadow"]
sandbox_backend = "bubblewrap"
max_processes = 64
cgroup_per_call = false
"""
    )
    options = parsed("call", "fixtures/handles", "--tool", "t", "--config", str(config))
    policy = policy_of(options)
    assert policy.timeout == 7.0 and policy.max_output == 4096
    assert policy.inherit_environment == ("LANG", "TZ")
    assert policy.allowed_commands == frozenset({"/usr/bin/wc"})
    assert (policy.sandbox, policy.deny_read, policy.sandbox_backend) == (
        "read-only",
        ("/etc/shadow",),
        "bubblewrap",
    )
    assert policy.max_processes == 64
    flags = parsed(
        "call",
        "fixtures/handles",
        "--tool",
        "t",
        "--config",
        str(config),
        "--timeout",
        "3",
        "--inherit-env",
        "HOME",
        "--sandbox",
        "off",
        "--deny-read",
        "/x",
        "--sandbox-backend",
        "landlock",
    )
    with pytest.raises(Exception, match="need a sandbox"):  # deny_read without a sandbox
        policy_of(flags)
    assert flags.timeout == 3.0 and flags.inherit_env == ["HOME"] and flags.deny_read == ["/x"]


def test_policy_flags_reach_the_call(tmp_path: Path) -> None:
    done = cli(
        "call",
        "fixtures/handles",
        "--tool",
        "word-count",
        "--args",
        '{"text": "a b"}',
        "--allow-command",
        "/bin/true",
    )
    assert done.returncode == 2, done.stdout
    assert "Nothing ran" in json.loads(done.stdout)["content"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[policy]\ntimeout = 5\n\ntimout = 3\n",
            ":4: [policy] timout: unknown key (did you mean timeout?)",
        ),
        ("[policy]\ntimeout = 'five'\n", ":2: [policy] timeout: must be a number"),
        ("[policy]\nsandbox = 'strict'\n", ":2: [policy] sandbox: must be one of off, read-only"),
        ("[policy]\ndeny_read = [1]\n", ":2: [policy] deny_read: must be a list of strings"),
        ("# c\n[polcy]\ntimeout = 5\n", ":2: unknown table [polcy]"),
        ("[credentials]\ngithub = 3\n", ":2: [credentials] github: must be a host variable"),
        ('[credentials]\n"a.b" = "V"\n', "[credentials] a.b: a Security Object's name has no"),
        ("[policy\n", "not valid TOML"),
        # a flag's own check, with the line: the usage text said only the flag
        ('[terminal]\nsize = "0x0"\n', ":2: [terminal] size: '0x0' is not COLUMNSxROWS"),
        ("[policy]\ntimeout = 5\n[policy.limits]\ncpu = 1\n", ":3: [policy] limits: unknown key"),
        ("policy = 3\n", ":1: policy: must be a table"),
        ("x = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply to read"),
    ],
)
def test_a_mistake_in_the_file_names_its_line_and_nothing_runs(
    tmp_path: Path, text: str, message: str
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    done = cli("call", "fixtures/handles", "--tool", "word-count", "--config", str(config))
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"{config}{message}" in done.stderr or message in done.stderr, done.stderr


def test_credentials_come_from_the_file(tmp_path: Path) -> None:
    config = tmp_path / "settings.toml"
    config.write_text('[credentials.key]\napiKey = "CONFIG_KEY"\n')
    folder = probe_folder(tmp_path)
    done = cli(
        "call",
        str(folder),
        "--tool",
        "probe",
        "--config",
        str(config),
        env={**os.environ, "CONFIG_KEY": CANARY},
    )
    assert done.returncode == 0, done.stderr
    assert CANARY not in done.stdout
    assert json.loads(json.loads(done.stdout)["content"])["env"]["KEY"] == "[credential]"


def test_run_and_tools_take_the_file(tmp_path: Path) -> None:
    config = tmp_path / "settings.toml"
    config.write_text('[policy]\nallowed_commands = ["/bin/true"]\n')
    done = cli(
        "run",
        "fixtures/handles/word-count.json",
        "--args",
        '{"text": "a"}',
        "--config",
        str(config),
    )
    assert done.returncode == 2 and "does not allow" in done.stderr
    listed = cli("tools", "fixtures/handles", "--config", str(config))
    assert listed.returncode == 0


def test_mcp_takes_its_workspace_from_the_clients_roots(tmp_path: Path) -> None:
    workspace = tmp_path / "client-root"
    workspace.mkdir()
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "where.json").write_text(
        json.dumps(
            {
                "name": "where",
                "description": "reports its working directory",
                "handle": "command",
                "command": PY,
                "arguments": ["-I", PROBE],
            }
        )
    )
    config = tmp_path / "server.toml"
    config.write_text("[mcp]\nworkspace_from_roots = true\n")

    async def roots(context: Any) -> types.ListRootsResult:
        root = types.Root.model_validate({"uri": workspace.as_uri(), "name": "project"})
        return types.ListRootsResult(roots=[root])

    async def main(with_roots: bool) -> str:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "command_handle", "mcp", str(folder), "--config", str(config)],
            cwd=str(ROOT),
        )
        callback = roots if with_roots else None
        # Roots are a server request: the initialize handshake's protocol (what hosts
        # speak today); 2026-07-28 deprecates them and has no server requests.
        async with Client(
            params, cache=None, list_roots_callback=callback, mode="legacy"
        ) as client:
            result = await client.call_tool("where", {})
            block = result.content[0]
            assert isinstance(block, types.TextContent)
            return str(json.loads(block.text)["cwd"])

    assert anyio.run(main, True) == str(workspace.resolve())
    assert anyio.run(main, False) == str(ROOT)
    # A configured workspace bounds the client's root: inside it, the root is taken;
    # outside it, the configured workspace stays.
    config.write_text(
        f"[policy]\nworkspace = {str(tmp_path)!r}\n\n[mcp]\nworkspace_from_roots = true\n"
    )
    assert anyio.run(main, True) == str(workspace.resolve())
    elsewhere = tmp_path / "projects"
    elsewhere.mkdir()
    config.write_text(
        f"[policy]\nworkspace = {str(elsewhere)!r}\n\n[mcp]\nworkspace_from_roots = true\n"
    )
    assert anyio.run(main, True) == str(elsewhere)


def _toml_blocks(page: str) -> list[str]:
    text = (ROOT / "docs" / page).read_text()
    return [block.split("```", 1)[0] for block in text.split("```toml\n")[1:]]


@pytest.mark.parametrize("page", ["handles.md", "mcp.md", "sandbox.md"])
def test_the_docs_configuration_files_are_accepted(page: str, tmp_path: Path) -> None:
    blocks = _toml_blocks(page)
    assert blocks
    for number, block in enumerate(blocks):
        config = tmp_path / f"{number}.toml"
        config.write_text(block)
        options = parsed("mcp", "fixtures/handles", "--config", str(config))
        assert options.sandbox == "workspace-write" and options.workspace_from_roots is True


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_a_config_that_is_no_regular_file_is_refused_without_waiting(
    tmp_path: Path, kind: str
) -> None:
    path = {"fifo": tmp_path / "fifo", "device": Path("/dev/zero"), "directory": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "command_handle",
            "tools",
            "fixtures/handles",
            "--config",
            str(path),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
    )
    assert done.returncode == 2 and "--config" in done.stderr and done.stdout == ""


def test_a_file_for_running_serves_the_commands_that_only_list(tmp_path: Path) -> None:
    """``tools`` takes no sandbox or credential flags; the same file serves it."""
    config = tmp_path / "settings.toml"
    config.write_text(
        '[policy]\nsandbox = "read-only"\ntimeout = 3\n\n[credentials]\nbilling = "KEY"\n'
    )
    done = cli("tools", "fixtures/handles", "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)


def test_a_switch_the_file_turns_on_a_flag_turns_off(tmp_path: Path) -> None:
    config = tmp_path / "settings.toml"
    config.write_text('[policy]\nsandbox = "read-only"\nnetwork = true\ncgroup_per_call = true\n')
    base = ("call", "fixtures/handles", "--tool", "t", "--config", str(config))
    on = policy_of(parsed(*base))
    assert on.network is True and on.cgroup_per_call is True
    off = policy_of(parsed(*base, "--no-network", "--no-cgroup-per-call"))
    assert off.network is False and off.cgroup_per_call is False


def test_paths_in_the_file_are_relative_to_it_and_tilde_is_home(tmp_path: Path) -> None:
    """A host starts the server in a directory of its own (Claude Desktop: /),
    so a path written in the file is read from the file's folder, and ``~`` as
    the docs write it (``workspace = "~/projects"``) is the home directory."""
    folder = tmp_path / "settings"
    (folder / "project").mkdir(parents=True)
    (folder / "cache").mkdir()
    (folder / "vars.env").write_text("A=1\n")
    home = tmp_path / "home"
    (home / "projects").mkdir(parents=True)
    config = folder / "tools.toml"
    config.write_text(
        '[policy]\nsandbox = "workspace-write"\nworkspace = "project"\n'
        'writable_roots = ["cache"]\ndeny_read = ["~/.ssh"]\n'
        '[utcp]\nvariables_files = ["vars.env"]\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = os.getcwd()
    os.chdir(elsewhere)
    try:
        options = parsed(
            "call", str(ROOT / "fixtures/handles"), "--tool", "t", "--config", str(config)
        )
        policy = policy_of(options)
        assert policy.workspace == str(folder / "project")
        assert policy.writable_roots == (str(folder / "cache"),)
        assert options.variables_file == [str(folder / "vars.env")]
        # a flag is read from the current directory, as every flag is
        overridden = parsed(
            "call",
            str(ROOT / "fixtures/handles"),
            "--tool",
            "t",
            "--config",
            str(config),
            "--workspace",
            ".",
        )
        assert policy_of(overridden).workspace == str(elsewhere)
    finally:
        os.chdir(before)
    config.write_text('[policy]\nsandbox = "read-only"\nworkspace = "~/projects"\n')
    done = cli(
        "render",
        "fixtures/handles/word-count.json",
        "--args",
        '{"text": "a"}',
        "--config",
        str(config),
        env={**os.environ, "HOME": str(home)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cwd"] == str(home / "projects")


def test_a_client_root_cannot_leave_the_configured_workspace(tmp_path: Path) -> None:
    """The root is judged by its real path: a link inside the workspace that
    points out, ``..`` and its percent-encoded form keep the configured
    workspace; a link that stays inside is taken, resolved."""
    projects = tmp_path / "projects"
    (projects / "app").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (projects / "out-link").symlink_to(outside)
    (projects / "in-link").symlink_to(projects / "app")
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "where.json").write_text(
        json.dumps(
            {
                "name": "where",
                "description": "reports its working directory",
                "handle": "command",
                "command": PY,
                "arguments": ["-I", PROBE],
            }
        )
    )
    config = tmp_path / "server.toml"
    config.write_text(
        f"[policy]\nworkspace = {str(projects)!r}\nsandbox = 'workspace-write'\n\n"
        "[mcp]\nworkspace_from_roots = true\n"
    )

    async def main(uri: str) -> str:
        async def roots(context: Any) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root.model_validate({"uri": uri})])

        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "command_handle", "mcp", str(folder), "--config", str(config)],
            cwd=str(ROOT),
        )
        async with Client(params, cache=None, list_roots_callback=roots, mode="legacy") as client:
            result = await client.call_tool("where", {})
            block = result.content[0]
            assert isinstance(block, types.TextContent)
            return str(json.loads(block.text)["cwd"])

    base = projects.as_uri()
    assert anyio.run(main, f"{base}/out-link") == str(projects)
    assert anyio.run(main, f"{base}/../outside") == str(projects)
    assert anyio.run(main, f"{base}/%2e%2e/outside") == str(projects)
    assert anyio.run(main, "file:///") == str(projects)
    assert anyio.run(main, f"{base}/in-link") == str(projects / "app")
