"""Soak: many calls at once, mixing success, failure, timeout, cancellation,
refusal and UTCP plans; reports throughput and what was left behind.

Run: .venv/bin/python benchmarks/soak.py [--calls 10000] [--concurrency 32]

Reported at start and end: open file descriptors, zombie children and RSS.
``tests/test_soak.py`` runs 500 calls and asserts that nothing leaks.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from dataclasses import dataclass

import trio
from _handles import ECHO

from command_handle import ArgumentsError, CommandHandle, Executor, Policy, utcp

__all__ = ["Snapshot", "snapshot", "soak"]

_SLEEP = CommandHandle.load(
    {
        "name": "sleep",
        "handle": "command",
        "command": "/bin/sleep",
        "arguments": ["5"],
        "timeout": 0.2,
    }
)
_ECHO = CommandHandle.load(ECHO)
_FALSE = CommandHandle.load({"name": "false", "handle": "command", "command": "/bin/false"})
_PLAN = utcp.load(
    {
        "name": "soak",
        "call_template_type": "cli",
        "commands": [
            {"command": "echo UTCP_ARG_w_UTCP_END | /usr/bin/tr a-z A-Z"},
            {"command": 'echo "$CMD_0_OUTPUT"'},
        ],
    }
)
KINDS = ("success", "failure", "timeout", "cancel", "refused", "utcp")


@dataclass(frozen=True)
class Snapshot:
    fds: int
    zombies: int
    rss_kib: int


def snapshot() -> Snapshot:
    """Open descriptors, zombie children and resident memory of this process."""
    me = os.getpid()
    zombies = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == me:
            zombies += 1
    rss = 0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return Snapshot(len(os.listdir("/proc/self/fd")), zombies, rss)


async def _one(executor: Executor, index: int, outcomes: Counter[str]) -> None:
    kind = KINDS[index % len(KINDS)]
    if kind == "success":
        result = await executor.call(_ECHO, {"word": f"w{index}"})
        assert result.stdout == f"w{index}\n"
    elif kind == "failure":
        assert (await executor.call(_FALSE)).exit_code == 1
    elif kind == "timeout":
        assert (await executor.call(_SLEEP)).timed_out
    elif kind == "cancel":
        with trio.move_on_after(0.05) as scope:
            await executor.call(_SLEEP)
        assert scope.cancelled_caught
    elif kind == "refused":
        try:
            await executor.call(_ECHO, {"word": 5})
        except ArgumentsError:
            pass
        else:
            raise AssertionError("a refused call ran")
    else:
        assert await utcp.call(_PLAN, {"w": "abc"}, executor=executor) == "ABC"
    outcomes[kind] += 1


async def soak(calls: int, concurrency: int) -> tuple[float, Counter[str]]:
    """Run ``calls`` calls, ``concurrency`` at a time; return seconds and outcomes."""
    executor = Executor(Policy(max_concurrency=concurrency, kill_grace=0.2))
    outcomes: Counter[str] = Counter()
    indices = iter(range(calls))
    started = time.monotonic()

    async def worker() -> None:
        # A fixed pool of workers, so memory measures the calls, not queued tasks.
        for index in indices:
            await _one(executor, index, outcomes)

    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(worker)
    return time.monotonic() - started, outcomes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=32)
    options = parser.parse_args()
    before = snapshot()
    seconds, outcomes = trio.run(soak, options.calls, options.concurrency)
    after = snapshot()
    print(
        f"{options.calls} calls at concurrency {options.concurrency}: {seconds:.1f} s, "
        f"{options.calls / seconds:.0f} calls/s"
    )
    print("outcomes: " + ", ".join(f"{k} {outcomes[k]}" for k in KINDS))
    print("| | start | end |")
    print("|---|---|---|")
    print(f"| open descriptors | {before.fds} | {after.fds} |")
    print(f"| zombie children | {before.zombies} | {after.zombies} |")
    print(f"| RSS | {before.rss_kib / 1024:.1f} MiB | {after.rss_kib / 1024:.1f} MiB |")


if __name__ == "__main__":
    main()
