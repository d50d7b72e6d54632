"""Many concurrent trio calls, real SIGINT at random moments; leftovers from pgrep.

usage: python attack/trio_nursery.py MODE ROUNDS TASKS MAXDELAY_MS
MODE: call (Executor.call), child (calls in child tasks, main task busy),
      stream (Executor.stream consumer), plan (UTCP-like plan sleep|cat), start.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import trio

from command_handle import CommandHandle, Executor, Policy

MODE, ROUNDS, TASKS, MAXDELAY = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
MARK = f"77{os.getpid() % 1000:03d}"
NAP = CommandHandle.load(
    {
        "name": "nap",
        "handle": "command",
        "command": "/bin/sleep",
        "parameters": {"type": "object", "properties": {"seconds": {"type": "string"}}},
        "arguments": [{"$": "seconds"}],
    }
)
EXECUTOR = Executor(Policy(max_concurrency=TASKS))


def leftovers() -> list[str]:
    out = subprocess.run(["pgrep", "-af", f"sleep {MARK}"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


def seconds(r: int, i: int) -> str:
    return f"{MARK}{r:04d}{i:03d}"


async def one(r: int, i: int) -> None:
    if MODE == "stream":
        async with EXECUTOR.stream(NAP, {"seconds": seconds(r, i)}) as events:
            async for _ in events:
                pass
    elif MODE == "start":
        process = await EXECUTOR.start(
            EXECUTOR.prepare(NAP, {"seconds": seconds(r, i)}), owner=f"o{i}"
        )
        await trio.sleep(100)
        del process
    elif MODE == "plan":
        from command_handle import utcp

        template = {
            "name": "pipe",
            "call_template_type": "cli",
            "commands": [{"command": f"sleep {seconds(r, i)} | cat | sleep {seconds(r, i)}"}],
            "env_vars": {"PATH": "/usr/bin:/bin"},
        }
        await EXECUTOR.run(utcp.prepare(template, {}, policy=EXECUTOR.policy))
    else:
        await EXECUTOR.call(NAP, {"seconds": seconds(r, i)})


async def main(r: int, timer: threading.Timer) -> None:
    timer.start()
    async with trio.open_nursery() as nursery:
        for i in range(TASKS):
            nursery.start_soon(one, r, i)
        if MODE == "child":
            x = 0
            while True:  # the main task does other work
                for _ in range(1000):
                    x += 1
                await trio.sleep(0)


async def works() -> bool:
    with trio.move_on_after(10):
        async with trio.open_nursery() as nursery:
            for _ in range(TASKS):
                nursery.start_soon(EXECUTOR.call, NAP, {"seconds": "0"})
        return True
    return False


def where(ki: BaseException) -> None:
    """Print where a KeyboardInterrupt was raised when that is inside the package."""
    import traceback

    while isinstance(ki, BaseExceptionGroup):
        ki = ki.exceptions[0]
    frames = traceback.extract_tb(ki.__traceback__)
    if frames and "command_handle" in frames[-1].filename:
        print("KI raised in the package:", file=sys.stderr)
        print("".join(traceback.format_list(frames[-8:])), file=sys.stderr)


stats: dict[str, object] = {"rounds": 0, "ki": 0, "other": {}, "left_now": 0}
stats.update({"left_later": 0, "broken": 0, "samples": []})
for r in range(ROUNDS):
    delay = random.uniform(0, MAXDELAY) / 1000
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    outcome = "none"
    try:
        trio.run(main, r, timer)
    except KeyboardInterrupt as ki:
        outcome = "ki"
        where(ki)
    except BaseExceptionGroup as group:
        kis, rest = group.split(KeyboardInterrupt)
        if kis is not None:
            for ki in kis.exceptions:
                where(ki)
        outcome = "ki" if rest is None else repr(rest)[:200]
    except BaseException as exc:
        outcome = repr(exc)[:200]
    try:
        timer.join()
    except KeyboardInterrupt:
        outcome += " (then KI after trio.run)"
    if MODE == "start":
        EXECUTOR.stop_processes()
    now = leftovers()
    time.sleep(0.2)
    later = leftovers()
    stats["rounds"] += 1
    stats["fds"] = len(os.listdir("/proc/self/fd"))
    if outcome == "ki":
        stats["ki"] += 1
    else:
        stats["other"][outcome] = stats["other"].get(outcome, 0) + 1
    if now:
        stats["left_now"] += 1
    if later:
        stats["left_later"] += 1
        stats["samples"].append({"round": r, "delay_ms": delay * 1000, "left": later[:3]})
        subprocess.run(["pkill", "-f", f"sleep {MARK}"])
    try:
        ok = trio.run(works)
    except KeyboardInterrupt:
        ok = False
    if not ok:
        stats["broken"] += 1
        print(json.dumps({"broken_after_round": r, "delay_ms": delay * 1000}), flush=True)
        break
print(json.dumps(stats), flush=True)
subprocess.run(["pkill", "-f", f"sleep {MARK}"])
