"""What a plan does to files itself: its redirections and its globs, confined
as its children are, and never blocking the event loop.

A plan's interpreter runs in the application's process, where nothing is
confined. So a redirection target is opened, and a glob's directories read,
where the call's sandbox holds:

- Landlock: on a thread in the call's own domain (``_island``), nested in the
  profile's (the kernel decides, as for the children). Globs
  stay on the loop's thread: Landlock lets a child list every directory
  (``deny_read`` hides contents, not names), so confining them changes nothing;
- bubblewrap: its child sees the host through a mount namespace the
  application's threads are not in, so another thread opens what that view
  would give: writes only beneath the writable roots (resolved with
  ``RESOLVE_BENEATH``, so a link cannot lead out) or to its devices, reads of
  anything outside ``deny_read``; and a glob, there too, lists
  nothing inside a ``deny_read`` directory (an empty tmpfs there);
- no sandbox: on the caller's thread, as the interpreter's other file calls
  (``cd``'s checks, a program's lookup, a builtin's writes).

Whatever the sandbox, an open never blocks (``O_NONBLOCK``; a FIFO without a
reader fails at once) and only regular files and character devices are
accepted. The target means what it would mean to the command's shell:
``/dev/stdin``, ``/dev/stdout``, ``/dev/stderr`` and ``/dev/fd/N`` are the
command's streams (:func:`stream_named`); magic links (``/proc/self/fd/N``),
files in ``/proc`` and ``/dev/tty`` would be the engine's own, and are refused.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import re
import stat
from functools import partial

from ._expand import Segment, fields_with_origin, may_glob
from ._landlock import DEVICES, SandboxProfile
from ._spawn import Spawner, spawner

__all__ = ["PlanFiles", "files_for", "open_target", "stream_named"]

_SYS_OPENAT2 = 437  # the same number on every architecture (Linux 5.6)
_RESOLVE_NO_MAGICLINKS, _RESOLVE_BENEATH = 0x02, 0x08
_AT_FDCWD = -100
_TTY = os.makedev(5, 0)  # /dev/tty: the opener's controlling terminal
_STREAMS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_NAME = re.compile(r"/dev/fd/([0-9]+)")

Fields = list[tuple[str, bool]]


def stream_named(path: str) -> int | None:
    """The descriptor a target names as bash reads it (``/dev/stdout`` is 1,
    ``/dev/fd/N`` is N), or None for an ordinary file. Opened in the engine's
    process these would be the application's descriptors."""
    number = _STREAMS.get(path)
    if number is not None:
        return number
    matched = _FD_NAME.fullmatch(path)
    return int(matched.group(1)) if matched else None


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


_openat2_missing = False


def _open(path: str, flags: int, dir_fd: int | None, resolve: int) -> int:
    """openat2(2) with ``resolve``; os.open where the kernel lacks it (before 5.6),
    unless the resolution must stay beneath ``dir_fd``."""
    global _openat2_missing
    if not _openat2_missing:
        mode = 0o666 if flags & os.O_CREAT else 0  # the kernel refuses a mode otherwise
        how = _OpenHow(flags, mode, resolve)
        start = _AT_FDCWD if dir_fd is None else dir_fd
        fd = int(
            _libc().syscall(
                ctypes.c_long(_SYS_OPENAT2),
                ctypes.c_long(start),
                ctypes.c_char_p(os.fsencode(path)),
                ctypes.byref(how),
                ctypes.c_long(ctypes.sizeof(how)),
            )
        )
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code != errno.ENOSYS:
            raise OSError(code, os.strerror(code), path)
        _openat2_missing = True
    if resolve & _RESOLVE_BENEATH:
        raise OSError(errno.ENOSYS, "this kernel cannot keep the path beneath its root", path)
    return os.open(path, flags, 0o666, dir_fd=dir_fd)


@functools.cache
def _procfs() -> int | None:
    try:
        return os.stat("/proc").st_dev
    except OSError:
        return None


def _refusal(info: os.stat_result) -> tuple[int, str] | None:
    """Why an opened target is not taken: bash's wording where it has one."""
    mode = info.st_mode
    if stat.S_ISREG(mode):
        if info.st_dev == _procfs():
            return errno.EACCES, "a file in /proc belongs to the engine's process, not the command"
        return None
    if stat.S_ISCHR(mode):
        if info.st_rdev == _TTY:  # the command runs in a session with no terminal
            return errno.ENXIO, os.strerror(errno.ENXIO)
        return None
    if stat.S_ISDIR(mode):
        return errno.EISDIR, os.strerror(errno.EISDIR)
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return errno.EINVAL, f"{kind}; a redirection opens only files and character devices"


