"""Issue 22, findings 3 and 4: no privilege survives into a child.

When the application runs as root (the usual case in containers), a child
kept every capability: a confined one made a block device in its TMPDIR and
wrote through it, read the MCP server's environment through /proc, and under
bubblewrap unmounted the tmpfs hiding a denied folder and remounted / writable.
Real processes and canaries throughout; the canary of each is the same call
with ``Policy(keep_capabilities=True)``, or the state before the fix.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from command_handle import CommandHandle, Executor, Policy
from command_handle.executor import _bubblewrap

from .processes import PROBE, in_a_fork, parent_threads_readable, shared_directory
from .processes import system_python_handle as python

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the capabilities of root's children")
needs_bwrap = pytest.mark.skipif(
    _bubblewrap.available() is not None, reason="bubblewrap cannot run here"
)

POLICIES: dict[str, Callable[[str], Policy]] = {
    "off": lambda workspace: Policy(),
    "off, allow_setuid": lambda workspace: Policy(allow_setuid=True),
    "read-only": lambda workspace: Policy(sandbox="read-only"),
    "workspace-write": lambda workspace: Policy(sandbox="workspace-write", workspace=workspace),
}


@needs_root
@pytest.mark.parametrize("name", POLICIES)
def test_a_child_of_a_root_application_cannot_read_its_memory(name: str) -> None:
    """Finding 3: through the spawner thread it was launched from, a confined
    child read the MCP server's environment; an unconfined one read it anyway."""
    executor = Executor(POLICIES[name](shared_directory()))
    assert parent_threads_readable(executor) == []
    # The canary: a child that keeps root's capabilities reads it.
    assert parent_threads_readable(Executor(Policy(keep_capabilities=True))) != []


CAPS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")

MKNOD = r"""
import json, os, stat, sys
out = {}
try:
    os.mknod(os.path.join(sys.argv[1], "disk"), stat.S_IFBLK | 0o600, os.makedev(7, 0))
    out["mknod"] = True
except OSError:
    out["mknod"] = False
print(json.dumps(out))
"""


def _probe_caps(policy: Policy) -> dict[str, Any]:
    handle = CommandHandle.load(
        {"name": "probe", "handle": "command", "command": sys.executable, "arguments": [PROBE]}
    )
    result = Executor(policy).call_sync(handle)
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(str(result.stdout))
    return report


def _mknod(policy: Policy, directory: str) -> bool:
    result = Executor(policy).call_sync(python(MKNOD, directory))
    assert result.exit_code == 0, result.stderr
    made: bool = json.loads(str(result.stdout))["mknod"]
    return made


@needs_root
@pytest.mark.parametrize("name", POLICIES)
def test_a_child_of_a_root_application_has_no_capabilities(name: str) -> None:
    workspace = shared_directory()
    policy = POLICIES[name](workspace)
    report = _probe_caps(policy)
    assert {cap: report["caps"][cap] for cap in CAPS} == dict.fromkeys(CAPS, 0), report["caps"]
    # Finding 3: a block device made in a writable place, then written through.
    assert not _mknod(policy, workspace)
    # The canary: with the Policy's consent the child keeps them and can.
    kept = _probe_caps(Policy(keep_capabilities=True))
    assert kept["caps"]["CapEff"] != 0 and kept["caps"]["CapBnd"] != 0
    assert _mknod(Policy(keep_capabilities=True), workspace)
    os.remove(os.path.join(workspace, "disk"))


@needs_root
def test_a_confined_child_of_a_root_application_cannot_make_a_device_in_its_tmpdir() -> None:
    result = Executor(Policy(sandbox="read-only")).call_sync(
        python(MKNOD.replace("sys.argv[1]", "os.environ['TMPDIR']"))
    )
    assert json.loads(str(result.stdout)) == {"mknod": False}


