"""The MCP server, driven by the official SDK's client with the server as a real
subprocess: over stdio, and over streamable HTTP on 127.0.0.1.

The tools are Python scripts that report what happened to them (pids written
to files, a directory of running instances), so every check is on real
processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

from .processes import PY, ROOT

Connect = Callable[..., contextlib.AbstractAsyncContextManager[Client]]

CANARY = "canary-mcp-58c1d2e9"


def text_of(result: Any, index: int = 0) -> str:
    """The text of a result's content block (every block here is text)."""
    block = result.content[index]
    assert isinstance(block, TextContent)
    return block.text


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes: it only waits for its parent to reap it
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_dead(pids: list[int], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def script_tool(folder: Path, name: str, code: str, **fields: Any) -> None:
    script = folder / f"{name}.py"
    script.write_text(code)
    document: dict[str, Any] = {
        "name": name,
        "description": f"the {name} fixture",
        "handler": "command",
        "command": PY,
        "arguments": [str(script)],
        "parameters": {"type": "object", "properties": {}},
    }
    document.update(fields)
    (folder / f"{name}.json").write_text(json.dumps(document))


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mcp-tools")
    state = tmp_path_factory.mktemp("mcp-state")
    script_tool(
        folder,
        "ticker",
        "import sys, time\n"
        "for i in range(12):\n"
        "    print(f'tick {i}', flush=True)\n"
        "    time.sleep(0.25)\n",
    )
    # A child that starts a grandchild, records both pids, and waits.
    script_tool(
        folder,
        "tree",
        "import os, subprocess, sys, time\n"
        "grandchild = subprocess.Popen(['sleep', '60'])\n"
        f"path = os.path.join({str(state)!r}, sys.argv[1])\n"
        "with open(path + '.tmp', 'w') as f: f.write(f'{os.getpid()} {grandchild.pid}')\n"
        "os.rename(path + '.tmp', path)\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n",
        parameters={
            "type": "object",
            "properties": {"tag": {"type": "string", "pattern": "^[a-z0-9]+$"}},
            "required": ["tag"],
        },
        arguments=[str(folder / "tree.py"), {"$": "tag"}],
    )
    # Registers itself in a directory and reports how many instances run at once.
    script_tool(
        folder,
        "overlap",
        "import os, sys, time\n"
        "d = sys.argv[1]; mine = os.path.join(d, str(os.getpid()))\n"
        "open(mine, 'w').close()\n"
        "deadline = time.monotonic() + 5\n"
        "while len(os.listdir(d)) < 3 and time.monotonic() < deadline: time.sleep(0.02)\n"
        "print(len(os.listdir(d)), flush=True)\n"
        "time.sleep(0.3)\n"
        "os.remove(mine)\n",
        parameters={
            "type": "object",
            "properties": {"dir": {"type": "string"}},
            "required": ["dir"],
        },
        arguments=[str(folder / "overlap.py"), {"$": "dir"}],
        options_allowed=[],
    )
    (folder / "structured.json").write_text(
        json.dumps(
            {
                "name": "structured",
                "description": "counts words",
                "handler": "command",
                "command": "wc",
                "arguments": ["-w"],
                "parameters": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                    "additionalProperties": False,
                },
                "io": {"stdin": {"$": "text"}},
                "result": {"words": {"$": "stdout"}},
                "output_schema": {
                    "type": "object",
                    "properties": {"words": {"type": "string"}},
                    "required": ["words"],
                },
                "annotations": {"readOnlyHint": True, "idempotentHint": True},
            }
        )
    )
    (folder / "secret.json").write_text(
        json.dumps(
            {
                "name": "secret",
                "description": "prints the API key it was given",
                "handler": "command",
                "security": {"scheme": "apiKey", "name": "billing"},
                "command": "/usr/bin/printenv",
                "arguments": ["API_KEY"],
                "environment": {"API_KEY": {"$credential": "value"}},
            }
        )
    )
    script_tool(
        folder,
        "slow-secret",
        "import os, time\nprint('using', os.environ['API_KEY'], flush=True)\ntime.sleep(1.5)\n",
        security={"scheme": "apiKey", "name": "billing"},
        environment={"API_KEY": {"$credential": "value"}},
    )
    # Lines whose cuts fall inside the key: the progress line keeps the last 4096
    # characters of a line; a progress message, the first 200 of that.
    script_tool(
        folder,
        "long-secret",
        "import os, time\nkey = os.environ['API_KEY']\n"
        "for line in (key + 'x' * 4086, 'y' * 190 + key + 'z' * 10, 'w' * 195 + key):\n"
        "    print(line, flush=True)\n"
        "    time.sleep(0.8)\n",
        security={"scheme": "apiKey", "name": "billing"},
        environment={"API_KEY": {"$credential": "value"}},
    )
    script_tool(
        folder,
        "writer",
        "import sys\nopen(sys.argv[-1], 'w').write('written')\nprint('wrote')\n",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
        arguments=[str(folder / "writer.py"), "--", {"$": "path"}],
    )
    # Leaves a grandchild running (its command line carries the tag) and exits.
    script_tool(
        folder,
        "lingerer",
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', sys.argv[1]],\n"
        "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print('left one behind', flush=True)\n",
        parameters={
            "type": "object",
            "properties": {"tag": {"type": "string", "pattern": "^[a-z0-9]+$"}},
            "required": ["tag"],
        },
        arguments=[str(folder / "lingerer.py"), {"$": "tag"}],
    )
    manual = {
        "utcp_version": "1.0.1",
        "manual_version": "1.0.0",
        "tools": [
            {
                "name": "ticks",
                "description": "the ticker, as a UTCP template",
                "inputs": {"type": "object", "properties": {}},
                "tool_call_template": {
                    "call_template_type": "cli",
                    "commands": [{"command": f"{PY} {folder / 'ticker.py'}"}],
                },
            },
            {
                # refused at run time: the second step's data begins like an option
                "name": "chain",
                "description": "a plan whose later step is refused",
                "inputs": {"type": "object", "properties": {}},
                "tool_call_template": {
                    "call_template_type": "cli",
                    "commands": [{"command": "printf %s -rf"}, {"command": "ls $CMD_0_OUTPUT"}],
                },
            },
        ],
    }
    (folder / "utcp.json").write_text(json.dumps(manual))
    return folder


