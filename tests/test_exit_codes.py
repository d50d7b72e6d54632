"""The one exit-code table (docs/handles.md, "Exit codes") holds for every
subcommand: 0 success, 1 ran and failed, 2 refused / usage / invalid file,
128 + n stopped by signal n; a closed stdout exits quietly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .processes import PY, ROOT

FAILS = {
    "name": "fails",
    "description": "exits with 3",
    "handle": "command",
    "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
    "command": PY,
    "arguments": ["-I", "-c", "import sys; sys.exit(3)"],
}
UTCP_FAILS = {"name": "f", "call_template_type": "cli", "commands": [{"command": "false"}]}
WARNS = {
    "name": "warns",
    "description": "model data in a shell's code string: a lint warning",
    "handle": "command",
    "parameters": {"type": "object", "properties": {"msg": {"type": "string"}}},
    "command": "sh",
    "arguments": ["-c", "echo {{msg}}"],
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("exit-codes")
    (folder / "tools").mkdir()
    (folder / "tools" / "fails.json").write_text(json.dumps(FAILS))
    (folder / "utcp-fails.json").write_text(json.dumps(UTCP_FAILS))
    (folder / "bad").mkdir()
    (folder / "bad" / "bad.json").write_text('{"name": "x", "handle": "command"}')
    (folder / "undefined.json").write_text('{"$": "missing"}')
    (folder / "mixed").mkdir()  # a tool beside a file that is none: the tool loads
    (folder / "mixed" / "fails.json").write_text(json.dumps(FAILS))
    (folder / "mixed" / "package.json").write_text('{"name": "x", "version": "1"}')
    (folder / "warns").mkdir()
    (folder / "warns" / "warns.json").write_text(json.dumps(WARNS))
    return folder


WC = "fixtures/handles/word-count.json"
ECHO = "fixtures/utcp/protocol-echo-chain.json"
# (subcommand and arguments, expected exit code); {F} is the fixture folder.
TABLE = [
    (["run", WC, "--args", '{"text": "a b"}'], 0),
    (["run", "{F}/tools/fails.json"], 1),
    (["run", WC, "--args", '{"txt": 1}'], 2),
    (["run", "{F}/bad/bad.json"], 2),
    (["render", WC, "--args", '{"text": "a"}'], 0),
    (["render", WC, "--args", '{"text": 1}'], 2),
    (["validate", "fixtures/handles"], 0),
    (["validate", "{F}/bad"], 2),
    (["validate", "{F}/warns"], 0),
    (["validate", "--strict", "{F}/warns"], 2),
    (["validate", "--strict", "fixtures/handles/word-count.json"], 0),
    (["conformance"], 0),
    (["sandbox"], 2),
    (["utcp", "tools", "fixtures/utcp/discovery.json"], 0),
    (["utcp", "run", "{F}/missing.json"], 2),
    (["worker", "{F}/tools", "--temporal-address", "127.0.0.1:1", "--task-queue", "q"], 2),
    (["worker", "{F}/bad", "--temporal-address", "127.0.0.1:1", "--task-queue", "q"], 2),
    (["tools", "fixtures/handles"], 0),
    (["tools", "fixtures/handles", "--format", "nope"], 2),
    (["call", "fixtures/handles", "--tool", "word-count", "--args", '{"text": "a"}'], 0),
    (["call", "{F}/tools", "--tool", "fails"], 1),
    (["call", "{F}/tools", "--tool", "fails", "--args", '{"n": "x"}'], 2),
    (["call", "{F}/tools", "--tool", "nope"], 2),
    (["eval", "fixtures/templates/report.json", "--args", '{"team": {"name": "a"}}'], 0),
    (["eval", "{F}/undefined.json"], 1),
    (["eval", "{F}/bad/bad.json", "--args", "{"], 2),
    (["schema"], 0),
    (["utcp", "run", ECHO, "--args", '{"message": "hi"}'], 0),
    (["utcp", "run", "{F}/utcp-fails.json"], 1),
    (["utcp", "run", ECHO, "--args", '{"message": "-rf"}'], 2),
    (["utcp", "translate", ECHO], 0),
    (["utcp", "translate", "{F}/bad/bad.json"], 2),
    (["mcp", "{F}/bad"], 2),
    (["mcp", "{F}/mixed"], 0),  # starts, and ends with its empty stdin
    (["tools", "{F}/mixed"], 0),
    (["validate", "{F}/mixed"], 0),
    (["tools", "{F}/mixed/package.json"], 2),
    (["no-such-command"], 2),
    (["run"], 2),
    (["--version"], 0),
]


@pytest.mark.parametrize(("argv", "code"), TABLE, ids=[" ".join(a[:2]) for a, _ in TABLE])
def test_every_subcommand_follows_the_table(files: Path, argv: list[str], code: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "command_handle", *(a.replace("{F}", str(files)) for a in argv)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.returncode == code, (done.stdout[-500:], done.stderr[-500:])
    assert "Traceback" not in done.stderr


def test_mcp_with_no_stdin_exits_cleanly() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "command_handle", "mcp", "fixtures/handles"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_closed_pipe_is_a_quiet_exit() -> None:
    """``render ... | head -1``: no 'Broken pipe' message, the SIGPIPE code."""
    reader = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert reader.stdin is not None
    writer = subprocess.run(
        [sys.executable, "-m", "command_handle", "schema"],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    reader.stdin.close()
    reader.wait()
    # The pipe may hold the whole schema before head exits; then it is a success.
    assert writer.returncode in (0, 141)
    assert writer.stderr == ""


def test_a_closed_pipe_from_the_start_is_a_quiet_exit() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "command_handle", "schema"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


def test_version_names_the_package() -> None:
    from command_handle import __version__

    done = subprocess.run(
        [sys.executable, "-m", "command_handle", "--version"], capture_output=True, text=True
    )
    assert done.stdout.strip() == f"command-handle {__version__}"


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_server_stopped_by_a_signal_exits_0(stop: signal.Signals) -> None:
    """The table's one exception: a signal is how a server is stopped, so
    ``mcp`` (and ``worker``, tests/test_temporal.py) exits 0 after its
    graceful shutdown, where ``run`` exits 128 + n (tests/test_cli.py)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "command_handle", "mcp", "fixtures/handles"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "exit-codes", "version": "1"},
            },
        }
        process.stdin.write(json.dumps(hello).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1  # serving
        process.send_signal(stop)
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert code == 0
    assert process.stderr is not None and b"Traceback" not in process.stderr.read()
