"""Where else a path can be read: the mounts that show it under other names.

A bind mount shows a directory (or file) of a filesystem at a second place.
Landlock rules follow the path a file was reached by, and bubblewrap hides a
path by mounting over it, so a ``deny_read`` path hidden at its own name
would still be readable through a bind mount of it or of an ancestor. The
sandbox therefore denies it under every name the mount table gives it,
read from ``/proc/self/mountinfo`` when a profile's rules are built.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["exposures"]

_ESCAPE = re.compile(r"\\([0-7]{3})")


class _Mount(NamedTuple):
    device: str  # major:minor of the filesystem
    root: str  # the directory of that filesystem shown at ``point``
    point: str


def _unescape(field: str) -> str:
    """mountinfo writes a space, tab, newline and backslash as octal escapes."""
    return _ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), field)


def _mounts() -> list[_Mount]:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as table:
            lines = table.read().splitlines()
    except OSError:
        return []
    mounts = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) >= 5:
            mounts.append(_Mount(fields[2], _unescape(fields[3]), _unescape(fields[4])))
    return mounts


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _rebase(path: str, old: str, new: str) -> str:
    """``path`` (within ``old``) as seen under ``new``."""
    rest = path[len(old.rstrip("/")) :].lstrip("/")
    return os.path.join(new, rest) if rest else new


def _where(path: str, mounts: list[_Mount]) -> tuple[str, str] | None:
    """(device, path within that filesystem) of ``path``: the mount that shows it
    is the innermost one above it (the last of those, when one covers another)."""
    shown = None
    for mount in mounts:
        if _within(path, mount.point) and (shown is None or len(mount.point) >= len(shown.point)):
            shown = mount
    if shown is None:
        return None
    return shown.device, _rebase(path, shown.point, shown.root)


def exposures(paths: Iterable[str]) -> tuple[str, ...]:
    """``paths`` and every other name a mount gives them or part of them.

    For each path: the place (device, path within the filesystem) it shows,
    and the places of the mounts beneath it; then every mount of the same
    filesystem whose root lies above such a place shows it at its mount point
    plus the rest, and every mount whose root lies within it shows part of it.
    """
    paths = tuple(paths)
    if not paths:
        return ()
    mounts = _mounts()
    found = dict.fromkeys(paths)
    places: list[tuple[str, str]] = []
    for path in paths:
        place = _where(path, mounts)
        if place is not None:
            places.append(place)
        places += [(m.device, m.root) for m in mounts if m.point != path and _within(m.point, path)]
    for device, hidden in places:
        for mount in mounts:
            if mount.device != device:
                continue
            if _within(hidden, mount.root):
                found[_rebase(hidden, mount.root, mount.point)] = None
            elif _within(mount.root, hidden):
                found[mount.point] = None
    return tuple(found)
