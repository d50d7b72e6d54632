"""Blocking calls (call_sync) in the main thread, real SIGINT at random moments.

usage: python attack/sync_sigint.py ROUNDS MAXDELAY_MS WORKERS
Each round: main thread runs call_sync(sleep <long marked>), a timer thread sends
SIGINT after 0..MAXDELAY ms. After the KeyboardInterrupt: pgrep for the marked sleep
(the documented window may leave one), then a short call_sync must finish (a
watchdog aborts the process with a traceback if it hangs). WORKERS threads run
call_sync loops of their own meanwhile and must keep working.
"""

from __future__ import annotations

import faulthandler
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

from command_handle import CommandHandle, Executor, Policy

ROUNDS, MAXDELAY, WORKERS = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
MARK = f"66{os.getpid() % 1000:03d}"
NAP = CommandHandle.load(
    {
        "name": "nap",
        "handle": "command",
        "command": "/bin/sleep",
        "parameters": {"type": "object", "properties": {"seconds": {"type": "string"}}},
        "arguments": [{"$": "seconds"}],
    }
)
EXECUTOR = Executor(Policy(max_concurrency=1 + WORKERS))
stop = threading.Event()
worker_calls = [0] * WORKERS
worker_errors: list[str] = []


def worker(n: int) -> None:
    while not stop.is_set():
        try:
            EXECUTOR.call_sync(NAP, {"seconds": "0.01"})
            worker_calls[n] += 1
        except BaseException as exc:
            worker_errors.append(repr(exc))


def left() -> list[str]:
    out = subprocess.run(["pgrep", "-af", f"sleep {MARK}"], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if "pgrep" not in line]


threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(WORKERS)]
for thread in threads:
    thread.start()
main = threading.main_thread().ident
assert main is not None
stats = {"rounds": 0, "ki": 0, "returned": 0, "other": 0, "left": 0, "hung": 0}
samples = []
for r in range(ROUNDS):
    delay = random.uniform(0, MAXDELAY) / 1000
    timer = threading.Timer(delay, signal.pthread_kill, (main, signal.SIGINT))
    try:
        timer.start()
        EXECUTOR.call_sync(NAP, {"seconds": f"{MARK}{r:04d}"})
        stats["returned"] += 1
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
            pass
    stats["rounds"] += 1
    time.sleep(0.05)
    found = left()
    if found:
        stats["left"] += 1
        samples.append({"round": r, "delay_ms": round(delay * 1000, 2), "left": found[:2]})
        subprocess.run(["pkill", "-f", f"sleep {MARK}"])
    faulthandler.dump_traceback_later(30, exit=True)  # a hang: traceback and exit
    EXECUTOR.call_sync(NAP, {"seconds": "0"})
    faulthandler.cancel_dump_traceback_later()
stop.set()
faulthandler.dump_traceback_later(30, exit=True)
for thread in threads:
    thread.join()
faulthandler.cancel_dump_traceback_later()
stats["worker_calls"] = sum(worker_calls)
stats["worker_errors"] = len(worker_errors)
print(json.dumps({**stats, "samples": samples[:5], "worker_error_samples": worker_errors[:3]}))
subprocess.run(["pkill", "-f", f"sleep {MARK}"])
