"""asyncio.run with many concurrent calls, real SIGINT at random moments.

usage: python attack/asyncio_sigint.py ROUNDS TASKS MAXDELAY_MS
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

from command_handle import CommandHandle, Executor, Policy

ROUNDS, TASKS, MAXDELAY = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
MARK = f"55{os.getpid() % 1000:03d}"
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


def left() -> list[str]:
    out = subprocess.run(["pgrep", "-af", f"sleep {MARK}"], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if "pgrep" not in line]


async def main(r: int, timer: threading.Timer) -> None:
    timer.start()
    await asyncio.gather(
        *(EXECUTOR.call(NAP, {"seconds": f"{MARK}{r:04d}{i:03d}"}) for i in range(TASKS))
    )


async def works() -> None:
    await asyncio.wait_for(
        asyncio.gather(*(EXECUTOR.call(NAP, {"seconds": "0"}) for _ in range(TASKS))), 10
    )


stats: dict[str, int] = {"rounds": 0, "ki": 0, "other": 0, "left_now": 0, "left_later": 0}
samples: list[object] = []
for r in range(ROUNDS):
    delay = random.uniform(0, MAXDELAY) / 1000
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    try:
        asyncio.run(main(r, timer))
    except KeyboardInterrupt:
        stats["ki"] += 1
    except BaseException as exc:
        stats["other"] += 1
        samples.append(repr(exc)[:200])
    while True:
        try:
            timer.join()
            break
        except KeyboardInterrupt:
            samples.append("KI after asyncio.run")
    stats["rounds"] += 1
    if left():
        stats["left_now"] += 1
    time.sleep(0.2)
    found = left()
    if found:
        stats["left_later"] += 1
        samples.append({"round": r, "delay_ms": round(delay * 1000, 2), "left": found[:2]})
        subprocess.run(["pkill", "-f", f"sleep {MARK}"])
    asyncio.run(works())
print(json.dumps({**stats, "samples": samples[:5]}))
subprocess.run(["pkill", "-f", f"sleep {MARK}"])
