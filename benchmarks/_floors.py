"""The floors the per-call benchmarks divide by, launching ``/bin/echo hi``.

- :func:`raw_floor`: ``os.posix_spawn`` + ``waitpid``, stdout to /dev/null, no
  pipes, no session;
- :func:`fair_floor`: what any complete call must do, in C as far as Python
  allows: stdin from /dev/null, stdout and stderr on pipes read to
  end-of-file, a new session (``setsid=True``), then ``waitpid``.
"""

from __future__ import annotations

import os

ARGV = ["/bin/echo", "hi"]
_TO_DEVNULL = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]


def raw_floor() -> None:
    pid = os.posix_spawn(ARGV[0], ARGV, {}, file_actions=_TO_DEVNULL)
    os.waitpid(pid, 0)


def fair_floor() -> None:
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, out_write, 1),
        (os.POSIX_SPAWN_DUP2, err_write, 2),
    ]
    pid = os.posix_spawn(ARGV[0], ARGV, {}, file_actions=actions, setsid=True)
    os.close(out_write)
    os.close(err_write)
    drain(out_read, err_read)
    os.waitpid(pid, 0)


def drain(*fds: int) -> None:
    """Read each descriptor to end-of-file, then close it."""
    for fd in fds:
        while os.read(fd, 65536):
            pass
        os.close(fd)
