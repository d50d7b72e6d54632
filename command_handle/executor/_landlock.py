"""Landlock, through a thin ctypes layer: the kernel's unprivileged sandbox.

Three system calls build a ruleset of allowed accesses and restrict the
calling thread, and everything it starts from then on, to it. The executor
applies a profile once to a spawner thread of its own (``_spawn``), so each
sandboxed call costs nothing more than an unsandboxed one.

A thin layer rather than a package: the interface is three system calls and
three structures, stable since Linux 5.13 and extended by ABI versions; the
Python packages on PyPI were young, wrapped a subset (no network rules, no
scoping) and added a compiled dependency. docs/decisions.md has the choice.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ._mounts import exposures

__all__ = [
    "SandboxProfile",
    "abi_version",
    "landlock_problem",
    "restrict_call_self",
    "restrict_self",
    "support",
]

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# Filesystem rights, and the ABI version that introduced each.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
MAKE_SYM, REFER, TRUNCATE, IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
# Network rights (ABI 4) and scopes (ABI 6).
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # allowed on a file
# Devices a confined program may still read and write.
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _syscall(number: int, *args: object) -> int:
    result = int(_libc().syscall(number, *args))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


@functools.cache
def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    try:
        return _syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except OSError:
        return 0


def _fs_rights(abi: int) -> int:
    return max((rights for version, rights in _FS_BY_ABI.items() if version <= abi), default=0)


@dataclass(frozen=True)
class SandboxProfile:
    """What a confined child may do. ``mode`` is ``"read-only"`` or
    ``"workspace-write"``; ``writable`` holds the workspace and writable roots
    (empty in read-only mode) and the profile's temporary directory.
    ``keep_capabilities``: children of root keep root's capabilities."""

    mode: str
    writable: tuple[str, ...]
    deny_read: tuple[str, ...]
    network: bool
    tmp_root: str
    backend: str = "landlock"
    keep_capabilities: bool = False


WHY_NO_LANDLOCK = (
    "Landlock is not available: the kernel is older than 5.13, or it was built or booted "
    "without it (lsm= must include landlock), or a seccomp filter (some container runtimes) "
    "refuses its system calls"
)
WHY_NO_NETWORK_RULES = "TCP rules need Landlock ABI 4 (Linux 6.7)"


def landlock_problem(network: bool) -> str | None:
    """Why Landlock cannot enforce a profile here (``network``: TCP allowed), or None."""
    abi = abi_version()
    if abi == 0:
        return WHY_NO_LANDLOCK
    if not network and abi < 4:
        return WHY_NO_NETWORK_RULES
    return None


def support() -> dict[str, object]:
    """What this machine can enforce, and why not (``command-handle sandbox check``)."""
    abi = abi_version()
    report: dict[str, object] = {"landlock_abi": abi}
    if abi == 0:
        report["filesystem"] = False
        report["why"] = WHY_NO_LANDLOCK
    else:
        report["filesystem"] = True
    report["network"] = abi >= 4
    if 0 < abi < 4:
        report["why_network"] = WHY_NO_NETWORK_RULES
    report["abstract_unix_sockets_and_signals"] = abi >= 6
    from ._seccomp import support as seccomp_support

    seccomp_support(report)  # every socket family, and read-only metadata
    report["deny_read_across_bind_mounts"] = abi > 0
    report["calls_apart"] = abi > 0  # each call's own domain: no ptrace, /proc or TMPDIR across
    from ._capabilities import support as capabilities_support

    report.update(capabilities_support())
    from ._bubblewrap import available as bubblewrap_problem

    problem = bubblewrap_problem()
    report["bubblewrap"] = problem is None
    if problem is not None:
        report["why_bubblewrap"] = problem
    return report


def _beneath_denied(path: str, denied: tuple[str, ...]) -> bool:
    return any(d == path or d.startswith(path.rstrip("/") + "/") for d in denied)


