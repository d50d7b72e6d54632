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
import subprocess
import sys
from pathlib import Path
from typing import Any

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
    assert [r for r in rounds if not r["next call runs"]] == []


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
