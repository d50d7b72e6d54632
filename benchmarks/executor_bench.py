"""Per-call cost of running a Command Handle, against baselines in the same run.

Run: .venv/bin/python benchmarks/executor_bench.py [--quick]

1. A handle running ``/bin/echo hi`` through ``Executor.call`` (validation,
   evaluation, checks, spawn in a new session, capture, group cleanup).
2. ``trio.run_process`` on the same argv with captured output.
3. A floor: ``os.posix_spawn`` + ``os.waitpid``, no pipes.
4. 1,000 calls at concurrency 16, through the Executor and through
   ``trio.run_process``.

Figures are medians of several rounds, in milliseconds per call. The goal is
the Executor within 1.15x of ``trio.run_process``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable

import trio

from command_handle import CommandHandle, Executor

ARGV = ["/bin/echo", "hi"]
HANDLE = CommandHandle.load(
    {
        "name": "echo",
        "handle": "command",
        "command": "/bin/echo",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
        "arguments": [{"$": "word"}],
    }
)
ARGS = {"word": "hi"}


async def executor_once(executor: Executor) -> None:
    result = await executor.call(HANDLE, ARGS)
    assert result.stdout == "hi\n"


async def trio_once() -> None:
    result = await trio.run_process(ARGV, capture_stdout=True, capture_stderr=True, env={})
    assert result.stdout == b"hi\n"


_TO_DEVNULL = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]


def spawn_floor() -> None:
    pid = os.posix_spawn(ARGV[0], ARGV, {}, file_actions=_TO_DEVNULL)
    os.waitpid(pid, 0)


async def timed_rounds(fn: Callable[[], Awaitable[None]], rounds: int, number: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            await fn()
        samples.append((time.perf_counter() - start) / number * 1e3)
    return statistics.median(samples)


async def concurrent(fn: Callable[[], Awaitable[None]], calls: int, width: int) -> float:
    limiter = trio.CapacityLimiter(width)

    async def one() -> None:
        async with limiter:
            await fn()

    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(calls):
            nursery.start_soon(one)
    return time.perf_counter() - start


async def main(quick: bool) -> None:
    rounds, number, calls = (3, 50, 200) if quick else (7, 200, 1000)
    executor = Executor()
    for _ in range(20):  # warm up caches and the page cache
        await executor_once(executor)
        await trio_once()
    # Interleave the rounds so drift on a shared machine hits both alike.
    ours_samples, trio_samples, floor_samples = [], [], []
    for _ in range(rounds):
        ours_samples.append(await timed_rounds(lambda: executor_once(executor), 1, number))
        trio_samples.append(await timed_rounds(trio_once, 1, number))
        start = time.perf_counter()
        for _ in range(number):
            spawn_floor()
        floor_samples.append((time.perf_counter() - start) / number * 1e3)
    ours, base, floor = (statistics.median(s) for s in (ours_samples, trio_samples, floor_samples))
    print(f"{'one call, /bin/echo hi':<44} {'median ms':>10}")
    print(f"{'Executor.call (handle)':<44} {ours:>10.3f}")
    print(f"{'trio.run_process (same argv)':<44} {base:>10.3f}")
    print(f"{'os.posix_spawn + waitpid (floor)':<44} {floor:>10.3f}")
    print(f"ratio Executor / trio.run_process: {ours / base:.3f} (goal <= 1.15)")

    ours_total = await concurrent(lambda: executor_once(Executor()), calls, 16)
    shared = Executor()
    shared_total = await concurrent(lambda: executor_once(shared), calls, 16)
    base_total = await concurrent(trio_once, calls, 16)
    print(f"{calls} calls at concurrency 16:")
    print(
        f"  Executor (one shared)      {shared_total:7.2f} s  {calls / shared_total:7.0f} calls/s"
    )
    print(f"  Executor (one per call)    {ours_total:7.2f} s  {calls / ours_total:7.0f} calls/s")
    print(f"  trio.run_process           {base_total:7.2f} s  {calls / base_total:7.0f} calls/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke test)")
    options = parser.parse_args()
    assert subprocess.run(ARGV, capture_output=True, check=True).stdout == b"hi\n"
    trio.run(main, options.quick)
