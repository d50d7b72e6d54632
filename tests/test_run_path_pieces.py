"""Pieces of the run path that every call passes through, checked on their own
with real processes: a result built without the dataclass constructor, and
the orphan reaping a group found empty can skip."""

from __future__ import annotations

import dataclasses
import os
import subprocess

from command_handle import CommandResult
from command_handle.executor import _spawn

from .processes import children, wait_dead

FIELDS = {
    "argv": ("/bin/echo", "hi"),
    "exit_code": None,
    "signal": 9,
    "stdout": "hi\n",
    "stderr": b"\xff",
    "timed_out": True,
    "stdout_truncated": True,
    "stderr_truncated": False,
    "duration_s": 0.25,
    "stdout_replaced": True,
    "stderr_replaced": False,
    "stdout_bytes": 3,
    "stderr_bytes": 1,
    "stdout_tail": "i\n",
    "stderr_tail": None,
}


def test_a_result_of_a_run_is_the_result_the_constructor_makes() -> None:
    made = CommandResult.of_run(**FIELDS)  # type: ignore[arg-type]
    constructed = CommandResult(**FIELDS)  # type: ignore[arg-type]
    assert made == constructed
    every = {field.name for field in dataclasses.fields(CommandResult)}
    assert set(vars(made)) == every, "of_run must set every field the class has"
    assert {name: getattr(made, name) for name in every} == {
        name: getattr(constructed, name) for name in every
    }
    assert made.view is None and repr(made) == repr(constructed)
    assert dataclasses.replace(made, view={"a": 1}).view == {"a": 1}


def _started(argv: list[str]) -> _spawn.Child:
    return _spawn.launch(
        argv,
        executable=argv[0],
        env={"PATH": "/usr/bin:/bin"},
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_a_lone_child_leaves_an_empty_group() -> None:
    child = _started(["/bin/true"])
    child.reap()
    child.kill_group()
    assert child.group_gone, "a reaped child alone in its group leaves nothing to reap"
    child.finish()
    assert child.pid not in children()


def test_a_group_with_members_left_is_not_taken_for_empty() -> None:
    """The child exits and leaves a member in its group: the kill after its exit
    finds it, so the group's orphans are still reaped when we are a reaper."""
    child = _started(["/bin/sh", "-c", "sleep 300 & exit 0"])
    child.reap()  # sh forked the sleep before it exited
    members = [
        int(pid)
        for pid in os.listdir("/proc")
        if pid.isdigit() and _group(int(pid)) == child.pid and int(pid) != child.pid
    ]
    assert members, "the sleep should still be in the group"
    child.kill_group()
    assert not child.group_gone
    child.finish()
    assert wait_dead(members, 5) == []


def _group(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[2])
    except (OSError, ValueError, IndexError):
        return None
