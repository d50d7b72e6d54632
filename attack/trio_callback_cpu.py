"""Does Ctrl-C still reach a trio program whose on_chunk / on_started does CPU work?

usage: python attack/trio_callback_cpu.py chunk|started|plain|child
Prints the time from SIGINT to the end of trio.run and what was raised.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import trio

from command_handle import CommandHandle, Executor

WHERE = sys.argv[1]
MARK = f"88{os.getpid() % 1000:03d}"
NAP = CommandHandle.load(
    {
        "name": "nap",
        "handle": "command",
        "command": "/bin/sh",
        "parameters": {"type": "object", "properties": {"seconds": {"type": "string"}}},
        "arguments": ["-c", 'echo hi; exec sleep "$0"', {"$": "seconds"}],
    }
)
EXECUTOR = Executor()
fired = [0.0]


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:  # pure Python: no checkpoint
        pass


async def on_chunk(stream: str, data: bytes) -> None:
    spin(20)


def on_started(pid: int, program: str) -> None:
    spin(20)


async def call() -> None:
    prepared = EXECUTOR.prepare(NAP, {"seconds": MARK})
    if WHERE == "chunk":
        await EXECUTOR.run(prepared, on_chunk)
    elif WHERE == "started":
        await EXECUTOR.run(prepared, on_started=on_started)
    else:
        await EXECUTOR.run(prepared)


async def main() -> None:
    if WHERE == "child":
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            await trio.sleep_forever()
    else:
        await call()


def fire() -> None:
    fired[0] = time.monotonic()
    os.kill(os.getpid(), signal.SIGINT)


threading.Timer(1.0, fire).start()
try:
    trio.run(main)
    outcome = "returned"
except BaseException as exc:
    outcome = repr(exc)[:120]
took = time.monotonic() - fired[0]
left = subprocess.run(["pgrep", "-af", f"sleep {MARK}"], capture_output=True, text=True).stdout
print(f"{WHERE}: {outcome} {took:.2f}s after SIGINT; left: {left.strip()!r}")
subprocess.run(["pkill", "-f", f"sleep {MARK}"])