def server_args(tools: Path, *extra: str) -> list[str]:
    return ["-m", "command_handle", "mcp", str(tools), "--credential", "billing=MCP_KEY", *extra]


def server_env() -> dict[str, str]:
    return {**os.environ, "MCP_KEY": CANARY}


@contextlib.asynccontextmanager
async def stdio_client(tools: Path, *extra: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=server_args(tools, *extra), env=server_env(), cwd=str(ROOT)
    )
    async with Client(params, cache=None) as client:
        yield client


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def http_server(
    tools: Path, *extra: str, host: str = "127.0.0.1"
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port(host)
    args = ["--transport", "http", "--host", host, "--port", str(port), *extra]
    process = subprocess.Popen(
        [sys.executable, *server_args(tools, *args)],
        env=server_env(),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection((host, port), timeout=0.2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("the HTTP server did not start") from None
                time.sleep(0.05)
        name = f"[{host}]" if ":" in host else host
        yield f"http://{name}:{port}/mcp", process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=10)


@contextlib.asynccontextmanager
async def http_client(
    url: str, token: str | None = None, mode: str = "auto"
) -> AsyncIterator[Client]:
    """The SDK's client of ``url``: ``mode="auto"`` speaks the 2026 protocol to
    this server (a request per call, cancelled by closing it); ``"legacy"`` the
    2025 handshake protocol of a session, cancelled by ``notifications/cancelled``."""
    if token is None:
        async with Client(url, cache=None, mode=mode) as client:
            yield client
        return
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def http_url(tools: Path) -> Iterator[str]:
    with http_server(tools) as (url, _):
        yield url


@pytest.fixture(scope="module")
def stateless_url(tools: Path) -> Iterator[str]:
    with http_server(tools, "--stateless") as (url, _):
        yield url


@pytest.fixture(params=["stdio", "http", "http-session"])
def connect(request: pytest.FixtureRequest, tools: Path) -> Connect:
    """``connect()``: an SDK client of a server over stdio, or over HTTP: in the
    2026 protocol (a request per call), or in a session of the 2025 protocol
    (``mode="legacy"``), as most MCP clients still speak it."""
    if request.param == "stdio":
        return lambda: stdio_client(tools)
    url = request.getfixturevalue("http_url")
    mode = "legacy" if request.param == "http-session" else "auto"
    return lambda: http_client(url, mode=mode)


def pids_of(state_dir: Path, tag: str, within: float = 10.0) -> list[int]:
    path = state_dir / tag
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.02)
    return [int(pid) for pid in path.read_text().split()]


def state_of(tools: Path) -> Path:
    text = (tools / "tree.py").read_text()
    return Path(text.split("os.path.join(")[1].split(",")[0].strip("'\""))


# -- listing and calling --------------------------------------------------------------


def test_tools_list_carries_schemas_and_annotations(connect: Connect) -> None:
    async def main() -> dict[str, Any]:
        async with connect() as client:
            listed = await client.list_tools()
            return {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools}

    tools = anyio.run(main)
    assert {"ticker", "tree", "overlap", "structured", "secret"} <= set(tools)
    structured = tools["structured"]
    assert structured["inputSchema"]["required"] == ["text"]
    assert structured["outputSchema"]["required"] == ["words"]
    assert structured["annotations"] == {"readOnlyHint": True, "idempotentHint": True}


HANDSHAKE = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "wire-test", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def raw_server(tools: Path, *messages: dict[str, Any]) -> subprocess.Popen[bytes]:
    """The server as a subprocess spoken to in JSON-RPC lines: the handshake, then
    ``messages``."""
    process = subprocess.Popen(
        [sys.executable, *server_args(tools)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
        cwd=ROOT,
    )
    assert process.stdin is not None
    for message in (*HANDSHAKE, *messages):
        process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()
    return process


WIRE = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def open_session(http: httpx2.Client, url: str, host: str) -> dict[str, str]:
    """The handshake over raw HTTP with ``Host: host``; the headers a request of
    that session carries (the session id, when the server keeps sessions)."""
    opened = http.post(url, json=HANDSHAKE[0], headers={**WIRE, "Host": host})
    assert opened.status_code == 200, opened.text
    headers = {**WIRE, "Host": host}
    if "mcp-session-id" in opened.headers:
        headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
    done = http.post(url, json=HANDSHAKE[1], headers=headers)
    assert done.status_code == 202, done.text
    return headers


def test_the_wire_carries_input_schema(tools: Path) -> None:
    """What a client receives, byte for byte: JSON-RPC over the server's stdout."""
    process = raw_server(tools, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert process.stdin is not None and process.stdout is not None
    replies = {}
    while 2 not in replies:
        line = process.stdout.readline()
        assert line, "the server closed stdout"
        reply = json.loads(line)
        replies[reply.get("id")] = reply
    process.stdin.close()
    assert process.wait(timeout=10) == 0
    listed = {t["name"]: t for t in replies[2]["result"]["tools"]}
    assert "inputSchema" in listed["structured"] and "input_schema" not in listed["structured"]
    assert "outputSchema" in listed["structured"]


def test_a_call_returns_text_and_structured_content(connect: Connect) -> None:
    async def main() -> Any:
        async with connect() as client:
            return await client.call_tool("structured", {"text": "one two three"})

    result = anyio.run(main)
    assert result.is_error is False
    assert result.structured_content == {"words": "3\n"}
    assert json.loads(text_of(result)) == {"words": "3\n"}


def test_mistakes_and_failures_are_results_with_is_error(connect: Connect) -> None:
    async def main() -> list[Any]:
        async with connect() as client:
            return [
                await client.call_tool("structured", {"text": 5}),
                await client.call_tool("structured", {"text": "a", "extra": 1}),
                await client.call_tool("no-such-tool", {}),
                await client.call_tool("tree", {"tag": "-x"}),
                await client.call_tool("utcp_chain", {}),
            ]

    wrong_type, extra, unknown, pattern, after_run = anyio.run(main)
    for result in (wrong_type, extra, unknown, pattern, after_run):
        assert result.is_error is True and result.structured_content is None
    assert "`text` must be of type string" in text_of(wrong_type)
    assert "`extra` is not a parameter of this tool" in text_of(extra)
    assert "no tool named `no-such-tool`" in text_of(unknown)
    assert "`tag` must match the pattern" in text_of(pattern)
    # A plan refused after its first step ran is a result too, not a JSON-RPC error.
    assert "was stopped before one of its commands" in text_of(after_run)


def test_a_credential_from_the_command_line_stays_hidden(connect: Connect) -> None:
    async def main() -> Any:
        async with connect() as client:
            return await client.call_tool("secret", {})

    result = anyio.run(main)
    assert result.is_error is False
    assert text_of(result) == "[credential]"  # the child printed it; the model sees this


# -- long calls ---------------------------------------------------------------------------


def test_progress_reports_the_latest_output_line(connect: Connect) -> None:
    updates: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, message))

    async def main() -> Any:
        async with connect() as client:
            return await client.call_tool("ticker", {}, progress_callback=on_progress)

    result = anyio.run(main)
    assert not result.is_error and text_of(result).endswith("tick 11")
    assert len(updates) >= 3
    assert [p for p, _ in updates] == sorted(p for p, _ in updates)
    assert any(message and message.startswith("tick ") for _, message in updates)


def test_progress_reports_a_utcp_tool_s_lines_too(connect: Connect) -> None:
    messages: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    async def main() -> Any:
        async with connect() as client:
            return await client.call_tool("utcp_ticks", {}, progress_callback=on_progress)

    result = anyio.run(main)
    assert not result.is_error and text_of(result).endswith("tick 11")
    assert any(message.startswith("tick ") for message in messages)


def test_progress_messages_never_carry_a_credential(connect: Connect) -> None:
    messages: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    async def main() -> Any:
        async with connect() as client:
            return await client.call_tool("slow-secret", {}, progress_callback=on_progress)

    result = anyio.run(main)
    assert text_of(result) == "using [credential]"
    assert "using [credential]" in messages and not any(CANARY in m for m in messages)


def test_progress_messages_show_no_part_of_a_credential_across_a_cut(connect: Connect) -> None:
    """A line longer than 4096 characters is shown by its end, and a message by
    its first 200 characters: a key that straddles either cut shows none of
    its characters (it is redacted before each cut)."""
    messages: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    async def main() -> Any:
        async with connect() as client:
            return await client.call_tool("long-secret", {}, progress_callback=on_progress)

    result = anyio.run(main)
    assert not result.is_error
    assert any(m.endswith("x" * 100) for m in messages), messages
    assert any(m.startswith("yyy") for m in messages) and any(m.startswith("www") for m in messages)
    parts = {CANARY[:n] for n in range(5, len(CANARY) + 1)} | {
        CANARY[-n:] for n in range(5, len(CANARY) + 1)
    }
    assert not [m for m in messages if any(part in m for part in parts)]


def test_a_cancelled_call_kills_the_tree_and_the_session_goes_on(
    connect: Connect, tools: Path
) -> None:
    """The client abandons the call as the SDK does: over stdio and in an HTTP
    session it sends ``notifications/cancelled`` (which, over HTTP, arrives in
    a request of its own and must find the call in the session); in the 2026
    protocol it closes the call's request."""
    state = state_of(tools)
    tag = f"cancel{os.getpid()}{int(time.monotonic() * 1000) % 100000}"
    found: list[int] = []

    async def main() -> Any:
        async with connect() as client:
            with anyio.move_on_after(30) as scope:
                async with anyio.create_task_group() as group:

                    async def call() -> None:
                        await client.call_tool("tree", {"tag": tag})

                    group.start_soon(call)
                    found.extend(await anyio.to_thread.run_sync(pids_of, state, tag))
                    group.cancel_scope.cancel()  # the client abandons the call
            assert not scope.cancelled_caught
            assert await anyio.to_thread.run_sync(wait_dead, found)
            return await client.call_tool("structured", {"text": "still here"})

    after = anyio.run(main)
    assert len(found) == 2 and not any(_alive(pid) for pid in found)
    assert after.structured_content == {"words": "2\n"}


def test_calls_run_in_parallel(connect: Connect, tmp_path: Path) -> None:
    async def main() -> list[str]:
        texts: list[str] = []
        async with connect() as client, anyio.create_task_group() as group:

            async def one() -> None:
                result = await client.call_tool("overlap", {"dir": str(tmp_path)})
                texts.append(text_of(result))

            for _ in range(3):
                group.start_soon(one)
        return texts

    assert anyio.run(main) == ["3", "3", "3"]


def test_an_aborted_http_request_kills_the_tree(tools: Path, stateless_url: str) -> None:
    """Stateless HTTP (``--stateless``): one POST carries the call; closing it
    abandons the call."""
    http_url = stateless_url
    state = state_of(tools)
    tag = f"abort{os.getpid()}"
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "tree", "arguments": {"tag": tag}},
    }
    with (
        httpx2.Client(timeout=30) as http,
        http.stream("POST", http_url, json=body, headers=headers) as response,
    ):
        assert response.status_code == 200
        pids = pids_of(state, tag)
    # the response is closed unread: the client went away
    assert wait_dead(pids), "the call outlived its request"

    async def main() -> Any:
        async with http_client(http_url) as client:
            return await client.call_tool("structured", {"text": "still serving"})

    assert anyio.run(main).structured_content == {"words": "2\n"}


