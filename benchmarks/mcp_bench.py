"""What MCP costs: start-up against a minimal server written with the same SDK,
and what MCP adds to a call.

Run: .venv/bin/python benchmarks/mcp_bench.py [--quick] [--startup]

- start-up: the time from spawning the server to the answer of its first
  ``tools/list`` over stdio (``initialize``, its answer, then
  ``notifications/initialized`` and ``tools/list``, as a client sends them),
  for a folder of 10 handles. The baseline is ``_minimal_mcp_server.py``: the
  SDK's low-level ``Server`` and ``stdio_server`` listing the same 10 tools.
  Both are spawned the same way (the interpreter, a script, the folder: ours
  is what the ``command-handle`` console script runs) and alternate, one
  start each (which goes first alternates too), after one start each to
  warm up. Each has its bytecode
  compiled, as after ``pip install``: both run with one ``PYTHONPYCACHEPREFIX``
  (an environment with ``PYTHONDONTWRITEBYTECODE`` would otherwise compile
  this project's modules from source at every start, and only this
  project's). The floors under both: the interpreter's start, and its start
  with the SDK's server modules imported.
  Figures are medians in milliseconds, of the wall time and of the time on a
  CPU (``/proc/PID/task/*/schedstat``, which leaves out waiting for a CPU
  that other work holds); the ratio is of the medians, and the spread is the
  range (and the middle half) of the ratios of the starts paired in order.
  On a shared machine a start varies by a third from one to the next, so
  only many interleaved starts compare.
- tools/call: over stdio and over streamable HTTP, driven by the official SDK
  client, against a direct ``Toolbox.call`` of the same tool in this process.
  The tool runs ``/bin/echo``. The server is started once per transport; each
  round makes ``calls`` sequential calls; rounds alternate between the direct
  call and the MCP call. Figures are medians in milliseconds per call.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from _handles import ECHO
from mcp import Client, StdioServerParameters

from command_handle import Toolbox


async def per_call(call: Callable[[], Awaitable[object]], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - start) / calls * 1e3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


HERE = Path(__file__).resolve().parent
TOOLS = 10
HANDSHAKE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
    b'"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
)
LIST = (
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
)
CONSOLE_SCRIPT = "import sys\nfrom command_handle.cli import main\nsys.exit(main())\n"


def on_cpu(pid: int) -> float:
    """Seconds the process's threads have run on a CPU (Linux schedstat): unlike
    the wall time, it leaves out the time spent waiting for a CPU that other
    work on this shared machine holds."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
            total += int(stat.read().split()[0])
    return total / 1e9


def start_once(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawning ``command`` to the answer of its first ``tools/list``,
    and the seconds it ran on a CPU until then."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(HANDSHAKE)
    process.stdin.flush()
    json.loads(process.stdout.readline())
    process.stdin.write(LIST)
    process.stdin.flush()
    listed = json.loads(process.stdout.readline())
    elapsed = time.perf_counter() - start
    cpu = on_cpu(process.pid)
    assert len(listed["result"]["tools"]) == TOOLS, listed
    process.stdin.close()
    process.wait(timeout=30)
    return elapsed, cpu


def run_once(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    return time.perf_counter() - start


def startup(starts: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="mcp-startup-"))
    bytecode = Path(tempfile.mkdtemp(prefix="mcp-startup-pyc-"))
    for index in range(TOOLS):
        (folder / f"echo{index}.json").write_text(json.dumps({**ECHO, "name": f"echo{index}"}))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    ours = [sys.executable, "-c", CONSOLE_SCRIPT, "mcp", str(folder)]
    base = [sys.executable, str(HERE / "_minimal_mcp_server.py"), str(folder)]
    # os._exit: the floors stop where a server would start serving, before the
    # interpreter's teardown (which a start to the first tools/list never pays).
    floors = {
        "interpreter": [sys.executable, "-c", "import os; os._exit(0)"],
        "SDK import": [
            sys.executable,
            "-c",
            "import mcp.server.lowlevel, mcp.server.stdio, os; os._exit(0)",
        ],
    }
    try:
        for command in (ours, base):  # compile and cache the bytecode of both
            start_once(command, env)
        wall: dict[str, list[float]] = {"ours": [], "base": [], **{name: [] for name in floors}}
        cpu: dict[str, list[float]] = {"ours": [], "base": []}
        for index in range(starts):
            pair = (("base", base), ("ours", ours))
            for name, command in pair if index % 2 else pair[::-1]:  # neither always first
                elapsed, ran = start_once(command, env)
                wall[name].append(elapsed)
                cpu[name].append(ran)
            for name, command in floors.items():
                wall[name].append(run_once(command, env))
    finally:
        shutil.rmtree(folder)
        shutil.rmtree(bytecode)
    medians = {name: statistics.median(values) * 1e3 for name, values in wall.items()}
    print(f"start-up to the first tools/list, {TOOLS} tools, {starts} starts each:")
    for label, times in (("wall", wall), ("on CPU", cpu)):
        ours_ms, base_ms = (statistics.median(times[name]) * 1e3 for name in ("ours", "base"))
        ratios = sorted(o / b for o, b in zip(times["ours"], times["base"], strict=True))
        print(
            f"  {label:6}  command-handle mcp {ours_ms:.0f} ms, minimal SDK server "
            f"{base_ms:.0f} ms: {ours_ms / base_ms:.2f}x, {ours_ms - base_ms:+.0f} ms "
            f"(paired ratios {ratios[0]:.2f}-{ratios[-1]:.2f}, middle half "
            f"{ratios[len(ratios) // 4]:.2f}-{ratios[(3 * len(ratios)) // 4]:.2f})"
        )
    print(
        f"  floors (wall): interpreter {medians['interpreter']:.0f} ms, "
        f"SDK import {medians['SDK import']:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--startup", action="store_true", help="the start-up row only")
    options = parser.parse_args()
    quick = options.quick
    startup(9 if quick else 41)
    if options.startup:
        return
    rounds, calls = (3, 30) if quick else (9, 100)
    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    (folder / "echo.json").write_text(json.dumps(ECHO))
    toolbox = Toolbox.load(folder)
    server = [sys.executable, "-m", "command_handle", "mcp", str(folder)]

    async def direct() -> object:
        return await toolbox.call("echo", {"word": "hi"})

    async def measure(client: Client) -> tuple[list[float], list[float]]:
        async def over_mcp() -> object:
            return await client.call_tool("echo", {"word": "hi"})

        await over_mcp()
        ours, base = [], []
        for _ in range(rounds):
            base.append(await per_call(direct, calls))
            ours.append(await per_call(over_mcp, calls))
        return ours, base

    async def stdio() -> tuple[list[float], list[float]]:
        params = StdioServerParameters(command=server[0], args=server[1:])
        async with Client(params, cache=None) as client:
            return await measure(client)

    port = free_port()
    process = subprocess.Popen(
        [*server, "--transport", "http", "--port", str(port)], stdin=subprocess.DEVNULL
    )
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)

        async def http() -> tuple[list[float], list[float]]:
            async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:
                return await measure(client)

        results = {"stdio": anyio.run(stdio), "http": anyio.run(http)}
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
        for file in folder.iterdir():
            os.remove(file)
        folder.rmdir()
    for transport, (ours, base) in results.items():
        o, b = statistics.median(ours), statistics.median(base)
        print(
            f"{transport:5}  MCP {o:.3f} ms  direct Toolbox.call {b:.3f} ms  "
            f"round trip adds {o - b:.3f} ms ({o / b:.2f}x)"
        )


if __name__ == "__main__":
    main()
