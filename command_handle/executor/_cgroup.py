"""One cgroup v2 per call, whose kill also catches what left the process group.

A descendant that calls ``setsid`` leaves the child's process group, so the
group kill misses it (the documented limit). With ``Policy(cgroup_per_call=
True)`` each child enters a fresh cgroup before its program runs (it writes
"0" to the cgroup's ``cgroup.procs`` between fork and exec), and when the call
ends ``cgroup.kill`` (Linux 5.14) kills everything still in it, escapees
included; the cgroup is then removed. Moving the child after the launch
instead was tried and lost: the spawner thread may wait milliseconds for the
GIL, and the program had forked by then.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import threading
import time

__all__ = ["CallCgroup", "problem"]

_counter = itertools.count()


@functools.cache
def _base() -> tuple[str | None, str]:
    """Our own cgroup v2 directory, or None with why not."""
    mount = None
    with contextlib.suppress(OSError), open("/proc/self/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2":
                mount = fields[1]
                break
    if mount is None:
        return None, "no cgroup v2 hierarchy is mounted"
    relative = "/"
    with contextlib.suppress(OSError), open("/proc/self/cgroup") as groups:
        for line in groups:
            if line.startswith("0::"):
                relative = line[3:].strip()
    return _check(mount, relative)


def _check(mount: str, relative: str) -> tuple[str | None, str]:
    """Where calls' cgroups go: our cgroup (``relative`` in the hierarchy mounted
    at ``mount``), or None with why not."""
    base = os.path.join(mount, relative.lstrip("/"))
    if not os.access(base, os.W_OK):
        return None, f"this process cannot create cgroups under {base}"
    # A call's cgroup is made under ours, and it needs cgroup.kill. Ours has the
    # file too on Linux 5.14 or newer, unless it is the root, which never has
    # one: then a cgroup made for the purpose shows whether new ones get it.
    if not os.path.exists(os.path.join(base, "cgroup.kill")):
        why = _probe(base)
        if why is not None:
            return None, why
    return base, ""


def _probe(base: str) -> str | None:
    """Make a cgroup under ``base`` and remove it: None if it has cgroup.kill."""
    probe = os.path.join(base, f"command-handle-probe-{os.getpid()}-{next(_counter)}")
    try:
        os.mkdir(probe)
    except OSError as exc:
        return f"this process cannot create cgroups under {base} ({exc.strerror})"
    try:
        killable = os.path.exists(os.path.join(probe, "cgroup.kill"))
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(probe)
    if killable:
        return None
    return "the cgroup v2 hierarchy has no cgroup.kill (Linux 5.14 or newer)"


def problem() -> str | None:
    """None when calls can have cgroups of their own here, else why not."""
    base, why = _base()
    return None if base is not None else why


class CallCgroup:
    """The cgroup of one call's child. It is made, and its ``cgroup.procs``
    opened, before the launch, outside any sandbox: Landlock checks files when
    they are opened, not when they are written, so the child can still write
    to it."""

    __slots__ = ("path", "procs")

    def __init__(self) -> None:
        base, _ = _base()
        assert base is not None
        self.path = os.path.join(base, f"command-handle-{os.getpid()}-{next(_counter)}")
        os.mkdir(self.path)
        try:
            self.procs = os.open(
                os.path.join(self.path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC
            )
        except OSError:
            os.rmdir(self.path)
            raise

    def opened(self) -> None:
        """The launch is over: the procs descriptor is no longer needed (closed
        once: a second close could hit a reused number)."""
        procs, self.procs = self.procs, -1
        if procs >= 0:
            with contextlib.suppress(OSError):
                os.close(procs)

    def discard(self) -> None:
        """The launch failed: remove the unused cgroup."""
        self.opened()
        with contextlib.suppress(OSError):
            os.rmdir(self.path)

    def kill(self) -> None:
        """Kill everything in the cgroup and remove it once it is empty (at once,
        or from a background thread: the caller, maybe an event loop, never waits)."""
        self.opened()
        with contextlib.suppress(OSError), open(os.path.join(self.path, "cgroup.kill"), "w") as f:
            f.write("1")
        try:
            os.rmdir(self.path)  # refused while a killed process is still exiting
        except OSError:
            threading.Thread(target=_remove_later, args=(self.path,), daemon=True).start()


def _remove_later(path: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)
