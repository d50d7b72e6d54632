"""Red-team findings 6 to 8: privilege gain at exec, zombies when we are init,
and an $include that names a FIFO. Real processes throughout."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import CommandError, CommandHandle, Executor, Policy, utcp
from command_handle.form import IncludeError, compile_template

from .conftest import Run
from .processes import python_handle, unprivileged

READ_NNP = (
    "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('NoNewPrivs')][0])"
)


def test_every_child_has_no_new_privs(run: Run) -> None:
    assert run(Executor(), python_handle(READ_NNP)).stdout == "1\n"
    # The application's own threads keep theirs.
    with open("/proc/thread-self/status") as status:
        assert "NoNewPrivs:\t0" in status.read()
    # Only the policy's allow_setuid starts a child without it.
    assert run(Executor(Policy(allow_setuid=True)), python_handle(READ_NNP)).stdout == "0\n"


def test_plan_children_have_no_new_privs_too() -> None:
    template = {
        "call_template_type": "cli",
        "commands": [{"command": "grep NoNewPrivs /proc/self/status"}],
    }
    assert utcp.call_sync(template) == "NoNewPrivs:\t1"
    assert asyncio.run(utcp.call(template)) == "NoNewPrivs:\t1"
    assert trio.run(utcp.call, template) == "NoNewPrivs:\t1"


@pytest.fixture(scope="module")
def setuid_nobody(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A program, set-user-ID to nobody, that prints its effective user ID."""
    directory = tmp_path_factory.mktemp("setuid")
    directory.chmod(0o755)
    source = directory / "euid.c"
    source.write_text(
        '#include <stdio.h>\n#include <unistd.h>\nint main(void){printf("%d\\n", geteuid());}\n'
    )
    program = directory / "euid"
    subprocess.run(["gcc", "-o", str(program), str(source)], check=True)
    os.chown(program, 65534, 65534)
    program.chmod(0o4755)
    return program


def test_the_kernel_ignores_set_user_id_at_exec(setuid_nobody: Path) -> None:
    """The handle runs sh, which the checks allow; sh execs a set-user-ID program.
    With no_new_privs the kernel ignores the bit: the effective user stays ours."""
    handle = CommandHandle.load(
        {
            "name": "t",
            "handle": "command",
            "command": "/bin/sh",
            "arguments": ["-c", str(setuid_nobody)],
        }
    )
    assert Executor().call_sync(handle).stdout == f"{os.geteuid()}\n"
    # The canary: without the flag the bit takes effect.
    assert Executor(Policy(allow_setuid=True)).call_sync(handle).stdout == "65534\n"


@pytest.mark.parametrize("how", ["run_sync", "call_sync"])
def test_a_link_swapped_while_the_call_waits_for_a_slot_is_refused(
    tmp_path: Path, setuid_nobody: Path, how: str
) -> None:
    """The checks run again once the slot is ours: for an invocation rendered
    earlier (run_sync), and for a call that rendered it and then waited."""
    link = tmp_path / "tool"
    link.symlink_to("/usr/bin/true")
    executor = Executor(Policy(max_concurrency=1))
    slow = python_handle("import time; time.sleep(0.5)")
    swapped = CommandHandle.load({"name": "t", "handle": "command", "command": str(link)})
    outcome: dict[str, Any] = {}

    def hold_the_slot() -> None:
        executor.call_sync(slow)

    holder = threading.Thread(target=hold_the_slot)
    holder.start()
    time.sleep(0.15)
    invocation = swapped.render(None, executor.policy)  # checked now: /usr/bin/true

    def wait_then_run() -> None:
        try:
            if how == "run_sync":
                outcome["result"] = executor.run_sync(invocation)
            else:  # renders (checked: /usr/bin/true), then waits for the slot
                outcome["result"] = executor.call_sync(swapped)
        except CommandError as exc:
            outcome["error"] = exc

    waiter = threading.Thread(target=wait_then_run)
    waiter.start()
    time.sleep(0.1)  # the waiter is queued for the slot
    link.unlink()
    link.symlink_to(setuid_nobody)
    holder.join()
    waiter.join()
    assert "set-user-ID" in str(outcome.get("error")), outcome
    assert executor.spawned == 1


@pytest.mark.skipif(shutil.which("setcap") is None, reason="setcap (libcap2-bin) is needed")
def test_file_capabilities_are_ignored_at_exec() -> None:
    """A copy of cat with cap_dac_read_search reads /etc/shadow as nobody, unless
    the child has no_new_privs."""
    directory = Path(tempfile.mkdtemp())  # in /tmp, which nobody can enter
    directory.chmod(0o755)
    cat = directory / "cat"
    shutil.copy("/bin/cat", cat)
    subprocess.run(["setcap", "cap_dac_read_search+ep", str(cat)], check=True)

    def scenario() -> dict[str, Any]:
        handle = CommandHandle.load(
            {
                "name": "t",
                "handle": "command",
                "command": "/bin/sh",
                "arguments": ["-c", f"{cat} /etc/shadow"],
            }
        )
        guarded = Executor().call_sync(handle)
        bare = Executor(Policy(allow_setuid=True)).call_sync(handle)
        return {
            "guarded": [guarded.exit_code, guarded.stdout],
            "bare": [bare.exit_code, bool(bare.stdout)],
        }

    out = unprivileged(scenario)
    assert out["guarded"][0] != 0 and out["guarded"][1] == ""
    assert out["bare"] == [0, True]  # the canary: the capability works without the flag


ZOMBIE_SCENARIO = r"""
import ctypes, json, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER: we play init
sys.path.insert(0, sys.argv[1])
from command_handle import CommandHandle, Executor
handle = CommandHandle.load({"name": "z", "handle": "command", "command": "/bin/sh",
    "arguments": ["-c", "sleep 300 & sleep 300 & echo started"]})
executor = Executor()
for _ in range(20):
    assert executor.call_sync(handle).stdout == "started\n"
def children():
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == str(os.getpid()):
                found.append(fields[0])
    return found
# The killed sleeps become our children (we are the subreaper), die, and must
# be reaped: wait until none is left, alive or zombie.
deadline = time.monotonic() + 5
while children() and time.monotonic() < deadline:
    time.sleep(0.05)
print(json.dumps({"zombies": children().count("Z"), "left": len(children())}))
"""


def test_killed_descendants_are_reaped_when_we_are_init() -> None:
    root = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", ZOMBIE_SCENARIO, root], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '{"zombies": 0, "left": 0}'


def test_an_include_that_names_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "ok.json").write_text('{"a": 1}')
    template = compile_template({"$include": {"$": "name"}}, include_base=tmp_path)
    started = time.monotonic()
    with pytest.raises(IncludeError, match="not a regular file"):
        template.evaluate({"name": "pipe.json"})
    assert time.monotonic() - started < 5
    assert template.evaluate({"name": "ok.json"}) == {"a": 1}
    with pytest.raises(IncludeError, match="not a regular file"):
        compile_template({"$include": {"$": "name"}}, include_base="/dev").evaluate(
            {"name": "zero"}
        )
