"""Each confined call an island: a Landlock domain of its own for what it starts.

The profile's spawner threads restrict themselves once, so every call of a
profile would share one domain, and Landlock lets a process ptrace, signal
and read ``/proc/<pid>/environ`` of anything in its own domain: a sibling call
could read another's credential, and write into its TMPDIR through the
temporary root they share. So each launch (and each file a plan opens) runs
on a short-lived thread, started from the profile's spawner thread, that
restricts itself once more to the call (``restrict_call_self``: its own
TMPDIR, signals and abstract sockets kept inside) and then does the job.
Domains of different calls are siblings, which the kernel keeps apart.

Restricting in the child between fork and exec instead would cost a fork per
launch (5.8 ms against 0.6 ms measured, docs/decisions.md), since vfork runs
no code of ours in the child.

The thread that launches a child is in the child's domain until it ends, a
few microseconds after the exec, and ``/proc/<tid>/environ`` of a thread is
the application's environment (its ``mem``, the application's memory). A
child of root cannot read it: the thread keeps capabilities the child lacks,
and the kernel refuses ptrace access to a task with capabilities the caller
does not have. For any user, the application is also made non-dumpable,
which refuses the access to a process without ``CAP_SYS_PTRACE``
(docs/sandbox.md has what that changes).
"""

from __future__ import annotations

import _thread
import ctypes
import errno
import functools
from collections.abc import Callable
from functools import partial
from typing import TypeVar, cast

from ._landlock import SandboxProfile, restrict_call_self
from ._spawn import Spawner

__all__ = ["CallSpawner"]

T = TypeVar("T")
_PR_SET_DUMPABLE = 4


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _in_own_domain(profile: SandboxProfile, tmpdir: str, function: Callable[[], T]) -> T:
    """On a profile's spawner thread: run ``function`` on a new thread confined
    to the call first, and hand back what it returns or raises."""
    outcome: list[tuple[bool, object]] = []
    done = _thread.allocate_lock()
    done.acquire()

    def island() -> None:
        try:
            restrict_call_self(profile, tmpdir)
            outcome.append((True, function()))
        except BaseException as exc:  # handed to the caller
            outcome.append((False, exc))
        finally:
            done.release()

    try:
        _thread.start_new_thread(island, ())
    except RuntimeError as exc:  # the system refused a thread: nothing was started
        raise OSError(errno.EAGAIN, f"cannot start a thread: {exc}") from None
    done.acquire()
    succeeded, value = outcome[0]
    if not succeeded:
        assert isinstance(value, BaseException)
        raise value
    return cast(T, value)


class CallSpawner(Spawner):
    """One confined call's view of its profile's spawner: each job runs on a
    thread of its own in the call's domain (see the module's docstring). It has
    no threads of its own to manage, so the Spawner's machinery is not set up."""

    def __init__(self, spawner: Spawner, profile: SandboxProfile, tmpdir: str) -> None:
        # Not Spawner.__init__: every job goes to the profile's spawner.
        self._spawner = spawner
        self._profile = profile
        self._tmpdir = tmpdir
        # Each call, not once: an application may have turned it back on.
        _libc().prctl(_PR_SET_DUMPABLE, ctypes.c_ulong(0), 0, 0, 0)

    def _island(self, function: Callable[[], T]) -> Callable[[], T]:
        return partial(_in_own_domain, self._profile, self._tmpdir, function)

    def call(self, function: Callable[[], T], undo: Callable[[T], None] | None = None) -> T:
        undoing: tuple[Callable[[T], None], ...] = () if undo is None else (undo,)
        return self._spawner.call(self._island(function), *undoing)

    async def call_async(
        self, function: Callable[[], T], undo: Callable[[T], None] | None = None
    ) -> T:
        undoing: tuple[Callable[[T], None], ...] = () if undo is None else (undo,)
        return await self._spawner.call_async(self._island(function), *undoing)
