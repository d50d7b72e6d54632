"""Processes that outlive their call, over MCP: the official SDK's client and
``command-handle mcp`` as a real subprocess, over stdio and streamable HTTP.

Leftovers are looked for in the process table: after a client disconnects,
after a session ends, after the server's shutdown.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from .processes import PY, ROOT
from .test_mcp import free_port, http_server, text_of
from .test_processes import FAMILY, none_left, running, tagged, unique

TOOLS = ("process_read", "process_write", "process_stop", "process_list")


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("process-tools")
    for name in ("dev-server.json", "python-repl.json"):
        (folder / name).write_text((ROOT / "fixtures" / "handles" / name).read_text())
    (folder / "family.py").write_text(FAMILY)
    (folder / "family.json").write_text(
        json.dumps(
            {
                "name": "family",
                "description": "starts a grandchild and echoes its input",
                "handle": "command",
                "command": PY,
                "arguments": {"$use": [str(folder / "family.py"), {"$": "tag"}]},
                "parameters": {
                    "type": "object",
                    "properties": {"tag": {"type": "string"}},
                    "required": ["tag"],
                },
                "session": {"ready": "^family"},
            }
        )
    )
    (folder / "fetch.json").write_text(
        json.dumps(
            {
                "name": "fetch",
                "handle": "command",
                "command": PY,
                "arguments": {
                    "$use": [
                        "-c",
                        "import sys, urllib.request\n"
                        "print(urllib.request.urlopen(sys.argv[1]).read().decode())",
                        {"$": "url"},
                    ]
                },
                "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
            }
        )
    )
    return folder


@contextlib.asynccontextmanager
async def stdio(tools: Path, *flags: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "command_handle", "mcp", str(tools), *flags],
        cwd=str(ROOT),
    )
    async with Client(params, cache=None) as client:
        yield client


@pytest.fixture(scope="module")
def http_url(tools: Path) -> Iterator[str]:
    with http_server(tools) as (url, _):
        yield url


def structured(result: Any) -> dict[str, Any]:
    """The structured value the text stands for: the process id is in the text."""
    text = text_of(result)
    assert "`p-" in text, text
    return {"process_id": "p-" + text.split("`p-", 1)[1].split("`", 1)[0], "text": text}


@pytest.mark.parametrize("transport", ["stdio", "http-session", "http"])
def test_a_dev_server_started_reached_read_and_stopped(
    tools: Path, tmp_path: Path, transport: str, request: Any
) -> None:
    (tmp_path / "page.txt").write_text("served over MCP")
    port = free_port()

    async def session(client: Client) -> list[str]:
        listed = await client.list_tools()
        assert set(TOOLS) <= {tool.name for tool in listed.tools}
        started = await client.call_tool("dev_server", {"port": port, "directory": str(tmp_path)})
        process_id = structured(started)["process_id"]
        fetched = await client.call_tool("fetch", {"url": f"http://127.0.0.1:{port}/page.txt"})
        log = await client.call_tool("process_read", {"process_id": process_id, "wait_seconds": 5})
        listing = await client.call_tool("process_list", {})
        stopped = await client.call_tool("process_stop", {"process_id": process_id})
        return [text_of(started), text_of(fetched), text_of(log), text_of(listing),
                text_of(stopped)]  # fmt: skip

    async def main() -> list[str]:
        if transport == "stdio":
            async with stdio(tools) as client:
                return await session(client)
        url = request.getfixturevalue("http_url")
        mode = "legacy" if transport == "http-session" else "auto"
        async with Client(url, cache=None, mode=mode) as client:
            return await session(client)

    started, fetched, log, listing, stopped = anyio.run(main)
    assert "Serving HTTP on 127.0.0.1" in started
    assert "served over MCP" in fetched
    assert '"GET /page.txt HTTP/1.1" 200' in log
    assert "dev_server" in listing and "running" in listing
    assert "has ended: it was stopped" in stopped


@pytest.mark.parametrize("transport", ["stdio", "http-session", "http"])
def test_a_repl_over_each_transport(tools: Path, transport: str, request: Any) -> None:
    async def session(client: Client) -> str:
        started = await client.call_tool("python_repl", {})
        process_id = structured(started)["process_id"]
        await client.call_tool("process_write", {"process_id": process_id, "input": "6*7\n"})
        answer = await client.call_tool(
            "process_read", {"process_id": process_id, "wait_seconds": 5}
        )
        await client.call_tool("process_stop", {"process_id": process_id})
        return text_of(answer)

    async def main() -> str:
        if transport == "stdio":
            async with stdio(tools) as client:
                return await session(client)
        url = request.getfixturevalue("http_url")
        mode = "legacy" if transport == "http-session" else "auto"
        async with Client(url, cache=None, mode=mode) as client:
            return await session(client)

    assert "6*7\n42\n>>>" in anyio.run(main)


def test_stdio_client_disconnect_ends_its_processes(tools: Path) -> None:
    tag = unique("mcp-disconnect")

    async def main() -> None:
        async with stdio(tools) as client:
            for _ in range(2):
                result = await client.call_tool("family", {"tag": tag})
                assert "still running" in text_of(result)
            assert running(tag, 4)  # two children, two grandchildren

    anyio.run(main)
    assert none_left(tag)


def test_http_sessions_own_their_processes_and_their_end_ends_them(
    tools: Path, http_url: str
) -> None:
    tag = unique("mcp-session")

    async def main() -> tuple[str, str]:
        async with Client(http_url, cache=None, mode="legacy") as first:
            started = await first.call_tool("family", {"tag": tag})
            process_id = structured(started)["process_id"]
            async with Client(http_url, cache=None, mode="legacy") as second:
                foreign = await second.call_tool("process_read", {"process_id": process_id})
                listed = await second.call_tool("process_list", {})
            assert tagged(tag)
            return text_of(foreign), text_of(listed)

    foreign, listed = anyio.run(main)
    assert f"There is no process `{process_id_of(foreign)}` of yours" in foreign
    assert "You have no processes." in listed
    assert none_left(tag)  # the first client ended its session (DELETE)


def process_id_of(text: str) -> str:
    return "p-" + text.split("`p-", 1)[1].split("`", 1)[0]


@pytest.mark.parametrize("how", ["stdio-signal", "http-signal"])
def test_server_shutdown_ends_every_process(tools: Path, how: str) -> None:
    tag = unique("mcp-shutdown")
    if how == "http-signal":
        with http_server(tools) as (url, server):

            async def start() -> None:
                async with Client(url, cache=None, mode="auto") as client:
                    await client.call_tool("family", {"tag": tag})

            anyio.run(start)
            assert tagged(tag)
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=20)
        assert none_left(tag)
        return
    import subprocess

    server = subprocess.Popen(
        [sys.executable, "-m", "command_handle", "mcp", str(tools)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    assert server.stdin is not None and server.stdout is not None
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "family", "arguments": {"tag": tag}},
        },
    ]
    for message in messages:
        server.stdin.write((json.dumps(message) + "\n").encode())
    server.stdin.flush()
    answers = 0
    while answers < 2:
        line = server.stdout.readline()
        assert line, "the server ended early"
        if b'"id"' in line:
            answers += 1
    assert tagged(tag)
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=20)
    server.stdin.close()
    server.stdout.close()
    assert none_left(tag)


def test_command_line_limits_and_terminal(tools: Path) -> None:
    tag = unique("mcp-flags")
    flags = ("--max-sessions-per-client", "1", "--term", "vt100", "--terminal-size", "90x20")

    async def main() -> tuple[str, str]:
        async with stdio(tools, *flags) as client:
            repl = await client.call_tool("python_repl", {})
            process_id = structured(repl)["process_id"]
            refused = await client.call_tool("family", {"tag": tag})
            code = "import os, shutil; print(os.environ['TERM'], shutil.get_terminal_size())\n"
            await client.call_tool("process_write", {"process_id": process_id, "input": code})
            shown = await client.call_tool(
                "process_read", {"process_id": process_id, "wait_seconds": 5}
            )
            return text_of(refused), text_of(shown)

    refused, shown = anyio.run(main)
    assert "max_sessions_per_owner" in refused and "Nothing was started" in refused
    assert "vt100 os.terminal_size(columns=90, lines=20)" in shown
    assert not tagged(tag)


def test_with_roots_the_limits_and_processes_hold_across_workspaces(
    tools: Path, tmp_path: Path
) -> None:
    """With ``--workspace-from-roots`` each root gets its own workspace, not its
    own limits: a client that changes its roots neither starts more processes
    than it may nor loses the ones it started."""
    import mcp_types as types

    tag = unique("mcp-roots")
    workspaces = [tmp_path / name for name in ("a", "b", "c")]
    for workspace in workspaces:
        workspace.mkdir()
    current = [workspaces[0]]

    async def roots(context: Any) -> types.ListRootsResult:
        root = types.Root.model_validate({"uri": current[0].as_uri(), "name": "project"})
        return types.ListRootsResult(roots=[root])

    async def main() -> list[str]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "command_handle", "mcp", str(tools), "--workspace-from-roots",
                  "--max-sessions-per-client", "1"],
            cwd=str(ROOT),
        )  # fmt: skip
        texts = []
        async with Client(params, cache=None, list_roots_callback=roots, mode="legacy") as client:
            for workspace in workspaces:
                current[0] = workspace
                texts.append(text_of(await client.call_tool("family", {"tag": tag})))
            process_id = process_id_of(texts[0])
            await client.call_tool("process_write", {"process_id": process_id, "input": "hi\n"})
            read = await client.call_tool("process_read", {"process_id": process_id,
                                                           "wait_seconds": 5})  # fmt: skip
            texts.append(text_of(read))
            texts.append(
                text_of(await client.call_tool("process_stop", {"process_id": process_id}))
            )
            assert none_left(tag)
        return texts

    first, second, third, read, stopped = anyio.run(main)
    assert "still running" in first
    for refused in (second, third):
        assert "max_sessions_per_owner" in refused and "Nothing was started" in refused
    assert "echo hi" in read
    assert "has ended: it was stopped" in stopped
    assert none_left(tag)
