"""Confinement seen from inside the child: a probe reports what it could do.

Every profile runs under sync, trio and asyncio; the network check connects to
a TCP listener this test starts on 127.0.0.1. Nothing is mocked except, in one
test, the kernel's answer to "is Landlock here?" (to show the refusal a
machine without it gets)."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from command_handle import (
    CommandHandle,
    DirectoryError,
    Executor,
    PathArgumentError,
    Policy,
    PolicyError,
    SandboxError,
    utcp,
)
from command_handle.executor import _sandbox

from .conftest import Run
from .processes import ROOT, python_handle_with_argv

PROBE = r"""
import json, os, socket, sys
workspace, outside, secret, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
out = {}
def attempt(name, action):
    try:
        action()
        out[name] = True
    except OSError:
        out[name] = False
def write(path):
    with open(path, "w") as f:
        f.write("x")
def connect():
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
attempt("write_workspace", lambda: write(os.path.join(workspace, "w")))
attempt("write_outside", lambda: write(os.path.join(outside, "w")))
attempt("read_denied", lambda: open(secret).read())
attempt("read_system", lambda: open("/etc/hostname").read())
attempt("write_tmpdir", lambda: write(os.path.join(os.environ.get("TMPDIR", "/nonexistent"), "t")))
attempt("dev_null", lambda: write("/dev/null"))
attempt("connect", connect)
status = open("/proc/self/status").read().splitlines()
out["no_new_privs"] = [l.split()[1] for l in status if l.startswith("NoNewPrivs")][0]
out["tmpdir"] = os.environ.get("TMPDIR")
print(json.dumps(out))
"""


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that accepts and closes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
                connection.close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    workspace, outside, home = tmp_path / "workspace", tmp_path / "outside", tmp_path / "home"
    for directory in (workspace, outside, home / ".ssh"):
        directory.mkdir(parents=True)
    (home / ".ssh" / "id_test").write_text("PRIVATE KEY")
    return {"workspace": workspace, "outside": outside, "secret": home / ".ssh" / "id_test"}


def _probe(run: Run, policy: Policy, places: dict[str, Path], port: int) -> dict[str, Any]:
    handle = python_handle_with_argv(
        PROBE, str(places["workspace"]), str(places["outside"]), str(places["secret"]), str(port)
    )
    result = run(Executor(policy), handle)
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(str(result.stdout))
    return report


def test_off_is_unconfined_but_has_no_new_privs(
    run: Run, places: dict[str, Path], listener: int
) -> None:
    report = _probe(run, Policy(), places, listener)
    assert report["write_workspace"] and report["write_outside"] and report["read_denied"]
    assert report["connect"] and report["no_new_privs"] == "1"


def test_read_only(run: Run, places: dict[str, Path], listener: int) -> None:
    policy = Policy(
        sandbox="read-only",
        workspace=str(places["workspace"]),
        deny_read=(str(places["secret"].parent),),
    )
    report = _probe(run, policy, places, listener)
    assert report["read_system"] and report["dev_null"] and report["write_tmpdir"]
    assert not report["write_workspace"] and not report["write_outside"]
    assert not report["read_denied"] and not report["connect"]
    assert report["no_new_privs"] == "1"
    assert report["tmpdir"] and not os.path.exists(report["tmpdir"])  # removed after the call


def test_workspace_write(run: Run, places: dict[str, Path], listener: int) -> None:
    extra = places["outside"] / "cache"
    extra.mkdir()
    policy = Policy(
        sandbox="workspace-write",
        workspace=str(places["workspace"]),
        writable_roots=(str(extra),),
        deny_read=(str(places["secret"]),),
    )
    report = _probe(run, policy, places, listener)
    assert report["write_workspace"] and report["write_tmpdir"] and report["read_system"]
    assert not report["write_outside"] and not report["read_denied"] and not report["connect"]
    assert (places["workspace"] / "w").exists() and not (places["outside"] / "w").exists()


def test_the_network_can_be_allowed_in_a_sandbox(
    run: Run, places: dict[str, Path], listener: int
) -> None:
    policy = Policy(sandbox="read-only", network=True)
    report = _probe(run, policy, places, listener)
    assert report["connect"] and not report["write_outside"]


def test_concurrent_calls_with_different_profiles_stay_apart(
    places: dict[str, Path], listener: int
) -> None:
    policies = {
        "off": Policy(),
        "read-only": Policy(sandbox="read-only"),
        "workspace-write": Policy(sandbox="workspace-write", workspace=str(places["workspace"])),
    }
    reports: dict[str, list[dict[str, Any]]] = {name: [] for name in policies}

    def call(name: str) -> None:
        for _ in range(3):
            reports[name].append(
                _probe(lambda e, h: e.call_sync(h), policies[name], places, listener)
            )

    threads = [threading.Thread(target=call, args=(name,)) for name in policies for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert all(len(found) == 6 for found in reports.values())
    assert all(r["write_outside"] and r["connect"] for r in reports["off"])
    assert all(not r["write_outside"] and not r["write_workspace"] for r in reports["read-only"])
    assert all(r["write_workspace"] and not r["write_outside"] for r in reports["workspace-write"])
    assert not any(r["connect"] for r in reports["read-only"] + reports["workspace-write"])


def test_a_plan_is_confined_too(places: dict[str, Path]) -> None:
    outside = places["outside"] / "from-plan"
    inside = places["workspace"] / "from-plan"
    template = {
        "call_template_type": "cli",
        "commands": [{"command": f"touch {inside}; touch {outside}; echo done"}],
    }
    policy = Policy(sandbox="workspace-write", workspace=str(places["workspace"]))
    result = utcp.run_sync(template, policy=policy)
    assert inside.exists() and not outside.exists()
    assert "Permission denied" in result.output


def test_a_machine_without_landlock_refuses_or_warns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, places: dict[str, Path]
) -> None:
    monkeypatch.setattr(
        _sandbox, "landlock_problem", lambda network: "Landlock is not available: test"
    )
    handle = python_handle_with_argv(f"open({str(places['outside'] / 'w')!r}, 'w')")
    executor = Executor(Policy(sandbox="read-only"))
    with pytest.raises(SandboxError, match="Landlock is not available") as caught:
        executor.call_sync(handle)
    assert "sandbox_required=False" in str(caught.value) and executor.spawned == 0
    lenient = Executor(Policy(sandbox="read-only", sandbox_required=False))
    with caplog.at_level(logging.WARNING, logger="command_handle"):
        assert lenient.call_sync(handle).exit_code == 0  # ran, unconfined
    assert "running unconfined" in caplog.text
    assert (places["outside"] / "w").exists()


def test_the_sandbox_policy_checks_itself(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="one of"):
        Policy(sandbox="strict")
    with pytest.raises(PolicyError, match="needs a workspace"):
        Policy(sandbox="workspace-write")
    with pytest.raises(PolicyError, match="needs a sandbox"):
        Policy(network=False)
    with pytest.raises(PolicyError, match="not a directory"):
        Policy(workspace=str(tmp_path / "missing"))
    with pytest.raises(PolicyError, match="inside the writable"):
        Policy(sandbox="workspace-write", workspace=str(tmp_path), deny_read=(str(tmp_path / "x"),))
    assert Policy(sandbox="read-only").network_allowed is False
    assert Policy().network_allowed is True
    assert Policy(deny_read=("~/.ssh",), sandbox="read-only").deny_read == (
        os.path.realpath(os.path.expanduser("~/.ssh")),
    )


# -- path parameters -----------------------------------------------------------------


def _reader(**fields: Any) -> CommandHandle:
    document: dict[str, Any] = {
        "name": "read_file",
        "handle": "command",
        "command": "cat",
        "arguments": ["--", "{{file}}"],
        "parameters": {"type": "object", "properties": {"file": {"type": "string"}}},
        "paths": {"file": {"within": "workspace", "exists": True}},
        **fields,
    }
    return CommandHandle.load(document)


def test_a_path_parameter_cannot_leave_the_workspace(places: dict[str, Path]) -> None:
    workspace = places["workspace"]
    (workspace / "notes.txt").write_text("hello")
    (workspace / "sub").mkdir()
    (workspace / "escape").symlink_to("/etc")
    executor = Executor(Policy(workspace=str(workspace)))
    assert executor.call_sync(_reader(), {"file": "notes.txt"}).stdout == "hello"
    assert executor.call_sync(_reader(), {"file": "sub/../notes.txt"}).stdout == "hello"
    for escape in ("../../../etc/passwd", "/etc/shadow", "escape/passwd", "sub/../../outside"):
        with pytest.raises(PathArgumentError) as caught:
            executor.call_sync(_reader(), {"file": escape})
        assert str(caught.value).startswith("`file` must be a path inside the workspace")
        assert caught.value.pointer == "/file"
    with pytest.raises(PathArgumentError, match="must name something that exists"):
        executor.call_sync(_reader(), {"file": "missing.txt"})
    assert executor.spawned == 2
    # Without a workspace in the policy, the handle cannot keep its promise: refused.
    with pytest.raises(DirectoryError, match="the policy has no workspace"):
        Executor().call_sync(_reader(), {"file": "notes.txt"})


def test_a_computed_directory_can_be_kept_inside_the_workspace(places: dict[str, Path]) -> None:
    workspace = places["workspace"]
    (workspace / "project").mkdir()
    handle = CommandHandle.load(
        {
            "name": "where",
            "handle": "command",
            "command": "/bin/pwd",
            "directory": {"$": "dir"},
            "directory_within": "workspace",
        }
    )
    executor = Executor(Policy(workspace=str(workspace)))
    assert executor.call_sync(handle, {"dir": str(workspace / "project")}).stdout == (
        f"{workspace / 'project'}\n"
    )
    with pytest.raises(DirectoryError, match="inside the workspace"):
        executor.call_sync(handle, {"dir": str(places["outside"])})


def test_the_workspace_is_the_default_directory(places: dict[str, Path]) -> None:
    handle = CommandHandle.load({"name": "where", "handle": "command", "command": "/bin/pwd"})
    executor = Executor(Policy(workspace=str(places["workspace"])))
    assert executor.call_sync(handle).stdout == f"{places['workspace']}\n"


# -- the command line ------------------------------------------------------------------


def test_the_command_line_takes_the_sandbox_flags(places: dict[str, Path]) -> None:
    target = places["outside"] / "from-cli"
    handle = places["workspace"] / "touch.json"
    handle.write_text(
        json.dumps(
            {
                "name": "t",
                "handle": "command",
                "command": "/usr/bin/touch",
                "arguments": [str(target)],
            }
        )
    )
    base = [sys.executable, "-m", "command_handle", "run", str(handle)]
    confined = subprocess.run(
        [*base, "--sandbox", "workspace-write", "--workspace", str(places["workspace"])],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert confined.returncode == 1 and not target.exists()
    assert "Permission denied" in json.loads(confined.stdout)["stderr"]
    check = subprocess.run(
        [sys.executable, "-m", "command_handle", "sandbox", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0 and json.loads(check.stdout)["filesystem"] is True


def test_a_denied_path_stays_denied_through_links(tmp_path: Path) -> None:
    """Landlock only grants, so a denied path is carved out of its parents; a
    link beside it (pytest's own 'pytest-current' is one) must not grant it back."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id").write_text("PRIVATE KEY")
    (tmp_path / "home-link").symlink_to(home)
    (home / "ssh-link").symlink_to(home / ".ssh")
    code = (
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        print(open(path).read())\n"
        "    except OSError:\n"
        "        print('denied')\n"
    )
    paths = [home / ".ssh" / "id", tmp_path / "home-link" / ".ssh" / "id", home / "ssh-link" / "id"]
    handle = python_handle_with_argv(code, *map(str, paths))
    policy = Policy(sandbox="read-only", deny_read=(str(home / ".ssh"),))
    assert Executor(policy).call_sync(handle).stdout == "denied\ndenied\ndenied\n"


# -- limits ------------------------------------------------------------------------------


def test_cpu_and_memory_limits_hold_on_the_child(run: Run) -> None:
    from .processes import python_handle

    spinner = python_handle("while True:\n    pass\n", timeout=30)
    result = run(Executor(Policy(max_cpu_seconds=1)), spinner)
    assert result.signal_name in ("SIGXCPU", "SIGKILL") and not result.timed_out
    hungry = python_handle("x = bytearray(400 * 2**20)\nprint(len(x))")
    limited = run(Executor(Policy(max_memory=200 * 2**20)), hungry)
    assert limited.exit_code == 1 and "MemoryError" in str(limited.stderr)
    assert run(Executor(), hungry).stdout == f"{400 * 2**20}\n"  # the canary: fine without


def test_a_process_limit_holds_for_an_unprivileged_user() -> None:
    """RLIMIT_NPROC counts every process of the user, and root is exempt."""
    from .processes import python_handle, unprivileged

    def scenario() -> dict[str, Any]:
        forker = python_handle(  # Debian's python: nobody cannot enter /root's
            "import subprocess\n"
            "kids = []\n"
            "try:\n"
            "    for _ in range(50):\n"
            "        kids.append(subprocess.Popen(['sleep', '5']))\n"
            "except OSError:\n"
            "    pass\n"
            "print(len(kids))\n"
            "for k in kids:\n"
            "    k.kill()\n",
            command="/usr/bin/python3",
        )
        limited = Executor(Policy(max_processes=10)).call_sync(forker)
        return {"started": int(str(limited.stdout))}

    out = unprivileged(scenario)
    assert out["started"] < 10


# -- the bubblewrap backend ----------------------------------------------------------


def test_the_bubblewrap_backend_confines_with_namespaces(
    run: Run, places: dict[str, Path], listener: int
) -> None:
    policy = Policy(
        sandbox="workspace-write",
        workspace=str(places["workspace"]),
        deny_read=(str(places["secret"].parent),),
        sandbox_backend="bubblewrap",
    )
    report = _probe(run, policy, places, listener)
    assert report["write_workspace"] and report["write_tmpdir"] and report["read_system"]
    assert not report["write_outside"] and not report["read_denied"] and not report["connect"]
    pid_probe = python_handle_with_argv("import os; print(os.getpid())")
    assert int(str(run(Executor(policy), pid_probe).stdout)) < 10  # its own PID namespace


def test_the_bubblewrap_backend_still_kills_the_whole_tree(places: dict[str, Path]) -> None:
    from .processes import wait_dead

    marker = places["workspace"] / "pid"
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen(['sleep', '301.25'])\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(300)\n"
    )
    policy = Policy(
        sandbox="workspace-write", workspace=str(places["workspace"]), sandbox_backend="bubblewrap"
    )
    from .processes import python_handle

    result = Executor(policy).call_sync(python_handle(code, timeout=1.0))
    assert result.timed_out
    # The pid written is the namespace's; find the real sleeps by their command line.
    leftovers = subprocess.run(["pgrep", "-f", "^sleep 301.25$"], capture_output=True, text=True)
    assert wait_dead(int(pid) for pid in leftovers.stdout.split()) == []


