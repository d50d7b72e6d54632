"""bubblewrap, the optional stronger backend: namespaces instead of Landlock.

With ``Policy(sandbox_backend="bubblewrap")`` each confined child is started
by ``bwrap``: a new PID namespace (the child cannot see or signal anything
outside, and everything in it dies with it), a new network namespace when the
network is off (no socket family reaches outside, UDP included), the root
mounted read-only, ``/dev`` and ``/proc`` of its own, the writable
directories bound writable, ``deny_read`` paths hidden under an empty
tmpfs, and no capability (run as root, bwrap would leave its child all of
root's, and the child could unmount that tmpfs). It needs ``bwrap``
installed and unprivileged user namespaces; each call pays for the
namespaces (several milliseconds).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

from ._landlock import SandboxProfile
from ._mounts import exposures

__all__ = ["available", "prefix"]


@functools.cache
def _bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def available() -> str | None:
    """None when bubblewrap works here, else why not."""
    path = _bwrap()
    if path is None:
        return "bwrap is not installed (Debian: apt-get install bubblewrap)"
    try:
        done = subprocess.run(
            [path, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "/bin/true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot run: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return "bwrap cannot create namespaces here" + (f": {reason[-1]}" if reason else "")
    return None


def prefix(profile: SandboxProfile, cwd: str, tmpdir: str) -> tuple[str, ...]:
    """bwrap and its options, up to ``--``: the program and its arguments follow."""
    bwrap = _bwrap()
    assert bwrap is not None
    # No --new-session: the child must stay in the process group we kill.
    command = [bwrap, "--die-with-parent", "--unshare-pid"]
    if not profile.keep_capabilities:  # as root, bwrap keeps them all for its child
        command += ["--cap-drop", "ALL"]
    if not profile.network:
        command.append("--unshare-net")
    command += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for root in (*profile.writable, tmpdir):
        command += ["--bind", root, root]
    for denied in exposures(profile.deny_read):  # bind mounts of them too
        if os.path.isdir(denied):
            command += ["--tmpfs", denied]
        elif os.path.exists(denied):
            command += ["--ro-bind", "/dev/null", denied]
    command += ["--chdir", cwd, "--"]
    return tuple(command)
