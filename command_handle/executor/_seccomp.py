"""A seccomp filter for what Landlock cannot refuse: sockets, metadata, io_uring.

Landlock's network rules cover TCP ``connect`` and ``bind`` only: MPTCP,
TCP Fast Open (``sendto`` with ``MSG_FASTOPEN``), ``listen`` without
``bind``, UDP, raw and netlink sockets all pass it. It has no right for
changing a file's mode, owner, times or extended attributes either. So a
Landlock profile whose network is off, or whose mode is ``read-only``, also
gets a seccomp filter, loaded once on each of the profile's spawner threads
after Landlock (filters belong to a thread and are inherited by everything
it starts, like the Landlock domain):

- network off: ``socket`` and ``socketpair`` of any family but ``AF_UNIX``
  fail with ``EACCES``, so no socket can reach or serve the network;
- read-only: the chmod, chown, utime and setxattr/removexattr families, and
  the ``chattr`` ioctls, fail with ``EPERM``, anywhere (seccomp sees no
  paths, so the profile's ``TMPDIR`` is no exception);
- either: io_uring fails with ``EPERM``, since its rings create sockets and
  set extended attributes without these system calls.

libseccomp does the arch checks and the BPF; it is called through ctypes
(six functions), as ``_landlock`` calls the kernel, rather than through a
Python binding: docs/decisions.md has the choice.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import platform
import socket
from collections.abc import Iterator
from typing import Any

from ._landlock import SandboxProfile

__all__ = ["confine", "needed", "problem", "support"]

_ACT_ALLOW = 0x7FFF0000
_ACT_KILL_PROCESS = 0x80000000
_ATTR_ACT_BADARCH = 2
_CMP_NE, _CMP_MASKED_EQ = 1, 7
_NR_ERROR = -1  # __NR_SCMP_ERROR: a name libseccomp does not know


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


SOCKETS = ("socket", "socketpair")
IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")
METADATA = (
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "utime",
    "utimes",
    "futimesat",
    "utimensat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "setxattrat",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "removexattrat",
    "file_setattr",
)
# System calls newer than the libseccomp a machine may have (Debian 12 ships
# 2.5.4): their numbers, shared by x86_64 and aarch64 since Linux 5.1.
_NEWER = {"fchmodat2": 452, "setxattrat": 463, "removexattrat": 466, "file_setattr": 469}
_NEWER_ARCHES = ("x86_64", "aarch64")


def _ioctl_write(kind: str, number: int, size: int) -> int:
    """_IOW(kind, number, size) on x86_64 and aarch64."""
    return (1 << 30) | (size << 16) | (ord(kind) << 8) | number


# chattr: FS_IOC_SETFLAGS (long and int sizes) and FS_IOC_FSSETXATTR (struct fsxattr).
CHATTR_IOCTLS = (_ioctl_write("f", 2, 8), _ioctl_write("f", 2, 4), _ioctl_write("X", 32, 28))


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


@functools.cache
def _library() -> Any:
    """libseccomp, typed; None when it is not installed."""
    names = [ctypes.util.find_library("seccomp"), "libseccomp.so.2"]
    for name in names:
        if name is None:
            continue
        try:
            lib = ctypes.CDLL(name, use_errno=True)
        except OSError:
            continue
        lib.seccomp_init.argtypes = (ctypes.c_uint32,)
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_release.argtypes = (ctypes.c_void_p,)
        lib.seccomp_release.restype = None
        lib.seccomp_attr_set.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32)
        lib.seccomp_attr_set.restype = ctypes.c_int
        lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
        lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
        lib.seccomp_rule_add_array.argtypes = (
            ctypes.c_void_p,
            ctypes.c_uint32,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.POINTER(_ArgCmp),
        )
        lib.seccomp_rule_add_array.restype = ctypes.c_int
        lib.seccomp_load.argtypes = (ctypes.c_void_p,)
        lib.seccomp_load.restype = ctypes.c_int
        return lib
    return None


def _kernel_has_filters() -> bool:
    """The kernel has seccomp filters (the ``Seccomp:`` line of /proc/self/status)."""
    try:
        with open("/proc/self/status") as status:
            return any(line.startswith("Seccomp:") for line in status)
    except OSError:
        return False


WHY_NO_LIBSECCOMP = (
    "libseccomp is not installed (Debian and Ubuntu: apt-get install libseccomp2; Fedora: "
    "dnf install libseccomp); it refuses the sockets and metadata changes Landlock cannot"
)
WHY_NO_FILTERS = "the kernel was built without seccomp filters (CONFIG_SECCOMP_FILTER)"


@functools.cache
def problem() -> str | None:
    """Why a seccomp filter cannot be loaded here, or None."""
    if _library() is None:
        return WHY_NO_LIBSECCOMP
    if not _kernel_has_filters():
        return WHY_NO_FILTERS
    return None


def needed(profile: SandboxProfile) -> bool:
    """Whether this Landlock profile needs the filter."""
    return not profile.network or profile.mode == "read-only"


def support(report: dict[str, object]) -> None:
    """Add to ``command-handle sandbox check``'s report what the filter enforces:
    the network off (every socket family, with Landlock's TCP rules) and
    read-only metadata."""
    why = problem()
    report["seccomp"] = why is None
    report["network"] = bool(report.get("network")) and why is None
    report["read_only_metadata"] = why is None
    if why is not None:
        report["why_seccomp"] = why


def _number(lib: Any, name: str) -> int | None:
    number = int(lib.seccomp_syscall_resolve_name(name.encode()))
    if number == _NR_ERROR and platform.machine() in _NEWER_ARCHES:
        return _NEWER.get(name)
    return number if number >= 0 else None  # negative: not a system call of this arch


def _rules(profile: SandboxProfile) -> Iterator[tuple[int, str, tuple[tuple[int, int, int], ...]]]:
    """(action, system call, argument comparisons) of the profile's filter."""
    refused = _act_errno(errno.EPERM)
    if not profile.network:
        for name in SOCKETS:  # any family but AF_UNIX; the kernel reads it as an int,
            # and a 64-bit value equal to AF_UNIX is AF_UNIX to it too
            yield _act_errno(errno.EACCES), name, ((0, _CMP_NE, socket.AF_UNIX),)
    for name in IO_URING:
        yield refused, name, ()
    if profile.mode == "read-only":
        for name in METADATA:
            yield refused, name, ()
        for request in CHATTR_IOCTLS:  # the kernel reads the request as 32 bits
            yield refused, "ioctl", ((1, _CMP_MASKED_EQ, request),)


def confine(profile: SandboxProfile) -> None:
    """Load the profile's filter on the calling thread, which has ``no_new_privs``.

    Raises OSError when it cannot be loaded; the thread is then unchanged."""
    if not needed(profile):
        return
    lib = _library()
    if lib is None:
        raise OSError(errno.ENOSYS, WHY_NO_LIBSECCOMP)
    context = lib.seccomp_init(_ACT_ALLOW)
    if not context:
        raise OSError(errno.ENOMEM, "seccomp_init failed")
    try:
        # A 32-bit or x32 system call would pass a native-only filter: kill instead.
        _check(lib.seccomp_attr_set(context, _ATTR_ACT_BADARCH, _ACT_KILL_PROCESS), "attr")
        for action, name, comparisons in _rules(profile):
            number = _number(lib, name)
            if number is None:
                continue  # this architecture has no such system call
            array = (_ArgCmp * max(len(comparisons), 1))()
            for slot, (arg, op, datum) in zip(array, comparisons, strict=False):
                slot.arg, slot.op = arg, op
                slot.datum_a = 0xFFFFFFFF if op == _CMP_MASKED_EQ else datum
                slot.datum_b = datum if op == _CMP_MASKED_EQ else 0
            added = lib.seccomp_rule_add_array(context, action, number, len(comparisons), array)
            _check(added, name)
        _check(lib.seccomp_load(context), "seccomp_load")
    finally:
        lib.seccomp_release(context)


def _check(result: int, what: str) -> None:
    if result < 0:
        raise OSError(-result, f"seccomp ({what}): {os.strerror(-result)}")
