"""Starting a child: the only place in the project that creates a process.

Every child gets argv only (never a shell), the environment and directory it
was given, a new session (so it leads its own process group and everything it
forks can be signalled together), and no descriptor but its three streams.
Its exit is announced on a descriptor, so any event loop, or none, can wait
for it together with the child's pipes: a pidfd where the kernel has one, else
a pipe written by a thread that waits for the child.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Sequence

__all__ = ["Child", "launch"]

_HAS_PIDFD = hasattr(os, "pidfd_open")


class Child:
    """A started child: its pid, the descriptor that becomes readable when it
    exits, and its status once reaped."""

    __slots__ = ("_notify_write", "exit_fd", "pid", "popen")

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self._notify_write = -1
        self.exit_fd = -1
        if _HAS_PIDFD:
            try:
                self.exit_fd = os.pidfd_open(self.pid)
                return
            except OSError:
                pass  # a kernel or sandbox without pidfd_open: fall back to a thread
        self.exit_fd, self._notify_write = os.pipe()
        threading.Thread(target=self._wait_in_thread, daemon=True).start()

    def _wait_in_thread(self) -> None:
        self.popen.wait()
        os.close(self._notify_write)  # end-of-file on exit_fd: the child has exited

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def reap(self) -> int:
        """The exit status, once ``exit_fd`` is readable (negative: killed by a signal)."""
        code = self.popen.wait()
        return code

    def signal_group(self, signum: int) -> None:
        """Signal the child's whole process group (it leads its own session)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
            os.killpg(self.pid, signum)

    def kill_group(self) -> None:
        self.signal_group(signal.SIGKILL)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.exit_fd)


def launch(
    argv: Sequence[str],
    *,
    executable: str,
    env: dict[str, str],
    cwd: str,
    stdin: int | None,
    stdout: int | None,
    stderr: int | None,
) -> Child:
    """Start ``executable`` with ``argv`` in a new session.

    The streams are descriptors (``subprocess.DEVNULL`` for /dev/null, None to
    share ours). Raises OSError when the system refuses; nothing is left running.
    """
    popen = subprocess.Popen(
        list(argv),
        executable=executable,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        cwd=cwd,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    return Child(popen)
