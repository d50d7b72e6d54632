"""Ctrl-C at every point of a call where the interpreter can raise it.

A real SIGINT lands wherever the main thread happens to be; the sweep in
``ctrl_c_sweep.py`` raises one at each point of the call's code where CPython
runs signal handlers, from the call's start to its wait for the child, one
round per point, in a process of its own. Every round must end in
KeyboardInterrupt with no child left in the process table, and the executor
must run the next call (it has one slot).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SWEEP = Path(__file__).with_name("ctrl_c_sweep.py")


def sweep(mode: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(SWEEP), mode], capture_output=True, text=True, timeout=600, check=True
    )
    rounds: list[dict[str, Any]] = json.loads(done.stdout)
    return rounds


def test_ctrl_c_at_any_point_of_a_trio_call_leaves_no_child_and_no_lost_slot() -> None:
    rounds = sweep("trio")
    reached = {point.split(":")[0] for point in (r["at"] for r in rounds)}
    # The whole path was swept: evaluation, the slot, the hand-off of the launch
    # to the spawner thread, and the start of the supervision.
    assert {"render", "acquire", "_call_trio", "supervise", "_drive_trio"} <= reached
    assert len(rounds) > 100
    bad = [r for r in rounds if r["outcome"] != "KeyboardInterrupt" or r["left"]]
    assert bad == []
    assert [r for r in rounds if r["unmarked moves"]] == []
    assert [r for r in rounds if not r["next call runs"]] == []


def test_ctrl_c_at_any_point_of_an_asyncio_call_leaves_no_child_and_no_lost_slot() -> None:
    """Under ``asyncio.run`` the first Ctrl-C cancels the main task; the call's
    hand-off moves the idle spawner threads onto the loop's CPU as a blocking
    call's does, and must leave them marked for the restore."""
    rounds = sweep("asyncio")
    reached = {point.split(":")[0] for point in (r["at"] for r in rounds)}
    assert {"render", "acquire", "call_async", "_submit", "supervise"} <= reached
    if len(os.sched_getaffinity(0)) > 1:
        assert "move_to" in reached
    assert len(rounds) > 100
    bad = [r for r in rounds if r["outcome"] != "KeyboardInterrupt" or r["left"]]
    assert bad == []
    assert [r for r in rounds if not r["next call runs"]] == []
    assert [r for r in rounds if r["unmarked moves"]] == []


def test_ctrl_c_at_any_point_of_a_blocking_call_leaves_no_child_slot_or_spawner_thread() -> None:
    rounds = sweep("sync")
    reached = {point.split(":")[0] for point in (r["at"] for r in rounds)}
    assert {"render", "acquire_sync", "_submit", "launch_sync", "supervise"} <= reached
    assert len(rounds) > 100
    assert [r for r in rounds if r["outcome"] != "KeyboardInterrupt"] == []
    # A slot taken or a spawner thread claimed by an interrupted call would make
    # the next blocking call wait for ever.
    assert [r for r in rounds if not r["next call runs"]] == []
    assert [r for r in rounds if r["left"]] == []
    # Cut short as it moves the idle spawner thread onto the caller's CPU, the
    # call leaves that thread marked to take the main thread's CPUs back.
    if len(os.sched_getaffinity(0)) > 1:
        assert "move_to" in reached
    assert [r for r in rounds if r["unmarked moves"]] == []


