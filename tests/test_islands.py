"""Issue 22, findings 1 and 2: each confined call is an island.

All calls of a profile shared one Landlock domain and a writable temporary
root: a call read a sibling's credential from /proc/<pid>/environ, signalled
and traced it, and wrote into its TMPDIR, where files outlived the call. Real
processes and canaries throughout (a sibling call holding a credential in its
environment and a file in its TMPDIR, the application's own environment), as
root and as an unprivileged user (uid 65534, through a forked process that
drops root).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from command_handle import CommandHandle, Executor, Policy

from .processes import parent_threads_readable, shared_directory, unprivileged
from .processes import system_python_handle as python

CREDENTIAL = "canary-credential-7f3a9c"


def _unique(mode: str, workspace: str) -> Policy:
    """A profile of its own (a denied path no other test names): a process that
    drops root after a test made the same profile would find its temporary
    root made by root."""
    denied = tempfile.mkdtemp(prefix="islands-denied-")
    return Policy(sandbox=mode, workspace=workspace, deny_read=(denied,))


@pytest.fixture(autouse=True, scope="module")
def _imported() -> None:
    """Everything a call imports, imported while root: the unprivileged user
    cannot read this interpreter's standard library under /root."""
    Executor(Policy(sandbox="read-only")).call_sync(python("pass"))


# -- between calls -------------------------------------------------------------------

VICTIM = r"""
import os, sys, time
mine = os.path.join(os.environ["TMPDIR"], "victim-file")
with open(mine, "w") as f:
    f.write("untouched")
print(os.getpid(), os.environ["TMPDIR"], flush=True)
deadline = time.monotonic() + 30
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.02)
print(open(mine).read(), sorted(os.listdir(os.environ["TMPDIR"])))
"""

ATTACKER = r"""
import ctypes, json, os, signal, sys
pid, theirs, credential = int(sys.argv[1]), sys.argv[2], sys.argv[3]
libc = ctypes.CDLL(None, use_errno=True)
out = {}
def attempt(name, action):
    try:
        out[name] = bool(action())
    except OSError as exc:
        out[name] = False
def environ():
    with open(f"/proc/{pid}/environ", "rb") as f:
        return credential.encode() in f.read()
def write(path):
    with open(path, "w") as f:
        f.write("planted")
    return True
def seize():
    if libc.ptrace(0x4206, pid, None, None) != 0:  # PTRACE_SEIZE: no stop, gone at our exit
        raise OSError(ctypes.get_errno(), "ptrace")
    return True
attempt("read_environ", environ)
attempt("read_cwd", lambda: os.readlink(f"/proc/{pid}/cwd"))
attempt("signal_0", lambda: os.kill(pid, 0) or True)
attempt("signal_cont", lambda: os.kill(pid, signal.SIGCONT) or True)
attempt("ptrace", seize)
attempt("overwrite_file", lambda: write(os.path.join(theirs, "victim-file")))
attempt("plant_file", lambda: write(os.path.join(theirs, "planted")))
attempt("remove_file", lambda: os.remove(os.path.join(theirs, "victim-file")) or True)
parent = os.path.dirname(os.environ["TMPDIR"])
attempt("write_shared_parent", lambda: write(os.path.join(parent, "outlives-the-call")))
attempt("list_shared_parent", lambda: os.listdir(parent))
attempt("write_own_tmpdir", lambda: write(os.path.join(os.environ["TMPDIR"], "mine")))
print(json.dumps(out))
"""

REFUSED = (
    "read_environ",
    "read_cwd",
    "signal_0",
    "signal_cont",
    "ptrace",
    "overwrite_file",
    "plant_file",
    "remove_file",
    "write_shared_parent",
    "list_shared_parent",
)


def _siblings(policy: Policy, stop_dir: str) -> dict[str, Any]:
    """A victim call holding a credential, and an attacker call of the same
    profile that goes for its process and its TMPDIR while it runs."""
    executor = Executor(policy)
    stop = os.path.join(stop_dir, "stop")
    victim = python(VICTIM, stop, environment={"API_TOKEN": CREDENTIAL})
    started = threading.Event()
    seen: dict[str, Any] = {}

    def on_chunk(stream: str, data: bytes) -> None:
        if stream == "stdout" and "pid" not in seen:
            pid, tmpdir = data.decode().split("\n")[0].split()
            seen["pid"], seen["tmpdir"] = int(pid), tmpdir
            started.set()

    def run_victim() -> None:
        seen["result"] = executor.run_sync(victim.prepare(None, policy), on_chunk)

    thread = threading.Thread(target=run_victim)
    thread.start()
    try:
        assert started.wait(30), "the victim did not start"
        attacker = python(ATTACKER, str(seen["pid"]), seen["tmpdir"], CREDENTIAL)
        result = executor.call_sync(attacker)
    finally:
        Path(stop).touch()
        thread.join(60)
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(str(result.stdout))
    victim_result = seen["result"]
    report["victim_saw"] = str(victim_result.stdout).split("\n")[1]
    report["victim_signal"] = victim_result.signal
    return report


