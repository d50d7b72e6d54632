"""No capability survives into a child: what a spawner thread does to itself.

A program exec'd by root gets every capability in the bounding set, whatever
``no_new_privs`` says: root's are not new privileges. So a spawner thread
(whose credentials its children copy) empties, for itself, what exec draws
from: the bounding set, the inheritable and ambient sets; and it sets the
secure bits that stop exec from treating root as privileged (``NOROOT``) and
uid changes from adjusting capabilities (``NO_SETUID_FIXUP``), locked, so no
child can turn them back. The thread keeps its own permitted and effective
sets: it still opens what root may, and a child, which has none, cannot read
the memory of a thread that has more (the kernel refuses ptrace access to a
process with capabilities the caller lacks).

Credentials belong to a thread, so the application's own threads keep theirs.
``Policy(keep_capabilities=True)`` starts children from threads that skip this.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os

__all__ = ["drop_for_children", "support"]

_PR_CAPBSET_DROP, _PR_GET_SECUREBITS, _PR_SET_SECUREBITS = 24, 27, 28
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
_CAP_SETPCAP = 8
_NOROOT = 1 << 0
# NOROOT, NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE, each with its lock, and
# KEEP_CAPS locked off: the "pure capabilities" mode of capabilities(7).
_SECURE_BITS = 0b11101111


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _fail(what: str) -> OSError:
    code = ctypes.get_errno()
    return OSError(code, f"{what}: {os.strerror(code)}")


def _prctl(option: int, argument: int = 0) -> int:
    zero = ctypes.c_ulong(0)
    result = int(_libc().prctl(option, ctypes.c_ulong(argument), zero, zero, zero))
    if result < 0:
        raise _fail(f"prctl({option})")
    return result


def _sets() -> tuple[_Header, ctypes.Array[_Data]]:
    """This thread's capability sets (capget, version 3: two 32-bit words)."""
    header = _Header(_CAPABILITY_VERSION_3, 0)
    data = (_Data * 2)()
    if _libc().capget(ctypes.byref(header), data) != 0:
        raise _fail("capget")
    return header, data


def _effective(data: ctypes.Array[_Data]) -> int:
    return int(data[0].effective) | int(data[1].effective) << 32


def drop_for_children() -> None:
    """Leave nothing of this thread's capabilities to the programs it starts.

    Raises OSError when that cannot be done: root without ``CAP_SETPCAP``
    cannot empty its bounding set, and its children would be root with every
    capability again."""
    header, data = _sets()
    if data[0].inheritable or data[1].inheritable:
        data[0].inheritable = data[1].inheritable = 0
        if _libc().capset(ctypes.byref(header), data) != 0:
            raise _fail("capset")
    try:
        _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # before Linux 4.3 there is no ambient set
            raise
    bits = _prctl(_PR_GET_SECUREBITS)
    if not _effective(data) >> _CAP_SETPCAP & 1:
        problem = _problem(data, bits)
        if problem is not None:
            raise OSError(errno.EPERM, f"children would get root's capabilities: {problem}")
        return  # exec gives its children nothing: not root, or root's bits already off
    for capability in range(64):
        try:
            _prctl(_PR_CAPBSET_DROP, capability)
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # past the last capability this kernel has
                break
            raise
    if bits & _SECURE_BITS != _SECURE_BITS:
        _prctl(_PR_SET_SECUREBITS, bits | _SECURE_BITS)


def _problem(data: ctypes.Array[_Data], bits: int) -> str | None:
    """Why children could not be left without capabilities, or None. Exec makes
    a child of root root again, with the whole bounding set, which only
    CAP_SETPCAP can empty; a child of anyone else gets nothing from exec (the
    inheritable and ambient sets are cleared, and no_new_privs ignores file
    capabilities unless ``Policy.allow_setuid`` says otherwise)."""
    if _effective(data) >> _CAP_SETPCAP & 1 or bits & _NOROOT:
        return None
    if os.getuid() != 0 and os.geteuid() != 0:
        return None
    return (
        "this process is root without CAP_SETPCAP, which emptying the bounding set needs "
        "(Policy(keep_capabilities=True) runs children with root's capabilities)"
    )


def support() -> dict[str, object]:
    """Whether this process's children are left without capabilities
    (``command-handle sandbox check``)."""
    _, data = _sets()
    problem = _problem(data, _prctl(_PR_GET_SECUREBITS))
    report: dict[str, object] = {"children_without_capabilities": problem is None}
    if problem is not None:
        report["why_capabilities"] = problem
    return report
