"""Ctrl-C at every point where CPython can raise it, during one call: run as a script.

``python tests/ctrl_c_sweep.py trio`` runs ``Executor.call`` under trio,
``... asyncio`` the same under ``asyncio.run`` (which turns the first Ctrl-C
into a cancellation), and ``... sync`` runs ``Executor.call_sync`` in the
main thread, once per
position: SIGINT is raised at the Nth point of the call's own code where the
interpreter runs signal handlers (a function's start, a backward jump, the
return of a call), until the call reaches its wait for the child. Each round
must end in KeyboardInterrupt, leave no child in the process table, and leave
the Executor able to run the next call (it has one slot: a slot lost to the
interrupt would block that call), and leave no idle spawner thread moved onto
one CPU unmarked (see ``unmarked_moves``). Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import dis
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import types
from typing import Any

import trio

import command_handle
from command_handle import CommandHandle, Executor, Policy

PACKAGE = os.path.dirname(command_handle.__file__)
NAP = CommandHandle.load(
    {
        "name": "nap",
        "handle": "command",
        "command": "/bin/sleep",
        "parameters": {"type": "object", "properties": {"seconds": {"type": "string"}}},
        "arguments": [{"$": "seconds"}],
    }
)
EXECUTOR = Executor(Policy(max_concurrency=1))


@functools.cache
def signal_points(code: types.CodeType) -> frozenset[int]:
    """Offsets at which CPython 3.11+ may run a signal handler: a function's
    start or a plain yield's return (RESUME 0 and 1, not an await's), a
    backward jump, and right after a call returns."""
    points = set()
    after_call = False
    for instruction in dis.get_instructions(code):
        if after_call:
            points.add(instruction.offset)
            after_call = False
        name = instruction.opname
        if (name == "RESUME" and (instruction.arg or 0) < 2) or name == "JUMP_BACKWARD":
            points.add(instruction.offset)
        after_call = name in ("CALL", "CALL_FUNCTION_EX")
    return frozenset(points)


class Sweep:
    def __init__(self) -> None:
        self.count = 0
        self.target = 0
        self.fired_at = ""
        self.waited = False  # the call reached its wait before the target point

    def tracer(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if not frame.f_code.co_filename.startswith(PACKAGE):
            return None
        frame.f_trace_opcodes = True
        if event == "opcode" and frame.f_lasti in signal_points(frame.f_code):
            self.count += 1
            if self.count == self.target and not self.fired_at:
                self.fired_at = f"{frame.f_code.co_name}:{frame.f_lineno}"
                signal.raise_signal(signal.SIGINT)
        return self.tracer

    async def call(self, seconds: str) -> None:
        sys.settrace(self.tracer)
        try:
            await EXECUTOR.call(NAP, {"seconds": seconds})
        finally:
            sys.settrace(None)

    def call_sync(self, seconds: str) -> None:
        sys.settrace(self.tracer)
        try:
            EXECUTOR.call_sync(NAP, {"seconds": seconds})
        finally:
            sys.settrace(None)

    def round(self, target: int, seconds: str, mode: str) -> str:
        """Raise SIGINT at point ``target``; a timer raises it if the call waits first."""
        self.count, self.target, self.fired_at, self.waited = 0, target, "", False
        main = threading.main_thread().ident
        assert main is not None

        def interrupt_the_wait() -> None:
            if not self.fired_at:
                self.waited = True
                signal.pthread_kill(main, signal.SIGINT)

        backstop = threading.Timer(1.0, interrupt_the_wait)
        backstop.start()
        try:
            if mode == "trio":
                trio.run(self.call, seconds)
            elif mode == "asyncio":
                asyncio.run(self.call(seconds))
            else:
                self.call_sync(seconds)
            outcome = "returned"
        except KeyboardInterrupt:
            outcome = "KeyboardInterrupt"
        except BaseException as exc:  # reported, not hidden
            outcome = f"{type(exc).__name__}: {exc}"
        finally:
            backstop.cancel()
            backstop.join()
        return outcome


def left(seconds: str) -> bool:
    found = subprocess.run(["pgrep", "-f", f"sleep {seconds}"], capture_output=True, text=True)
    if found.stdout.strip():
        subprocess.run(["pkill", "-KILL", "-f", f"sleep {seconds}"], check=False)
        return True
    return False


def next_call_runs() -> bool:
    async def quick() -> None:
        with trio.fail_after(10):
            await EXECUTOR.call(NAP, {"seconds": "0"})

    try:
        trio.run(quick)
    except trio.TooSlowError:
        return False
    done = threading.Thread(target=EXECUTOR.call_sync, args=(NAP, {"seconds": "0"}), daemon=True)
    done.start()
    done.join(10)  # a blocking call, from a thread: one whose launch never comes hangs
    return not done.is_alive()


def unmarked_moves() -> list[str]:
    """Idle spawner threads left on other CPUs than the main thread's (a move
    the Ctrl-C cut short) without the mark that makes them take the main
    thread's back before they launch: their children would inherit that one
    CPU (with three CPUs or more, where a later caller may not move them)."""
    from command_handle.executor import _spawn

    main_cpus = os.sched_getaffinity(0)
    with _spawn.spawner._lock:
        return [
            f"thread {sleeper.tid} on {sorted(os.sched_getaffinity(sleeper.tid))}"
            for sleeper in _spawn.spawner._sleepers
            if os.sched_getaffinity(sleeper.tid) != main_cpus and not sleeper.moved
        ]


def main(mode: str) -> None:
    sweep = Sweep()
    trio.run(EXECUTOR.call, NAP, {"seconds": "0"})  # the spawner thread exists
    rounds: list[dict[str, Any]] = []
    target = 1
    while True:
        seconds = f"{os.getpid()}{target:05d}.5"  # unique, and longer than any test run
        outcome = sweep.round(target, seconds, mode)
        unmarked = unmarked_moves()  # before the next call moves them again
        if sweep.waited:
            left(seconds)
            break  # the call reached its wait: every point before it was swept
        rounds.append(
            {
                "at": sweep.fired_at,
                "outcome": outcome,
                "left": left(seconds),
                "unmarked moves": unmarked,
                "next call runs": next_call_runs(),
            }
        )
        if os.environ.get("SWEEP_PROGRESS"):
            print(target, rounds[-1], file=sys.stderr, flush=True)
        target += 1
    print(json.dumps(rounds))


if __name__ == "__main__":
    main(sys.argv[1])
