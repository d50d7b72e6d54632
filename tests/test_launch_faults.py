"""A launch cannot be half done: whatever fails or interrupts a call around
its launch (Ctrl-C, running out of descriptors just after the spawn, a
callback that raises, an event loop that is gone, a sandbox that could not be
applied), the call ends with no child running and no descriptor left open,
and the error says what happened. Checked with the process table and
/proc/self/fd, never with our own bookkeeping."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from command_handle import Executor, Policy
from command_handle.executor import _cgroup, _spawn
from command_handle.form import escape
from command_handle.handle import Invocation

from .processes import (
    children,
    open_fds,
    python_handle,
)

# A child that says so on stdout, starts a grandchild in its group, records
# the grandchild's pid in the file named by its first argument, then sleeps.
SLEEPER = (
    "import subprocess, sys, time\n"
    "print('started', flush=True)\n"
    "kid = subprocess.Popen(['sleep', '300'])\n"
    "open(sys.argv[1], 'w').write(str(kid.pid))\n"
    "time.sleep(300)\n"
)
QUIET = {"stdout": "ignore", "stderr": "ignore"}


def sleeper(pidfile: Path, **fields: Any) -> Invocation:
    handle = python_handle(SLEEPER, arguments=["-c", escape(SLEEPER), str(pidfile)], **fields)
    return handle.render(None, Policy(kill_grace=0.2))


@pytest.fixture(autouse=True)
def warm() -> None:
    """One call first: what a first launch opens for good (the /dev/null the
    launch shares) is then open before the descriptors are counted."""
    Executor().call_sync(python_handle("pass"))


def left_over() -> list[int]:
    """Our children still there after a moment; they are killed and reaped, so
    a failing test leaves nothing to the next one."""
    deadline = time.monotonic() + 5
    while children() and time.monotonic() < deadline:
        time.sleep(0.02)
    found = children()
    for pid in found:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return found


@contextmanager
def nothing_left_behind() -> Iterator[None]:
    """Assert that the block leaves no child process and no descriptor open."""
    fds = open_fds()
    yield
    assert left_over() == []
    assert open_fds() == fds


def interrupt_main_thread_after(seconds: float) -> threading.Timer:
    """Ctrl-C, as the terminal delivers it: SIGINT to the main thread."""
    assert threading.current_thread() is threading.main_thread()
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(seconds, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    return timer


@contextmanager
def spawner_busy(spawner: _spawn.Spawner) -> Iterator[threading.Event]:
    """Every thread ``spawner`` may have runs a job that waits for the yielded
    event, so a launch submitted meanwhile waits in the queue behind them."""
    gate = threading.Event()
    holders: list[threading.Thread] = []
    try:
        for _ in range(spawner._size):
            running = threading.Event()

            def hold(running: threading.Event = running) -> None:
                running.set()
                gate.wait(30)

            holder = threading.Thread(target=spawner.call, args=(hold,), daemon=True)
            holder.start()
            holders.append(holder)
            assert running.wait(5), "a holding job did not start"
        yield gate
    finally:
        gate.set()
        for holder in holders:
            holder.join(5)


def grandchild(pidfile: Path) -> int | None:
    text = pidfile.read_text() if pidfile.exists() else ""
    return int(text) if text else None


# -- 5. cgroup.kill --------------------------------------------------------------------


def test_the_cgroup_check_reports_a_hierarchy_without_cgroup_kill(tmp_path: Path) -> None:
    """A cgroup made under the base must have ``cgroup.kill``. A directory laid
    out like a cgroup root (it has ``cgroup.procs``) but whose new cgroups have
    no ``cgroup.kill`` is refused."""
    (tmp_path / "cgroup.procs").write_text("")
    why = _cgroup._check(str(tmp_path), "/")[1]
    assert "cgroup.kill" in why, why
    assert list(tmp_path.iterdir()) == [tmp_path / "cgroup.procs"]  # no probe left


def _v1_hierarchy() -> str | None:
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            if fields[2] == "cgroup" and "pids" in fields[3].split(","):
                return fields[1]
    return None


def test_the_cgroup_check_on_real_hierarchies() -> None:
    """The v2 root cgroup never has ``cgroup.kill`` itself, but the cgroups made
    under it do: accepted. A v1 hierarchy has ``cgroup.procs`` and no
    ``cgroup.kill``: refused."""
    if os.geteuid() != 0:
        pytest.skip("making cgroups needs root here")
    base, why = _cgroup._base()
    assert base is not None, why
    v1 = _v1_hierarchy()
    if v1 is None:
        pytest.skip("no cgroup v1 pids hierarchy mounted")
    before = set(os.listdir(v1))
    refused, why = _cgroup._check(v1, "/")
    assert refused is None and "cgroup.kill" in why, why
    assert set(os.listdir(v1)) == before
