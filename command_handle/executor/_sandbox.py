"""Which spawner starts a child: the policy's sandbox profile, made once.

Landlock restricts a thread and what it starts, for good. So each profile
(mode, writable roots, denied paths, network) gets spawner threads of its own
that set ``no_new_privs``, leave no capability to their children
(``_capabilities``) and restrict themselves once, at start; each launch of a
call then adds the call's own domain on a thread of its own (``_island``).
Each profile has a temporary root; each call gets a fresh directory in it as
``TMPDIR``, the only place there its children may write, removed when the
call ends: off the event loop for an async call, since a child may have left
any number of files there. The root cannot be listed by a child (mode 0300,
and children have no capability to override it), so a call cannot find its
siblings' directories.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator

import anyio
import anyio.to_thread

from ..errors import SandboxError
from ..policy import Policy
from . import _bubblewrap as bubblewrap
from . import _seccomp as seccomp
from ._capabilities import drop_for_children
from ._cgroup import problem as cgroup_problem
from ._island import CallSpawner
from ._landlock import SandboxProfile, landlock_problem, restrict_self
from ._mounts import exposures
from ._spawn import Spawner, set_no_new_privs

__all__ = ["call_tmpdir", "call_tmpdir_async", "profile_for", "spawner_for"]

log = logging.getLogger("command_handle")
_lock = threading.Lock()
_profiles: dict[tuple[object, ...], SandboxProfile] = {}
_spawners: dict[SandboxProfile, Spawner] = {}
# (no_new_privs, drop capabilities): the spawners of calls without a Landlock profile
_plain_spawners: dict[tuple[bool, bool], Spawner] = {}
_TMP_ROOT_MODE = 0o300  # enter and create, not list: a call's directory is its own


def _missing(policy: Policy) -> str | None:
    """Why this kernel cannot enforce the policy's sandbox, or None."""
    if policy.sandbox_backend == "bubblewrap":
        return bubblewrap.available()
    why = landlock_problem(policy.network_allowed)
    if why is None and (not policy.network_allowed or policy.sandbox == "read-only"):
        why = seccomp.problem()  # sockets and metadata Landlock cannot refuse
    return why


def profile_for(policy: Policy) -> SandboxProfile | None:
    """The profile to confine this policy's children to; None for no sandbox.

    Raises :class:`SandboxError` (nothing runs) when the kernel cannot enforce
    it and the policy requires it; otherwise logs a warning and returns None.
    """
    if policy.cgroup_per_call:
        why = cgroup_problem()
        if why is not None:
            raise SandboxError(f"cgroup_per_call cannot be honoured here: {why}; nothing ran")
    if policy.sandbox == "off":
        return None
    missing = _missing(policy)
    if missing is not None:
        if policy.sandbox_required:
            raise SandboxError(
                f"the {policy.sandbox} sandbox cannot be enforced here: {missing}; nothing "
                "ran (Policy.sandbox_required=False runs unconfined, with a warning)"
            )
        log.warning(
            "running unconfined: the %s sandbox cannot be enforced: %s", policy.sandbox, missing
        )
        return None
    writable = policy.writable_roots
    if policy.sandbox == "workspace-write" and policy.workspace is not None:
        writable = (policy.workspace, *writable)
    key = (
        policy.sandbox,
        writable,
        policy.deny_read,
        policy.network_allowed,
        policy.sandbox_backend,
        policy.keep_capabilities,
    )
    with _lock:
        profile = _profiles.get(key)
        if profile is None:
            if policy.sandbox_backend == "landlock":
                _check_exposures(policy.deny_read, writable)
            root = tempfile.mkdtemp(prefix="command-handle-tmp-")
            os.chmod(root, _TMP_ROOT_MODE)
            atexit.register(_remove_root, root)
            profile = _profiles[key] = SandboxProfile(
                policy.sandbox,
                writable,
                policy.deny_read,
                policy.network_allowed,
                root,
                policy.sandbox_backend,
                policy.keep_capabilities,
            )
        return profile


def _check_exposures(denied: tuple[str, ...], writable: tuple[str, ...]) -> None:
    """Refuse a denied path that a bind mount also shows inside a writable root:
    Landlock grants a writable root whole, so it could not be carved out there
    (bubblewrap mounts over it instead)."""
    for path in denied:
        for shown in exposures((path,)):
            for root in writable:
                if shown == root or shown.startswith(root.rstrip("/") + "/"):
                    raise SandboxError(
                        f"deny_read {path!r} is also visible at {shown!r} (a mount), inside "
                        f"the writable {root!r}: a confined child could not be kept from "
                        "reading it; nothing ran"
                    )


def spawner_for(
    policy: Policy, profile: SandboxProfile | None, tmpdir: str | None
) -> Spawner | None:
    """The spawner one call's children start from; None for the default one
    (``no_new_privs``, no capabilities), or for this thread when the policy
    keeps both (``allow_setuid``, ``keep_capabilities``).

    Landlock: the profile's spawner, with each launch in the call's own domain.
    bubblewrap: bwrap needs root's capabilities for its namespaces and drops
    them all for the child (``--cap-drop ALL``); Landlock would forbid its mounts.
    """
    if profile is not None and profile.backend == "landlock":
        assert tmpdir is not None
        return CallSpawner(_profile_spawner(profile), profile, tmpdir)
    no_new_privs = not policy.allow_setuid
    drop = profile is None and not policy.keep_capabilities
    if no_new_privs == drop:
        return None
    with _lock:
        spawner = _plain_spawners.get((no_new_privs, drop))
        if spawner is None:
            setup = set_no_new_privs if no_new_privs else drop_for_children
            spawner = _plain_spawners[no_new_privs, drop] = Spawner(setup)
        return spawner


def _profile_spawner(profile: SandboxProfile) -> Spawner:
    with _lock:
        spawner = _spawners.get(profile)
        if spawner is None:

            def setup(profile: SandboxProfile = profile) -> None:
                set_no_new_privs()
                if not profile.keep_capabilities:
                    drop_for_children()
                restrict_self(profile)
                seccomp.confine(profile)

            spawner = _spawners[profile] = Spawner(setup)
        return spawner


@contextlib.contextmanager
def call_tmpdir(profile: SandboxProfile | None) -> Iterator[str | None]:
    """A fresh TMPDIR for one confined call, removed afterwards."""
    if profile is None:
        yield None
        return
    path = tempfile.mkdtemp(prefix="call-", dir=profile.tmp_root)
    try:
        yield path
    finally:
        if not _removed_empty(path):
            _remove_tree(path)


@contextlib.asynccontextmanager
async def call_tmpdir_async(profile: SandboxProfile | None) -> AsyncIterator[str | None]:
    """:func:`call_tmpdir` for a call on an event loop (trio or asyncio): what the
    child left in it is removed in a worker thread (60,000 files take over a
    second). The removal finishes even when the call is cancelled."""
    if profile is None:
        yield None
        return
    path = tempfile.mkdtemp(prefix="call-", dir=profile.tmp_root)
    try:
        yield path
    finally:
        if not _removed_empty(path):
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_remove_tree, path)


def _removed_empty(path: str) -> bool:
    """One rmdir: most calls leave their TMPDIR empty, and then no thread is needed."""
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def _remove_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _remove_root(root: str) -> None:
    with contextlib.suppress(OSError):
        os.chmod(root, 0o700)  # listable again, for rmtree
    _remove_tree(root)
