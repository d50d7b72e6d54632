"""glibc's posix_spawn, through ctypes: the launch without Python's Popen.

``subprocess.Popen`` spends most of a short call in Python (building its
arguments, an error pipe, bookkeeping); glibc's ``posix_spawn`` clones with
``CLONE_VFORK`` and does the rest in C. Python's own ``os.posix_spawn`` has no
way to set the working directory or close inherited descriptors, so the
functions are called directly, with glibc's extensions:
``posix_spawn_file_actions_addchdir_np`` (2.29) and ``_addclosefrom_np``
(2.34). Where they are missing, :func:`available` is False and the executor
uses ``Popen``.

The child gets a new session (``POSIX_SPAWN_SETSID``), an empty signal mask,
and every signal's disposition reset to the default (Python ignores SIGPIPE,
and glibc's threads use two real-time signals that must not stay blocked).
"""

from __future__ import annotations

import ctypes
import functools
import os
import subprocess
import sys
import threading
from collections.abc import Sequence

__all__ = ["available", "keep_file_actions", "spawn"]

_SETSIGDEF, _SETSIGMASK, _SETSID = 0x04, 0x08, 0x80
_BUFFER = 1024  # larger than posix_spawnattr_t, posix_spawn_file_actions_t and sigset_t


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    needed = (
        "posix_spawn",
        "posix_spawn_file_actions_addchdir_np",
        "posix_spawn_file_actions_addclosefrom_np",
        "posix_spawn_file_actions_adddup2",
        "posix_spawnattr_setflags",
        "posix_spawnattr_setsigmask",
        "posix_spawnattr_setsigdefault",
    )
    return libc if all(hasattr(libc, name) for name in needed) else None


def available() -> bool:
    return _libc() is not None


@functools.cache
def _devnull() -> int:
    return os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)


def _strings(items: Sequence[bytes]) -> ctypes.Array[ctypes.c_char_p]:
    array = (ctypes.c_char_p * (len(items) + 1))()
    array[:-1] = list(items)
    array[-1] = None
    return array


def _add_internal_signals(sigset: ctypes.Array[ctypes.c_char]) -> None:
    """Add glibc's two internal signals (32 and 33) to a set. sigfillset and
    sigaddset leave them out, so posix_spawn would leave them ignored in the
    child, which then keeps them ignored across exec."""
    word = int.from_bytes(sigset.raw[:8], sys.byteorder) | (1 << 31) | (1 << 32)
    ctypes.memmove(sigset, word.to_bytes(8, sys.byteorder), 8)


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(result, f"{what}: {os.strerror(result)}")


@functools.cache
def _attributes() -> ctypes.Array[ctypes.c_char]:
    """The spawn attributes, the same for every child: built once."""
    libc = _libc()
    assert libc is not None
    attributes = ctypes.create_string_buffer(_BUFFER)
    _check(libc.posix_spawnattr_init(attributes), "attributes")
    empty = ctypes.create_string_buffer(_BUFFER)
    full = ctypes.create_string_buffer(_BUFFER)
    libc.sigemptyset(empty)
    libc.sigfillset(full)
    _add_internal_signals(full)
    _check(libc.posix_spawnattr_setsigmask(attributes, empty), "signal mask")
    _check(libc.posix_spawnattr_setsigdefault(attributes, full), "signal defaults")
    flags = _SETSID | _SETSIGMASK | _SETSIGDEF
    _check(libc.posix_spawnattr_setflags(attributes, ctypes.c_short(flags)), "flags")
    return attributes


class _Kept(threading.local):
    """The last file actions a thread built, for its next launch."""

    enabled = False
    key: tuple[object, ...] | None = None
    actions: ctypes.Array[ctypes.c_char] | None = None


_kept = _Kept()


def keep_file_actions(enabled: bool) -> None:
    """Let this thread reuse its last file actions when the next launch has the
    same directory and descriptors (sequential calls get the same pipe numbers,
    which saves six glibc calls per launch). A spawner thread turns it on when
    it starts and off before it ends, which frees glibc's copy."""
    libc = _libc()
    if not enabled and _kept.actions is not None and libc is not None:
        libc.posix_spawn_file_actions_destroy(_kept.actions)
    _kept.enabled, _kept.key, _kept.actions = enabled, None, None


def _file_actions(
    libc: ctypes.CDLL, cwd: str, streams: Sequence[int | None]
) -> ctypes.Array[ctypes.c_char]:
    """A chdir, the three dup2 and a closefrom. The caller destroys them unless
    they are the thread's kept ones."""
    actions = ctypes.create_string_buffer(_BUFFER)
    _check(libc.posix_spawn_file_actions_init(actions), "file actions")
    try:
        _check(libc.posix_spawn_file_actions_addchdir_np(actions, os.fsencode(cwd)), "chdir")
        for target, source in enumerate(streams):
            if source is None:
                continue
            fd = _devnull() if source == subprocess.DEVNULL else source
            # dup2 onto 0, 1 or 2 clears close-on-exec on the copy.
            _check(libc.posix_spawn_file_actions_adddup2(actions, fd, target), "dup2")
        _check(libc.posix_spawn_file_actions_addclosefrom_np(actions, 3), "closefrom")
    except BaseException:
        libc.posix_spawn_file_actions_destroy(actions)
        raise
    return actions


def spawn(
    argv: Sequence[str],
    executable: str,
    env: dict[str, str],
    cwd: str,
    streams: Sequence[int | None],
) -> int:
    """Start ``executable`` and return its pid. ``streams`` are the child's
    stdin, stdout and stderr: a descriptor, ``subprocess.DEVNULL``, or None to
    share ours. Raises OSError (with ``filename`` set to ``cwd`` when the
    directory was the problem)."""
    libc = _libc()
    assert libc is not None
    attributes = _attributes()
    key = (cwd, *streams)
    actions = _kept.actions if _kept.enabled and _kept.key == key else None
    kept = actions is not None
    if actions is None:
        actions = _file_actions(libc, cwd, streams)
    try:
        arguments = _strings([os.fsencode(a) for a in argv])
        environment = _strings([os.fsencode(f"{k}={v}") for k, v in env.items()])
        pid = ctypes.c_int(0)
        result = libc.posix_spawn(
            ctypes.byref(pid), os.fsencode(executable), actions, attributes, arguments, environment
        )
        if result != 0:
            directory_fault = not os.path.isdir(cwd) or not os.access(cwd, os.X_OK)
            raise OSError(result, os.strerror(result), cwd if directory_fault else executable)
        return pid.value
    finally:
        if not kept:
            if _kept.enabled:  # keep these instead of the thread's previous ones
                if _kept.actions is not None:
                    libc.posix_spawn_file_actions_destroy(_kept.actions)
                _kept.key, _kept.actions = key, actions
            else:
                libc.posix_spawn_file_actions_destroy(actions)