def test_ending_an_http_session_kills_its_calls(tools: Path, http_url: str) -> None:
    """A client that ends its session (DELETE) abandons the calls still running in it."""
    state = state_of(tools)
    tag = f"endsession{os.getpid()}"
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "tree", "arguments": {"tag": tag}},
    }
    with httpx2.Client(timeout=30) as http:
        headers = open_session(http, http_url, http_url.split("/")[2])
        assert "Mcp-Session-Id" in headers
        with http.stream("POST", http_url, json=body, headers=headers) as response:
            assert response.status_code == 200
            pids = pids_of(state, tag)
            assert http.delete(http_url, headers=headers).status_code == 200
            assert wait_dead(pids), "a call outlived its session"
        gone = http.post(http_url, json=body, headers=headers)
        assert gone.status_code == 404  # the session is over


# -- shutdown -----------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "stdin-closed-then-SIGTERM"])
def test_shutdown_kills_every_child(tools: Path, how: str) -> None:
    """A signal ends the server at once, with a call running: the call is
    cancelled (its tree killed) and answered. Closing stdin alone does not
    drop the call (it is answered when it ends); MCP clients signal after."""
    state = state_of(tools)
    tag = f"stop{how.lower().replace('-', '')}{os.getpid()}"
    process = raw_server(
        tools,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "tree", "arguments": {"tag": tag}},
        },
    )
    assert process.stdin is not None and process.stdout is not None
    pids = pids_of(state, tag)
    if how == "stdin-closed-then-SIGTERM":
        process.stdin.close()
        time.sleep(1.0)
        assert process.poll() is None, "the server dropped a call it had read"
        assert not wait_dead(pids, within=0.1), "closing stdin killed a call it had read"
    process.send_signal(signal.SIGINT if how == "SIGINT" else signal.SIGTERM)
    try:
        code = process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 0, process.stderr.read() if process.stderr else ""
    assert wait_dead(pids, within=2.0), "a child outlived the server"
    assert b"Traceback" not in (process.stderr.read() if process.stderr else b"")
    assert 2 in replies_of(process.stdout.read()), "the cancelled call got no answer"


