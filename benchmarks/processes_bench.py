"""Processes that outlive their call: what they cost.

- memory: this process's resident size before and after starting 50 idle
  programs whose output windows are full (each wrote twice the Policy's
  ``session_output`` to stdout, unread), per process, against the bytes the
  windows are allowed to hold; and the threads they add;
- ``process_read`` over MCP stdio against a plain ``tools/call`` of
  ``/bin/true``, with the official SDK's client, alternating, in the same
  server: the read of a running program is a round trip with no launch.

    .venv/bin/python benchmarks/processes_bench.py [--processes 50] [--calls 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
WINDOW = 256 * 1024  # session_output for the memory row


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory(count: int) -> None:
    from command_handle import CommandHandle, Executor, Policy

    policy = Policy(max_sessions=count + 1, max_sessions_per_owner=count + 1, session_output=WINDOW)
    executor = Executor(policy)
    code = (
        f"import sys, time; sys.stdout.write('x' * {2 * WINDOW}); sys.stdout.flush(); "
        "print('full', flush=True); time.sleep(600)"
    )
    handle = CommandHandle.load(
        {"name": "fill", "handle": "command", "command": PY, "arguments": ["-c", code]}
    )
    prepared = executor.prepare(handle)
    # One first, so that what every later one shares (modules, spawner threads) is counted once.
    first = executor.start_sync(prepared, ready="full")
    first.wait_ready_sync(30)
    threads_before, before = threading.active_count(), rss()
    started = [executor.start_sync(prepared, ready="full") for _ in range(count)]
    for process in started:
        process.wait_ready_sync(30)
    time.sleep(0.5)
    after, threads_after = rss(), threading.active_count()
    kept = sum(len(w.buffer) + len(w.tail) for p in started for w in p._windows.values()) // count
    per = (after - before) / count
    print(
        f"memory: {count} idle processes, full windows: {per / 1024:.0f} KiB each "
        f"(of which output kept {kept / 1024:.0f} KiB), "
        f"{(threads_after - threads_before) / count:.0f} thread each"
    )
    executor.stop_processes()
    first.stop_sync()


def round_trips(calls: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "true.json").write_text(
            json.dumps({"name": "true", "handle": "command", "command": "/bin/true"})
        )
        Path(folder, "cat.json").write_text(
            json.dumps(
                {
                    "name": "cat",
                    "handle": "command",
                    "command": "/bin/cat",
                    "session": {"yield_after": 0.2},
                }
            )
        )
        params = StdioServerParameters(
            command=PY, args=["-m", "command_handle", "mcp", folder], cwd=str(ROOT)
        )

        async def main() -> tuple[list[float], list[float]]:
            async with Client(params, cache=None) as client:
                started = await client.call_tool("cat", {})
                text = started.content[0].text  # type: ignore[union-attr]
                process_id = "p-" + text.split("`p-", 1)[1].split("`", 1)[0]
                reads: list[float] = []
                trues: list[float] = []
                for _ in range(20):  # warm up both paths
                    await client.call_tool("process_read", {"process_id": process_id})
                    await client.call_tool("true", {})
                for _ in range(calls):
                    start = time.perf_counter()
                    await client.call_tool("process_read", {"process_id": process_id})
                    reads.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    await client.call_tool("true", {})
                    trues.append(time.perf_counter() - start)
                await client.call_tool("process_stop", {"process_id": process_id})
                return reads, trues

        reads, trues = anyio.run(main)
    read, true = statistics.median(reads) * 1e3, statistics.median(trues) * 1e3
    print(
        f"MCP stdio round trip: process_read {read:.2f} ms, tools/call /bin/true {true:.2f} ms "
        f"(median of {calls}; ratio {read / true:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--processes", type=int, default=50)
    parser.add_argument("--calls", type=int, default=200)
    options = parser.parse_args()
    memory(options.processes)
    round_trips(options.calls)


if __name__ == "__main__":
    main()
