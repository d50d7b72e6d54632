"""Per-call cost of running a Command Handle under trio, asyncio and threads,
each against the usual way of running the same argv, measured in the same run.

Run: .venv/bin/python benchmarks/executor_bench.py [--quick]

Rows (``/bin/echo hi`` through a handle: validation, evaluation, checks,
spawn in a new session, capture, group cleanup):

- trio: ``await Executor.call`` against ``trio.run_process``;
- asyncio: ``await Executor.call`` against ``asyncio.create_subprocess_exec``
  plus ``communicate``;
- sync: ``Executor.call_sync`` against ``subprocess.run``;

each sequentially and concurrently (16 tasks under trio and asyncio, a
4-thread pool sharing one Executor for sync). Every round of every row also
times the floor, ``os.posix_spawn`` + ``os.waitpid`` with no pipes, and the
last column is the row against it. Rounds are interleaved so drift on a
shared machine hits all three alike; figures are medians in milliseconds per
call; the ratio is the median of each round's ratio, with the lowest and
highest. Goals: each row within the given ratio of its baseline (1.3 for the
sequential asyncio and sync rows and the 4-thread pool, 1.15 for the
rest). ``floor_ladder.py`` compares a call with the fair floor and shows
where the time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

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
EXECUTOR = Executor()

AsyncCall = Callable[[], Awaitable[None]]


async def ours_async() -> None:
    result = await EXECUTOR.call(HANDLE, ARGS)
    assert result.stdout == "hi\n"


async def trio_base() -> None:
    result = await trio.run_process(ARGV, capture_stdout=True, capture_stderr=True, env={})
    assert result.stdout == b"hi\n"


async def asyncio_base() -> None:
    process = await asyncio.create_subprocess_exec(
        *ARGV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={}
    )
    stdout, _ = await process.communicate()
    assert stdout == b"hi\n"


def ours_sync() -> None:
    assert EXECUTOR.call_sync(HANDLE, ARGS).stdout == "hi\n"


def sync_base() -> None:
    assert subprocess.run(ARGV, capture_output=True, env={}).stdout == b"hi\n"


_TO_DEVNULL = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]


def spawn_floor() -> None:
    pid = os.posix_spawn(ARGV[0], ARGV, {}, file_actions=_TO_DEVNULL)
    os.waitpid(pid, 0)


# -- one round of `number` calls, in ms per call -----------------------------------


async def _sequential(fn: AsyncCall, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        await fn()
    return (time.perf_counter() - start) / number * 1e3


async def _trio_wide(fn: AsyncCall, number: int) -> float:
    limiter = trio.CapacityLimiter(16)

    async def one() -> None:
        async with limiter:
            await fn()

    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(number):
            nursery.start_soon(one)
    return (time.perf_counter() - start) / number * 1e3


async def _asyncio_wide(fn: AsyncCall, number: int) -> float:
    semaphore = asyncio.Semaphore(16)

    async def one() -> None:
        async with semaphore:
            await fn()

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(number)))
    return (time.perf_counter() - start) / number * 1e3


def _sync_sequential(fn: Callable[[], None], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number * 1e3


def _threads(fn: Callable[[], None], number: int) -> float:
    with ThreadPoolExecutor(4) as pool:
        start = time.perf_counter()
        for future in [pool.submit(fn) for _ in range(number)]:
            future.result()
        return (time.perf_counter() - start) / number * 1e3


ROWS: list[tuple[str, str, Callable[[int], float], Callable[[int], float], float]] = [
    (
        "trio, sequential",
        "trio.run_process",
        lambda n: trio.run(_sequential, ours_async, n),
        lambda n: trio.run(_sequential, trio_base, n),
        1.15,
    ),
    (
        "trio, 16 concurrent",
        "trio.run_process",
        lambda n: trio.run(_trio_wide, ours_async, n),
        lambda n: trio.run(_trio_wide, trio_base, n),
        1.15,
    ),
    (
        "asyncio, sequential",
        "create_subprocess_exec",
        lambda n: asyncio.run(_sequential(ours_async, n)),
        lambda n: asyncio.run(_sequential(asyncio_base, n)),
        1.3,
    ),
    (
        "asyncio, 16 concurrent",
        "create_subprocess_exec",
        lambda n: asyncio.run(_asyncio_wide(ours_async, n)),
        lambda n: asyncio.run(_asyncio_wide(asyncio_base, n)),
        1.15,
    ),
    (
        "sync, sequential",
        "subprocess.run",
        lambda n: _sync_sequential(ours_sync, n),
        lambda n: _sync_sequential(sync_base, n),
        1.3,
    ),
    (
        "sync, 4 threads, one Executor",
        "subprocess.run",
        lambda n: _threads(ours_sync, n),
        lambda n: _threads(sync_base, n),
        1.3,
    ),
]


def main(quick: bool) -> None:
    rounds, number = (3, 40) if quick else (9, 200)
    for _, _, ours, base, _ in ROWS:  # warm up caches and the page cache
        ours(10)
        base(10)
    print(
        f"{'/bin/echo hi, ms per call (median)':<32} {'ours':>8} {'baseline':>9} "
        f"{'ratio (spread)':>18} {'goal':>5} {'floor':>6} {'x floor':>7}  baseline"
    )
    for name, base_name, ours, base, goal in ROWS:
        ours_samples, base_samples, floor_samples, ratios = [], [], [], []
        for _ in range(rounds):  # interleaved, so that drift hits all three alike
            ours_samples.append(ours(number))
            base_samples.append(base(number))
            floor_samples.append(_sync_sequential(spawn_floor, number))
            ratios.append(ours_samples[-1] / base_samples[-1])
        mine, theirs = statistics.median(ours_samples), statistics.median(base_samples)
        floor = statistics.median(floor_samples)
        # The ratio is the median of each round's ratio: a loaded machine's drift
        # between rounds cancels.
        ratio = f"{statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f})"
        print(
            f"{name:<32} {mine:>8.3f} {theirs:>9.3f} {ratio:>18} {goal:>5.2f} "
            f"{floor:>6.3f} {mine / floor:>7.3f}  {base_name}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke test)")
    options = parser.parse_args()
    assert subprocess.run(ARGV, capture_output=True, check=True).stdout == b"hi\n"
    main(options.quick)