# A trio program whose own callback computes for long: Ctrl-C must reach the
# callback itself (as it would outside a call), not wait for its next await.
CALLBACK_SCRIPT = r"""
import json, os, signal, sys, time
import trio
from command_handle import CommandHandle, Executor

MARK = sys.argv[2]
CHATTY_NAP = CommandHandle.load({
    "name": "chatty-nap", "handle": "command", "command": "/bin/sh",
    "parameters": {"type": "object", "properties": {"seconds": {"type": "string"}}},
    "arguments": ["-c", 'echo hi; exec sleep "$0"', {"$": "seconds"}],
})
EXECUTOR = Executor()
spun = {"finished": False}

def spin():
    signal.raise_signal(signal.SIGINT)
    end = time.monotonic() + 60
    while time.monotonic() < end:  # pure Python, no checkpoint
        pass
    spun["finished"] = True

async def on_chunk(stream, data):
    spin()

def on_started(pid, program):
    spin()

async def main():
    prepared = EXECUTOR.prepare(CHATTY_NAP, {"seconds": MARK})
    if sys.argv[1] == "on_chunk":
        await EXECUTOR.run(prepared, on_chunk)
    else:
        await EXECUTOR.run(prepared, on_started=on_started)

try:
    trio.run(main)
    outcome = "returned"
except KeyboardInterrupt:
    outcome = "KeyboardInterrupt"
print(json.dumps({"outcome": outcome, "callback finished": spun["finished"]}))
"""


@pytest.mark.parametrize("callback", ["on_chunk", "on_started"])
def test_ctrl_c_reaches_a_computing_callback_of_a_trio_call(callback: str) -> None:
    mark = f"{9000 + os.getpid() % 1000}.{len(callback)}31"
    try:
        done = subprocess.run(
            [sys.executable, "-c", CALLBACK_SCRIPT, callback, mark],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        report = json.loads(done.stdout)
        assert report == {"outcome": "KeyboardInterrupt", "callback finished": False}
        left = subprocess.run(["pgrep", "-f", f"sleep {mark}"], capture_output=True, text=True)
        assert left.stdout == ""
    finally:
        subprocess.run(["pkill", "-f", f"sleep {mark}"], check=False)


# A process whose first trio call runs a plan: the interpreter module is
# imported after the call began, and its step launch must be protected too:
# a pipeline's commands run in tasks of their own, outside the call's frames.
# SIGINT is raised right after a step's launch returned, before its
# supervision: unprotected, the KeyboardInterrupt would leave the child.
PLAN_SCRIPT = r"""
import json, signal, subprocess, sys
import trio
from command_handle import Executor, utcp

MARK = sys.argv[1]
TEMPLATE = {
    "name": "nap", "call_template_type": "cli",
    "commands": [{"command": "sleep " + MARK + " | cat"}], "env_vars": {"PATH": "/usr/bin:/bin"},
}
EXECUTOR = Executor()
fired = []

def tracer(frame, event, arg):
    if frame.f_code.co_filename.endswith("_interpreter.py") and frame.f_code.co_name == "start":
        if event == "line" and not fired:
            import linecache
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
            if "self.launched = True" in line:
                fired.append(True)
                signal.raise_signal(signal.SIGINT)
        return tracer
    return tracer if event == "call" and "command_handle" in frame.f_code.co_filename else None

async def main():
    sys.settrace(tracer)
    try:
        await EXECUTOR.run(utcp.prepare(TEMPLATE, {}, policy=EXECUTOR.policy))
    finally:
        sys.settrace(None)

try:
    trio.run(main)
    outcome = "returned"
except BaseException as exc:
    outcome = type(exc).__name__
left = subprocess.run(["pgrep", "-f", "sleep " + MARK], capture_output=True, text=True).stdout
print(json.dumps({"outcome": outcome, "fired": bool(fired), "left": left.split()}))
"""


def test_ctrl_c_after_a_plan_step_launched_in_the_first_trio_call_leaves_no_child() -> None:
    mark = f"{9100 + os.getpid() % 1000}.417"
    try:
        done = subprocess.run(
            [sys.executable, "-c", PLAN_SCRIPT, mark],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        report = json.loads(done.stdout.splitlines()[-1])
        assert report == {"outcome": "KeyboardInterrupt", "fired": True, "left": []}
    finally:
        subprocess.run(["pkill", "-f", f"sleep {mark}"], check=False)
