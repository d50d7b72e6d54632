"""Helpers shared by the tests that launch real processes."""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from command_handle import CommandHandle, Executor
from command_handle.form import escape

ROOT = Path(__file__).resolve().parent.parent
PROBE = str(ROOT / "fixtures" / "programs" / "probe.py")
PY = sys.executable


def probe_handle(**fields: Any) -> CommandHandle:
    document: dict[str, Any] = {
        "name": "probe",
        "handle": "command",
        "command": PY,
        "arguments": {"$use": [PROBE, {"$spread": {"$": "words"}}]},
        "parameters": {"type": "object"},
    }
    words_without_template(document, fields)
    document.update(fields)
    return CommandHandle.load(document)


def words_without_template(document: dict[str, Any], fields: dict[str, Any]) -> None:
    """Given parameters that declare no ``words``, the probe gets no words: a
    template reading an undeclared name is a load error."""
    declared = fields.get("parameters", {}).get("properties")
    if "arguments" not in fields and declared is not None and "words" not in declared:
        document["arguments"] = [PROBE]


def python_handle(code: str, **fields: Any) -> CommandHandle:
    document: dict[str, Any] = {
        "name": "py",
        "handle": "command",
        "command": PY,
        "arguments": ["-c", escape(code)],  # the code is data, not a template
    }
    document.update(fields)
    return CommandHandle.load(document)


def python_handle_with_argv(code: str, *argv: str) -> CommandHandle:
    """A handle running ``python -c code argv...`` (the code and argv are data)."""
    return python_handle(code, arguments=["-c", escape(code), *argv])


def concurrency_probe(directory: Path, hold: float) -> CommandHandle:
    """A child that prints how many of its kind are running at once: it registers
    itself in ``directory``, counts, holds for ``hold`` seconds, and leaves."""
    code = (
        "import os, sys, time\n"
        "d = sys.argv[1]; mine = os.path.join(d, str(os.getpid()))\n"
        "open(mine, 'w').close()\n"
        "print(len(os.listdir(d)), flush=True)\n"
        f"time.sleep({hold})\n"
        "os.remove(mine)\n"
    )
    return python_handle_with_argv(code, str(directory))


def report(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_dead(pids: Iterable[int], seconds: float = 5.0) -> list[int]:
    """Wait until every pid is gone (or a zombie); return those still alive."""
    pending = list(pids)
    deadline = time.monotonic() + seconds
    while pending and time.monotonic() < deadline:
        pending = [pid for pid in pending if alive(pid)]
        if pending:
            time.sleep(0.02)
    return [pid for pid in pending if alive(pid)]


def open_fds() -> set[int]:
    """This process's open file descriptors."""
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


@contextmanager
def descriptors_exhausted(spare: int = 0) -> Iterator[None]:
    """Lower the descriptor limit and fill every free slot below it but ``spare``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(open_fds()) + 16, hard))
    hogs: list[int] = []
    try:
        while True:
            try:
                hogs.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
            except OSError:
                break
        for _ in range(spare):
            os.close(hogs.pop())
        yield
    finally:
        for fd in hogs:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def children() -> list[int]:
    """Processes (zombies included) whose parent is this process."""
    found = []
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if fields[1] == me:
                found.append(int(entry))
    return found


def unprivileged(scenario: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``scenario`` in a forked child that drops root (root is never refused
    a directory) and return what it reports."""

    def as_nobody() -> dict[str, Any]:
        # The checkout may sit in a directory only root can enter (mktemp -d):
        # work from / so that nothing depends on where the tests live.
        os.chdir("/")
        if os.geteuid() == 0:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
        return scenario()

    return in_a_fork(as_nobody)


def in_a_fork(scenario: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``scenario`` in a forked child (whose credentials it may change) and
    return what it reports."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 1
        try:
            os.close(read_end)
            data = json.dumps(scenario()).encode()
            code = 0
        except BaseException as exc:  # reported to the parent, which fails the test
            data = json.dumps({"error": repr(exc)}).encode()
        with os.fdopen(write_end, "wb") as sink:
            sink.write(data)
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as source:
        data = source.read()
    _, status = os.waitpid(pid, 0)
    reported: dict[str, Any] = json.loads(data)
    assert os.waitstatus_to_exitcode(status) == 0, reported
    return reported


# A python the unprivileged user of ``unprivileged`` can run (the venv's lives under /root).
SYSTEM_PY = "/usr/bin/python3"


def system_python_handle(code: str, *argv: str, **fields: Any) -> CommandHandle:
    """A handle running ``/usr/bin/python3 -c code argv...`` (code and argv are data)."""
    document: dict[str, Any] = {
        "name": "py",
        "handle": "command",
        "command": SYSTEM_PY,
        "arguments": ["-c", escape(code), *(escape(a) for a in argv)],
    }
    document.update(fields)
    return CommandHandle.load(document)


def shared_directory() -> str:
    """A fresh directory both root and the unprivileged user can use."""
    path = tempfile.mkdtemp(prefix="shared-")
    os.chmod(path, 0o777)
    return path


# Every thread of the parent, not only the main one: a thread that launched the
# child may share its Landlock domain, and /proc/<tid>/environ is the process's
# environment (its mem, the process's memory).
READ_PARENT = r"""
import json, os
parent = os.getppid()
readable = []
for tid in os.listdir(f"/proc/{parent}/task"):
    try:
        with open(f"/proc/{parent}/task/{tid}/environ", "rb") as f:
            if f.read():
                readable.append(tid)
    except OSError:
        pass
print(json.dumps(readable))
"""


def parent_threads_readable(executor: Executor) -> list[str]:
    """The threads of this process whose environment a child of ``executor`` read."""
    result = executor.call_sync(system_python_handle(READ_PARENT))
    assert result.exit_code == 0, result.stderr
    found: list[str] = json.loads(str(result.stdout))
    return found