# -- one cgroup per call -------------------------------------------------------------

SETSID_ESCAPEE = (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "        time.sleep(30)\n"
    "    os._exit(0)\n"
    "os.wait()\n"
    "while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
    "print('parent done')\n"
)


def test_a_cgroup_per_call_kills_the_setsid_escapee(run: Run, tmp_path: Path) -> None:
    """The documented limit of the group kill (docs/security.md), closed by the
    option: the escapee is in the call's cgroup, and the cgroup is killed."""
    from .processes import alive, wait_dead

    pidfile = tmp_path / "escapee"
    handle = python_handle_with_argv(SETSID_ESCAPEE, str(pidfile))
    result = run(Executor(Policy(kill_grace=0.3, cgroup_per_call=True)), handle)
    assert result.stdout == "parent done\n"
    escapee = int(pidfile.read_text())
    assert wait_dead([escapee]) == [], "the escapee survived its cgroup's kill"
    # The canary: without the option it survives, as documented.
    pidfile.unlink()
    Executor(Policy(kill_grace=0.3)).call_sync(handle)
    survivor = int(pidfile.read_text())
    try:
        assert alive(survivor)
    finally:
        os.kill(survivor, 9)


def test_a_sandboxed_child_still_enters_its_cgroup() -> None:
    """The cgroup's procs file is opened outside the sandbox; Landlock checks
    opens, not writes, so the confined child can still move itself in."""
    handle = python_handle_with_argv(
        "print(open('/proc/self/cgroup').read().split('0::')[1].strip())"
    )
    policy = Policy(sandbox="read-only", cgroup_per_call=True)
    cgroup = str(Executor(policy).call_sync(handle).stdout).strip()
    assert cgroup.startswith("/command-handle-"), cgroup
