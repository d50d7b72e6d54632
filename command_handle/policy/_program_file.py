"""What the program file is, for a plan that an approver signs.

A plan that recorded only the program's path ran whatever the path named at
launch: a link retargeted, or a script rewritten in place, after the approval
ran under the approved hash (issue 22, finding 15). The identity is the real
path (links resolved), the device and inode, the size, the modification and
change times in nanoseconds (decimal strings: they pass 2**53), and the
SHA-256 of the content for files of at most :data:`HASHED_UP_TO` bytes
(docs/decisions.md has the measurements). It is computed only when a call is
described, never on a plain call's path.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from typing import Any

from ..errors import CommandError, ProgramChangedError

__all__ = ["HASHED_UP_TO", "check_program_identity", "program_identity"]

# Files up to this size have their content hashed: a script (the file a model
# could rewrite through another tool) costs well under a millisecond, and a
# rewrite that keeps the size and lands in the timestamps' tick is still seen.
# Larger files (compiled programs) are known by their inode, size and times.
HASHED_UP_TO = 1 << 20


def program_identity(path: str, pointer: str = "/command") -> dict[str, Any]:
    """The identity of the file ``path`` runs. ``sha256`` is None for a file
    larger than :data:`HASHED_UP_TO` or one this user may execute but not read."""
    real = os.path.realpath(path)
    try:
        # O_NONBLOCK: a FIFO swapped in for the program must not hang the describer.
        fd = os.open(real, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except PermissionError:
        return _identity(real, _regular(os.stat, real, pointer), None)
    except OSError as exc:
        raise CommandError(f"the command cannot be examined: {exc.strerror}", pointer) from None
    with os.fdopen(fd, "rb") as program:
        info = _regular(os.fstat, program.fileno(), pointer)  # the file read is the one shown
        digest = None
        if info.st_size <= HASHED_UP_TO:
            digest = hashlib.file_digest(program, "sha256").hexdigest()
    return _identity(real, info, digest)


def check_program_identity(path: str, expected: dict[str, Any], pointer: str = "/command") -> None:
    """Refuse when the file ``path`` runs is not the one described as ``expected``."""
    try:
        now = program_identity(path, pointer)
    except CommandError:
        now = None
    if now != expected:
        raise ProgramChangedError(
            "the program file changed after the call was described for approval (a link "
            "was retargeted, or the file was replaced or rewritten); nothing ran",
            pointer,
        )


def _regular(
    stat_of: Callable[[Any], os.stat_result], target: str | int, pointer: str
) -> os.stat_result:
    """The status of the program file, which must still be a regular file."""
    try:
        info = stat_of(target)
    except OSError as exc:
        raise CommandError(f"the command cannot be examined: {exc.strerror}", pointer) from None
    if not stat.S_ISREG(info.st_mode):
        raise CommandError("the command is not a regular file", pointer)
    return info


def _identity(real: str, info: os.stat_result, digest: str | None) -> dict[str, Any]:
    # Nanosecond times (and some devices and inodes) pass 2**53, which JSON
    # numbers (and RFC 8785, which the plan hash uses) cannot hold exactly:
    # they are decimal strings.
    return {
        "path": real,
        "device": str(info.st_dev),
        "inode": str(info.st_ino),
        "size": info.st_size,
        "mtime_ns": str(info.st_mtime_ns),
        "ctime_ns": str(info.st_ctime_ns),
        "sha256": digest,
    }