def _readable(path: str, denied: tuple[str, ...]) -> Iterator[tuple[str, int]]:
    """Rules that grant reading of ``path`` except the ``denied`` hierarchies.

    Landlock only grants, so a denied path is carved out by granting each
    sibling along the way instead of the parent. The parents keep READ_DIR
    (their entries can be listed), never READ_FILE or EXECUTE."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if path in denied or stat.S_ISLNK(info.st_mode):
        # A link is not granted: a rule on it would apply to its target, which may
        # be a denied hierarchy; every target is reached by its real path anyway.
        return
    if not _beneath_denied(path, denied):
        if not stat.S_ISDIR(info.st_mode) and info.st_nlink > 1:
            # A rule is on the inode: a hard link beside the carved-out path may be
            # a denied file under another name, and granting it would grant the
            # denied file by its own path too. Such a sibling is left unreadable.
            return
        yield path, READ
        return
    yield path, READ_DIR
    try:
        entries = os.listdir(path)
    except OSError:
        return
    for entry in entries:
        yield from _readable(os.path.join(path, entry), denied)


def _add_rule(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone or unreadable: nothing to grant
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        if not rights:
            return
        attr = _PathBeneathAttr(rights, fd)
        _syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(attr), 0)
    finally:
        os.close(fd)


def _rules(profile: SandboxProfile, all_fs: int) -> Iterable[tuple[str, int]]:
    yield from _readable("/", exposures(profile.deny_read))  # bind mounts of them too
    for device in DEVICES:
        yield device, READ_FILE | WRITE_FILE | IOCTL_DEV
    for root in (*profile.writable, profile.tmp_root):
        yield root, all_fs


def restrict_self(profile: SandboxProfile) -> None:
    """Confine the calling thread (which must have ``no_new_privs``) to ``profile``.

    Raises OSError when the kernel cannot enforce it; nothing is half applied:
    the thread is either fully restricted or not at all."""
    abi = abi_version()
    if abi == 0:
        raise OSError(errno.ENOSYS, "Landlock is not available on this kernel")
    if not profile.network and abi < 4:
        raise OSError(errno.ENOSYS, "turning the network off needs Landlock ABI 4 (Linux 6.7)")
    all_fs = _fs_rights(abi)
    attr = _RulesetAttr(all_fs, 0, 0)
    if not profile.network:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # no rule: all denied
        if abi >= 6:
            attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET
    if abi >= 6:
        attr.scoped |= SCOPE_SIGNAL  # a confined child cannot signal the application
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    try:
        for path, rights in _rules(profile, all_fs):
            _add_rule(ruleset, path, rights & all_fs)
        _syscall(_SYS_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)


def restrict_call_self(profile: SandboxProfile, tmpdir: str) -> None:
    """Confine the calling thread, already restricted to ``profile``, to one call
    of it: a domain of its own, nested in the profile's, where it may write only
    the writable roots, the devices and the call's ``tmpdir`` (not the temporary
    root the profile's calls share), and (ABI 6) signal and reach abstract Unix
    sockets only inside the domain. Sibling domains cannot ptrace each other,
    nor read each other's ``/proc/<pid>`` files that need it (any ABI).

    It handles only the rights that change the filesystem, so it needs no read
    rules: reading stays as the profile's domain allows."""
    abi = abi_version()
    handled = _fs_rights(abi) & ~READ
    scoped = 0
    if abi >= 6:
        scoped = SCOPE_SIGNAL | (0 if profile.network else SCOPE_ABSTRACT_UNIX_SOCKET)
    attr = _RulesetAttr(handled, 0, scoped)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 8  # no network rights handled
    ruleset = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    try:
        for device in DEVICES:
            _add_rule(ruleset, device, (WRITE_FILE | IOCTL_DEV) & handled)
        for root in (*profile.writable, tmpdir):
            _add_rule(ruleset, root, handled)
        _syscall(_SYS_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)