def open_target(path: str, flags: int, dir_fd: int | None = None, resolve: int = 0) -> int:
    """Open a redirection target without blocking and check what it is.

    Raises OSError with the message for the step's stderr. The descriptor
    returned is blocking again, for the child that inherits it."""
    fd = _open(path, flags | os.O_NONBLOCK | os.O_NOCTTY, dir_fd, resolve | _RESOLVE_NO_MAGICLINKS)
    try:
        refused = _refusal(os.fstat(fd))
        if refused is not None:
            raise OSError(refused[0], refused[1], path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _within(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


class PlanFiles:
    """Unconfined: everything on the caller's thread. A non-blocking open returns
    at once, and a hop to another thread doubled the cost of a builtin with a
    redirection (docs/decisions.md)."""

    async def open(self, path: str, flags: int) -> int:
        return open_target(path, flags)

    async def fields(self, segments: list[Segment], cwd: str) -> Fields:
        return fields_with_origin(segments, cwd)


class _LandlockFiles(PlanFiles):
    """In the call's own domain: the kernel applies the profile and the call's TMPDIR."""

    def __init__(self, spawner: Spawner) -> None:
        self.spawner = spawner

    async def open(self, path: str, flags: int) -> int:
        return await self.spawner.call_async(partial(open_target, path, flags))


class _BubblewrapFiles(PlanFiles):
    """As far as bwrap's view of the host lets its child, on a thread of the
    ``no_new_privs`` spawner: the checks read the filesystem too, and a call
    under bwrap costs milliseconds anyway."""

    def __init__(self, profile: SandboxProfile, tmpdir: str) -> None:
        self.profile = profile
        self.tmpdir = tmpdir
        self.denied = profile.deny_read  # real paths (Policy resolves them)

    @functools.cached_property
    def writable(self) -> tuple[str, ...]:
        """The writable roots' real paths, found once a plan writes somewhere."""
        return tuple(os.path.realpath(root) for root in (*self.profile.writable, self.tmpdir))

    async def open(self, path: str, flags: int) -> int:
        return await spawner.call_async(partial(self._open, path, flags))

    def _open(self, path: str, flags: int) -> int:
        if flags & os.O_ACCMODE != os.O_RDONLY:
            return self._open_for_writing(path, flags)
        fd = open_target(path, flags)
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
            if _within(real, self.denied) or (
                stat.S_ISCHR(os.fstat(fd).st_mode) and real not in DEVICES
            ):
                raise OSError(errno.EACCES, os.strerror(errno.EACCES), path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_for_writing(self, path: str, flags: int) -> int:
        """Created or truncated only where the child could write: checked before
        the open, which then cannot leave the root the check found."""
        real = os.path.realpath(path)
        if real in DEVICES:  # bwrap's /dev has these
            return open_target(real, flags)
        root = next((root for root in self.writable if _within(real, (root,))), None)
        if root is None:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), path)
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            return open_target(os.path.relpath(real, root), flags, root_fd, _RESOLVE_BENEATH)
        except OSError as exc:
            if exc.errno == errno.EXDEV:  # the path changed and now leads out of the root
                raise OSError(errno.EACCES, os.strerror(errno.EACCES), path) from None
            raise
        finally:
            os.close(root_fd)

    async def fields(self, segments: list[Segment], cwd: str) -> Fields:
        if not may_glob(segments):
            return fields_with_origin(segments, cwd)
        visible = partial(self._visible, cwd)
        return await spawner.call_async(partial(fields_with_origin, segments, cwd, visible))

    def _visible(self, cwd: str, match: str) -> bool:
        """A denied directory is an empty tmpfs in bwrap: nothing in it matches."""
        parent = os.path.realpath(os.path.join(cwd, os.path.dirname(match)))
        return not _within(parent, self.denied)


_UNCONFINED = PlanFiles()


def files_for(
    spawner: Spawner | None, profile: SandboxProfile | None, tmpdir: str | None
) -> PlanFiles:
    """How a plan with this sandbox touches files (``spawner``: the call's, in
    its Landlock domain; ``tmpdir``: the call's)."""
    if profile is not None and profile.backend == "bubblewrap" and tmpdir is not None:
        return _BubblewrapFiles(profile, tmpdir)
    if profile is not None and spawner is not None:
        return _LandlockFiles(spawner)
    return _UNCONFINED
