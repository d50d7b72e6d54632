"""What MCP adds to a call: ``tools/call`` over stdio and over streamable HTTP,
driven by the official SDK client, against a direct ``Toolbox.call`` of the
same tool in this process, measured in the same run.

Run: .venv/bin/python benchmarks/mcp_bench.py [--quick]

The tool runs ``/bin/echo``. The server is started once per transport; each
round makes ``calls`` sequential calls; rounds alternate between the direct
call and the MCP call. Figures are medians in milliseconds per call.
"""

from __future__ import annotations

import argparse
import json
import os
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
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