@needs_root
@needs_bwrap
def test_a_bubblewrap_child_of_a_root_application_has_no_capabilities() -> None:
    workspace = shared_directory()
    report = _probe_caps(
        Policy(sandbox="workspace-write", workspace=workspace, sandbox_backend="bubblewrap")
    )
    assert report["caps"]["CapEff"] == 0 and report["caps"]["CapPrm"] == 0
    assert report["caps"]["CapInh"] == 0 and report["caps"]["CapAmb"] == 0
    assert report["no_new_privs"] == 1  # so no exec can raise them again


UNMOUNT = r"""
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
denied, secret, host_file = sys.argv[1], sys.argv[2], sys.argv[3]
out = {}
out["umount"] = libc.umount2(denied.encode(), 2) == 0  # MNT_DETACH
try:
    out["read_secret"] = open(secret).read()
except OSError:
    out["read_secret"] = None
MS_REMOUNT, MS_BIND = 32, 4096
out["remount"] = libc.mount(b"none", b"/", None, MS_REMOUNT | MS_BIND, None) == 0
try:
    with open(host_file, "w") as f:
        f.write("written from the sandbox")
    out["write_host"] = True
except OSError:
    out["write_host"] = False
print(json.dumps(out))
"""


@needs_root
@needs_bwrap
def test_a_bubblewrap_child_cannot_unmount_or_remount(tmp_path: Path) -> None:
    """Finding 4: bwrap keeps root's capabilities unless told otherwise."""
    workspace, denied = tmp_path / "workspace", tmp_path / "private"
    workspace.mkdir()
    denied.mkdir()
    (denied / "key").write_text("PRIVATE KEY")
    host_file = tmp_path / "host-file"
    host_file.write_text("host")
    policy = Policy(
        sandbox="workspace-write",
        workspace=str(workspace),
        deny_read=(str(denied),),
        sandbox_backend="bubblewrap",
    )
    handle = python(UNMOUNT, str(denied), str(denied / "key"), str(host_file))
    result = Executor(policy).call_sync(handle)
    assert json.loads(str(result.stdout)) == {
        "umount": False,
        "read_secret": None,
        "remount": False,
        "write_host": False,
    }
    assert host_file.read_text() == "host"


def test_an_approver_sees_when_children_keep_capabilities() -> None:
    """What changes a child's privileges changes the plan hash; the default adds
    nothing, so plans approved before hash alike."""
    from command_handle.call import plan_hash

    handle = python("pass")
    default = Executor(Policy()).describe(handle.prepare(None, Policy()))
    kept_policy = Policy(keep_capabilities=True)
    kept = Executor(kept_policy).describe(handle.prepare(None, kept_policy))
    assert "keep_capabilities" not in default["limits"]
    assert kept["limits"]["keep_capabilities"] is True
    assert plan_hash(default) != plan_hash(kept)


@needs_root
def test_root_that_cannot_drop_capabilities_runs_nothing() -> None:
    """Without CAP_SETPCAP root cannot empty the bounding set, and its children
    would be root again: the call is refused, unless the Policy keeps them."""
    marker = os.path.join(shared_directory(), "ran")

    def scenario() -> dict[str, Any]:
        import ctypes

        from command_handle import CommandHandleError

        libc = ctypes.CDLL(None, use_errno=True)
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)
        data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable; twice
        assert libc.capget(header, data) == 0
        data[0] &= ~(1 << 8)  # CAP_SETPCAP, from the effective and permitted sets
        data[1] &= ~(1 << 8)
        assert libc.capset(header, data) == 0
        touch = python(f"open({marker!r}, 'w').close()")
        outcome: dict[str, Any] = {}
        for name, policy in (("off", Policy()), ("read-only", Policy(sandbox="read-only"))):
            try:
                Executor(policy).call_sync(touch)
                outcome[name] = "ran"
            except CommandHandleError as exc:
                outcome[name] = "refused: CAP_SETPCAP" if "CAP_SETPCAP" in str(exc) else "refused"
        outcome["ran"] = os.path.exists(marker)
        outcome["kept"] = Executor(Policy(keep_capabilities=True)).call_sync(touch).exit_code
        return outcome

    out = in_a_fork(scenario)
    assert out["off"].startswith("refused") and out["read-only"].startswith("refused"), out
    assert out["ran"] is False and out["kept"] == 0