# -- stdin of every kind ------------------------------------------------------------------


def running_with(tag: str) -> list[int]:
    """The live processes whose command line holds ``tag``, from the process table."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if tag.encode() not in cmdline.read().split(b"\0"):
                    continue
        except OSError:
            continue
        if _alive(int(entry)):
            found.append(int(entry))
    return found


def no_process_with(tag: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while running_with(tag):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def replies_of(stdout: bytes) -> dict[Any, dict[str, Any]]:
    replies = {}
    for line in stdout.splitlines():
        reply = json.loads(line)
        if "id" in reply:
            replies[reply["id"]] = reply
    return replies


def session_requests(tag: str) -> bytes:
    """The handshake, ``tools/list``, a call that leaves a grandchild behind, and a
    call answered with structured content: JSON-RPC lines."""
    messages = [
        *HANDSHAKE,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "lingerer", "arguments": {"tag": tag}},
        },
        {
            "jsonrpc": "2.0",
            "id": "four",
            "method": "tools/call",
            "params": {"name": "structured", "arguments": {"text": "two words"}},
        },
    ]
    return b"".join(json.dumps(message).encode() + b"\n" for message in messages)


def check_session_answers(replies: dict[Any, dict[str, Any]], tag: str) -> None:
    assert set(replies) == {1, 2, 3, "four"}, replies
    assert "lingerer" in {tool["name"] for tool in replies[2]["result"]["tools"]}
    assert replies[3]["result"]["isError"] is False
    assert replies["four"]["result"]["structuredContent"] == {"words": "2\n"}
    assert no_process_with(tag), "a grandchild outlived its call"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_stdin_and_stdout_regular_files(tools: Path, tmp_path: Path, backend: str) -> None:
    """``command-handle mcp DIR < requests.jsonl > answers.jsonl``: epoll refuses
    regular files, which once crashed the server with PermissionError."""
    tag = f"file{backend}{os.getpid()}"
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(session_requests(tag))
    answers = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        finished = subprocess.run(
            [sys.executable, *server_args(tools, "--backend", backend)],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=server_env(),
            cwd=ROOT,
            timeout=60,
        )
    assert finished.returncode == 0, finished.stderr.decode()
    assert b"Traceback" not in finished.stderr
    check_session_answers(replies_of(answers.read_bytes()), tag)


def test_requests_piped_before_stdin_closes_are_all_answered(tools: Path) -> None:
    """Every request read before stdin closed is answered before the server exits
    (it once answered ``initialize`` alone and cancelled the rest)."""
    tag = f"piped{os.getpid()}"
    process = subprocess.Popen(
        [sys.executable, *server_args(tools)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
        cwd=ROOT,
    )
    try:
        stdout, stderr = process.communicate(session_requests(tag), timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr.decode()
    assert b"Traceback" not in stderr
    check_session_answers(replies_of(stdout), tag)


EMPTY_STDIN = ["dev-null", "closed-pipe", "closed-descriptor"]


@pytest.mark.parametrize("stdin", EMPTY_STDIN)
def test_stdin_with_nothing_to_read_ends_the_server_cleanly(tools: Path, stdin: str) -> None:
    """``/dev/null`` (which epoll refuses), a pipe closed before a byte, and a
    descriptor 0 closed before the process started: no message, so the
    server exits with status 0, quietly."""
    command = [sys.executable, *server_args(tools)]
    if stdin == "dev-null":
        command = ["/bin/sh", "-c", 'exec "$@" </dev/null', "sh", *command]
    elif stdin == "closed-descriptor":
        command = ["/bin/sh", "-c", 'exec "$@" <&-', "sh", *command]
    finished = subprocess.run(
        command,
        input=b"",  # a pipe closed before a byte; for the others, never read
        capture_output=True,
        env=server_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert (finished.returncode, finished.stdout, finished.stderr) == (0, b"", b"")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_http_shutdown_kills_every_child(tools: Path, mode: str) -> None:
    """SIGTERM with a call running, in a request of its own or in a session."""
    state = state_of(tools)
    tag = f"httpstop{mode}{os.getpid()}"
    with http_server(tools) as (url, process):

        async def main() -> list[int]:
            pids: list[int] = []

            async def drive() -> None:
                with contextlib.suppress(Exception):  # the server goes away mid-call
                    async with http_client(url, mode=mode) as client:
                        await client.call_tool("tree", {"tag": tag})

            async with anyio.create_task_group() as group:
                group.start_soon(drive)
                pids.extend(await anyio.to_thread.run_sync(pids_of, state, tag))
                process.send_signal(signal.SIGTERM)
                await anyio.to_thread.run_sync(process.wait, 15)
                group.cancel_scope.cancel()
            return pids

        pids = anyio.run(main)
        assert process.returncode == 0
        assert wait_dead(pids, within=2.0)


# -- backends, HTTP options ---------------------------------------------------------------


def test_stdio_server_under_trio(tools: Path) -> None:
    async def main() -> Any:
        async with stdio_client(tools, "--backend", "trio") as client:
            return await client.call_tool("structured", {"text": "under trio"})

    assert anyio.run(main).structured_content == {"words": "2\n"}


def test_the_sandbox_flags_confine_every_call(tools: Path, tmp_path: Path) -> None:
    async def write(*flags: str) -> Any:
        async with stdio_client(tools, *flags) as client:
            return await client.call_tool("writer", {"path": str(tmp_path / "out.txt")})

    confined = anyio.run(write, "--sandbox", "read-only")
    assert confined.is_error and "Permission" in text_of(confined)
    assert not (tmp_path / "out.txt").exists()
    free = anyio.run(write)
    assert not free.is_error and (tmp_path / "out.txt").read_text() == "written"


def test_http_refuses_a_remote_host_unless_allowed(tools: Path) -> None:
    done = subprocess.run(
        [sys.executable, *server_args(tools, "--transport", "http", "--host", "0.0.0.0")],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert done.returncode == 2 and "--allow-remote" in done.stderr


@pytest.mark.parametrize("address", ["127.0.0.2", "127.0.0.1", "::1"])
def test_http_answers_only_its_own_host_on_every_loopback_address(
    tools: Path, tmp_path: Path, address: str
) -> None:
    """DNS rebinding: a web page whose name resolves to the loopback address
    sends its own name in Host (and Origin); such a request runs no tool."""
    canary = tmp_path / "written"
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "writer", "arguments": {"path": str(canary)}},
    }
    with http_server(tools, host=address) as (url, _), httpx2.Client(timeout=30) as http:
        own = url.split("/")[2]  # 127.0.0.2:PORT, [::1]:PORT
        port = own.rsplit(":", 1)[1]
        headers = open_session(http, url, own)
        other_port = str(int(port) + 1 if int(port) < 65535 else int(port) - 1)
        foreign = ["attacker.example", f"attacker.example:{port}", own.replace(port, other_port)]
        if address == "127.0.0.2":
            foreign.append(f"localhost:{port}")  # localhost is not 127.0.0.2
        for host in foreign:
            refused = http.post(url, json=call, headers={**headers, "Host": host})
            assert refused.status_code == 421, (host, refused.status_code)
        origin = {**headers, "Origin": "http://attacker.example"}
        assert http.post(url, json=call, headers=origin).status_code == 403
        assert not canary.exists()
        origin = {**headers, "Origin": f"http://{own}"}
        assert http.post(url, json=call, headers=origin).status_code == 200
        assert canary.read_text() == "written"
        if address != "127.0.0.2":  # localhost resolves here: it is this server's name too
            canary.unlink()
            local = {**headers, "Host": f"localhost:{port}"}
            assert http.post(url, json=call, headers=local).status_code == 200
            assert canary.exists()


def test_http_bearer_token(tools: Path) -> None:
    env_token = "token-for-tests-123"
    os.environ["CH_TEST_MCP_TOKEN"] = env_token
    try:
        with http_server(tools, "--bearer-token-env", "CH_TEST_MCP_TOKEN") as (url, _):
            refused = httpx2.post(url, json={}, timeout=10)
            assert refused.status_code == 401

            async def main() -> Any:
                async with http_client(url, token=env_token) as client:
                    return await client.call_tool("structured", {"text": "with token"})

            assert anyio.run(main).structured_content == {"words": "2\n"}
    finally:
        del os.environ["CH_TEST_MCP_TOKEN"]


SNOOP = (
    "import os\n"
    "server = os.getppid()\n"
    "found = []\n"
    "for tid in os.listdir(f'/proc/{server}/task'):\n"
    "    try:\n"
    "        with open(f'/proc/{server}/task/{tid}/environ', 'rb') as f:\n"
    f"            found.append({CANARY!r}.encode() in f.read())\n"
    "    except OSError:\n"
    "        pass\n"
    "print('read' if any(found) else 'refused')\n"
)


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(("--sandbox", "read-only"), id="read-only"),
        pytest.param(
            (),
            id="off",
            marks=pytest.mark.skipif(
                os.geteuid() != 0, reason="an unconfined child of the same user may read it"
            ),
        ),
    ],
)
def test_a_tool_cannot_read_the_server_s_credential(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Issue 22, finding 3: a child read the server's environment, where
    ``--credential`` found its value, through /proc (as root, confined or not)."""
    script_tool(tmp_path, "snoop", SNOOP)

    async def snoop() -> Any:
        async with stdio_client(tmp_path, *flags) as client:
            return await client.call_tool("snoop", {})

    result = anyio.run(snoop)
    assert not result.is_error and text_of(result).strip() == "refused", text_of(result)