def _check_islands(report: dict[str, Any]) -> None:
    granted = [name for name in REFUSED if report[name]]
    assert granted == [], f"a sibling call could: {granted}"
    assert report["write_own_tmpdir"]  # the canary: its own TMPDIR is writable
    assert report["victim_saw"] == "untouched ['victim-file']"
    assert report["victim_signal"] is None


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_concurrent_calls_of_one_profile_are_islands(mode: str) -> None:
    workspace = shared_directory()
    policy = Policy(sandbox=mode, workspace=workspace)
    _check_islands(_siblings(policy, workspace))


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_concurrent_calls_of_one_profile_are_islands_for_an_unprivileged_user(mode: str) -> None:
    workspace = shared_directory()

    def scenario() -> dict[str, Any]:
        return _siblings(_unique(mode, workspace), workspace)

    _check_islands(unprivileged(scenario))


# -- the application's own memory ----------------------------------------------------


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_a_confined_child_of_an_unprivileged_application_cannot_read_its_memory(
    mode: str,
) -> None:
    workspace = shared_directory()

    def scenario() -> dict[str, Any]:
        # Dropping root made this process non-dumpable; an application started as
        # the user is dumpable, and so its threads are readable by the user.
        import ctypes

        assert ctypes.CDLL(None).prctl(4, 1, 0, 0, 0) == 0  # PR_SET_DUMPABLE
        confined = parent_threads_readable(Executor(_unique(mode, workspace)))
        return {"confined": confined}

    assert unprivileged(scenario) == {"confined": []}


RACE = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
/* Open the environment of every thread of the parent, again and again: the
   thread that launched us lives a few microseconds longer than our exec. */
int main(void) {
    char path[128];
    snprintf(path, sizeof path, "/proc/%d/task", getppid());
    for (int round = 0; round < 3000; round++) {
        DIR *tasks = opendir(path);
        if (!tasks) return 1;
        struct dirent *entry;
        while ((entry = readdir(tasks))) {
            char name[192];
            snprintf(name, sizeof name, "%s/%s/environ", path, entry->d_name);
            int fd = open(name, O_RDONLY);
            char byte;
            if (fd >= 0 && read(fd, &byte, 1) == 1) { printf("read\n"); return 0; }
            if (fd >= 0) close(fd);
        }
        closedir(tasks);
    }
    printf("refused\n");
    return 0;
}
"""


@pytest.fixture(scope="module")
def racer() -> str:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the racing reader")
    directory = Path(shared_directory())
    source = directory / "race.c"
    source.write_text(RACE)
    program = directory / "race"
    subprocess.run(["gcc", "-O2", "-o", str(program), str(source)], check=True)
    return str(program)


def _race(racer: str, policy: Policy, rounds: int) -> int:
    handle = CommandHandle.load({"name": "race", "handle": "command", "command": racer})
    executor = Executor(policy)
    return sum(executor.call_sync(handle).stdout == "read\n" for _ in range(rounds))


@pytest.mark.parametrize("user", ["root", "unprivileged"])
def test_a_confined_child_cannot_race_the_thread_that_launched_it(racer: str, user: str) -> None:
    """The thread that launches a confined child is in the child's domain until
    it ends; a fast reader won that race 64% of the time when the application
    was dumpable and the child had its capabilities."""
    if user == "root" and os.geteuid() != 0:
        pytest.skip("root")

    def scenario() -> dict[str, Any]:
        import ctypes

        if user == "unprivileged":
            assert ctypes.CDLL(None).prctl(4, 1, 0, 0, 0) == 0  # dumpable, as a user's app
        return {"won": _race(racer, _unique("read-only", os.path.dirname(racer)), 30)}

    out = scenario() if user == "root" else unprivileged(scenario)
    assert out == {"won": 0}


def test_nothing_is_left_in_the_temporary_root_by_a_call(tmp_path: Path) -> None:
    """Finding 2: what a call writes outside its own TMPDIR outlived it."""
    policy = Policy(sandbox="read-only")
    code = (
        "import os\n"
        "parent = os.path.dirname(os.environ['TMPDIR'])\n"
        "try:\n"
        "    open(os.path.join(parent, 'outlives'), 'w').write('x')\n"
        "except OSError:\n"
        "    pass\n"
        "print(parent)\n"
    )
    result = Executor(policy).call_sync(python(code))
    parent = str(result.stdout).strip()
    assert not os.path.exists(os.path.join(parent, "outlives"))
