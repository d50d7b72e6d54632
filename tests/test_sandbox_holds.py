"""Issue 22, findings 5 to 10: the network off is off for every socket, read-only
changes no metadata, and deny_read holds across bind mounts.

Real listeners on 127.0.0.1 (TCP and UDP echo servers that record what reaches
them), a canary private key of mode 0600, and real bind mounts in a private
mount namespace made with ``unshare``. Each check runs as root and, where it
says so, as an unprivileged user (uid 65534)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import CommandHandle, Executor, Policy, SandboxError
from command_handle.executor import _bubblewrap
from command_handle.form import escape

from .conftest import Run
from .processes import PY, ROOT, python_handle, python_handle_with_argv, unprivileged

SYSTEM_PYTHON = "/usr/bin/python3"  # uid 65534 cannot enter /root, where the venv's lives


def _sysctl(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


MPTCP = _sysctl("/proc/sys/net/mptcp/enabled") == "1"
FASTOPEN = _sysctl("/proc/sys/net/ipv4/tcp_fastopen") not in ("", "0")
IO_URING = _sysctl("/proc/sys/kernel/io_uring_disabled") in ("0",)
ROOT_USER = os.geteuid() == 0
BWRAP = _bubblewrap.available() is None

# Everything a child can try to reach the network with. Each entry is True
# when the attempt reached the echo server and came back.
NET_PROBE = r"""
import ctypes, json, mmap, os, socket, struct, sys
tcp_port, udp_port = int(sys.argv[1]), int(sys.argv[2])
out = {}
def attempt(name, action):
    try:
        out[name] = action()
    except OSError as exc:
        out[name] = False
        out[name + "_errno"] = exc.errno
def echo(sock):
    with sock:
        sock.settimeout(3)
        sock.connect(("127.0.0.1", tcp_port))
        sock.sendall(b"tcp")
        return sock.recv(8) == b"tcp"
def fastopen():
    with socket.socket() as sock:
        sock.sendto(b"tfo", 0x20000000, ("127.0.0.1", tcp_port))  # MSG_FASTOPEN, blocking
        sock.settimeout(3)
        return sock.recv(8) == b"tfo"
def udp(sock):
    with sock:
        sock.settimeout(3)
        sock.sendto(b"udp", ("127.0.0.1", udp_port))
        return sock.recv(8) == b"udp"
def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
    return True
def netlink():
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as sock:
        sock.bind((0, 0))
    return True
def unix():
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"x")
        return b.recv(1) == b"x"
def io_uring_socket():
    # IORING_OP_SOCKET makes a UDP socket without the socket system call.
    libc = ctypes.CDLL(None, use_errno=True)
    def check(result):
        if result < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return result
    params = ctypes.create_string_buffer(120)
    ring = check(libc.syscall(425, 4, params))  # io_uring_setup
    u32 = lambda at: struct.unpack_from("I", params, at)[0]
    sq_tail, sq_mask, sq_array, cq_head, cq_mask, cqes = (
        u32(44), u32(48), u32(64), u32(80), u32(88), u32(100))
    sq = mmap.mmap(ring, sq_array + u32(0) * 4, offset=0)
    cq = mmap.mmap(ring, cqes + u32(4) * 16, offset=0x8000000)
    sqes = mmap.mmap(ring, u32(0) * 64, offset=0x10000000)
    sqes[0:64] = struct.pack("BBHiQ", 45, 0, 0, socket.AF_INET, socket.SOCK_DGRAM).ljust(64, b"\0")
    tail = struct.unpack_from("I", sq, sq_tail)[0]
    mask = struct.unpack_from("I", sq, sq_mask)[0]
    struct.pack_into("I", sq, sq_array + (tail & mask) * 4, 0)
    struct.pack_into("I", sq, sq_tail, tail + 1)
    check(libc.syscall(426, ring, 1, 1, 1, None, 0))  # io_uring_enter, wait for it
    head = struct.unpack_from("I", cq, cq_head)[0]
    slot = head & struct.unpack_from("I", cq, cq_mask)[0]
    made = struct.unpack_from("i", cq, cqes + slot * 16 + 8)[0]
    if made < 0:
        raise OSError(-made, os.strerror(-made))
    return udp(socket.socket(fileno=made))
attempt("tcp", lambda: echo(socket.socket()))
attempt("mptcp", lambda: echo(socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)))
attempt("fastopen", fastopen)
attempt("udp", lambda: udp(socket.socket(socket.AF_INET, socket.SOCK_DGRAM)))
attempt("udp6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close() or True)
attempt("raw", raw)
attempt("netlink", netlink)
attempt("unix", unix)
attempt("io_uring", io_uring_socket)
print(json.dumps(out))
"""

# What reaches the network, by how the attempt is made; those the kernel here
# does not offer are left out.
# Raw sockets need CAP_NET_RAW, which no child has (docs/sandbox.md), network on or off.
REACHING: tuple[str, ...] = ("tcp", "udp", "udp6", "netlink")
REACHING += ("mptcp",) * MPTCP + ("fastopen",) * FASTOPEN + ("io_uring",) * IO_URING


class EchoServers:
    """A TCP and a UDP echo server on 127.0.0.1 that record what reached them."""

    def __init__(self) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._serve_tcp, daemon=True),
            threading.Thread(target=self._serve_udp, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    @property
    def ports(self) -> tuple[str, str]:
        return str(self.tcp.getsockname()[1]), str(self.udp.getsockname()[1])

    def _serve_tcp(self) -> None:
        self.tcp.settimeout(0.1)
        while not self._stop.is_set():
            try:
                connection, _ = self.tcp.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(3)
                try:
                    data = connection.recv(8)
                    self.received.append(data)
                    connection.sendall(data)
                except OSError:
                    pass

    def _serve_udp(self) -> None:
        self.udp.settimeout(0.1)
        while not self._stop.is_set():
            try:
                data, sender = self.udp.recvfrom(8)
            except OSError:
                continue
            self.received.append(data)
            self.udp.sendto(data, sender)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()
        self.tcp.close()
        self.udp.close()


@pytest.fixture
def echo() -> Iterator[EchoServers]:
    servers = EchoServers()
    yield servers
    servers.close()


def _handle(code: str, *argv: str, command: str = PY) -> CommandHandle:
    """``command -c code argv...``: the code and argv are data."""
    return python_handle(code, command=command, arguments=["-c", escape(code), *argv])


def _net_probe(run: Run, policy: Policy, echo: EchoServers) -> dict[str, Any]:
    handle = _handle(NET_PROBE, *echo.ports)
    result = run(Executor(policy), handle)
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(str(result.stdout))
    return report


def _policy(mode: str, workspace: Path | str, **fields: Any) -> Policy:
    return Policy(sandbox=mode, workspace=str(workspace), **fields)


# -- findings 5 to 8: the network off -------------------------------------------------


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_the_network_off_refuses_every_socket_family(
    run: Run, mode: str, echo: EchoServers, tmp_path: Path
) -> None:
    """MPTCP, Fast Open, UDP, raw, netlink and io_uring's own sockets passed
    Landlock's TCP rules; a Unix socket pair still works."""
    report = _net_probe(run, _policy(mode, tmp_path), echo)
    assert {name: report[name] for name in REACHING} == dict.fromkeys(REACHING, False)
    assert report["unix"]
    assert echo.received == []  # the canary: nothing reached either listener


def test_the_network_off_holds_for_an_unprivileged_user(echo: EchoServers) -> None:
    workspace, unique = tempfile.mkdtemp(), tempfile.mkdtemp()
    os.chmod(workspace, 0o777)
    handle = _handle(NET_PROBE, *echo.ports, command=SYSTEM_PYTHON)

    def scenario() -> dict[str, Any]:
        reports = {}
        for mode in ("read-only", "workspace-write"):
            # A profile of its own: one made by root earlier has a TMPDIR root's own.
            policy = _policy(mode, workspace, deny_read=(unique,))
            result = Executor(policy).call_sync(handle)
            reports[mode] = json.loads(str(result.stdout))
        return reports

    try:
        reports = unprivileged(scenario)
    finally:
        shutil.rmtree(workspace)
        os.rmdir(unique)
    reaching = [name for name in REACHING if name != "raw"]  # root only, in any case
    for report in reports.values():
        assert {name: report[name] for name in reaching} == dict.fromkeys(reaching, False)
        assert report["unix"]
    assert echo.received == []


def _listen_without_bind(policy: Policy) -> tuple[list[str], bool]:
    """A child listens without bind (the kernel picks a port on 0.0.0.0) and waits
    for a connection; the test connects to that port from outside the sandbox."""
    code = (
        "import socket\n"
        "try:\n"
        "    server = socket.socket()\n"
        "    server.listen()\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno, flush=True)\n"
        "    raise SystemExit(0)\n"
        "print(server.getsockname()[1], flush=True)\n"
        "server.settimeout(5)\n"
        "connection, _ = server.accept()\n"
        "print('accepted', flush=True)\n"
    )
    lines: list[str] = []
    connected = False

    async def main() -> None:
        nonlocal connected
        async with Executor(policy).stream(python_handle_with_argv(code)) as events:
            async for event in events:
                if event.kind != "stdout":
                    continue
                for line in event.data.decode().splitlines():
                    lines.append(line)
                    if line.isdigit():
                        try:
                            with socket.create_connection(("127.0.0.1", int(line)), timeout=2):
                                connected = True
                        except OSError:
                            pass

    trio.run(main)
    return lines, connected


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_the_network_off_opens_no_port_to_listen_on(mode: str, tmp_path: Path) -> None:
    lines, connected = _listen_without_bind(_policy(mode, tmp_path))
    assert lines[0].startswith("refused") and not connected
    assert "accepted" not in lines


def test_the_network_on_is_unchanged(run: Run, echo: EchoServers, tmp_path: Path) -> None:
    """``network=True`` allows every socket, as it did."""
    report = _net_probe(run, _policy("workspace-write", tmp_path, network=True), echo)
    assert {name: report[name] for name in REACHING} == dict.fromkeys(REACHING, True)
    assert report["unix"]
    assert not report["raw"]  # not the network's doing: a child has no CAP_NET_RAW
    # read-only with the network on: every socket still, io_uring refused (it can set
    # extended attributes, which read-only refuses).
    report = _net_probe(run, _policy("read-only", tmp_path, network=True), echo)
    sockets = [name for name in REACHING if name != "io_uring"]
    assert {name: report[name] for name in sockets} == dict.fromkeys(sockets, True)
    assert not report["io_uring"]
    lines, connected = _listen_without_bind(_policy("workspace-write", tmp_path, network=True))
    assert lines[-1] == "accepted" and connected


@pytest.mark.skipif(not BWRAP, reason="bubblewrap cannot run here")
@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_the_bubblewrap_network_namespace_covers_every_socket(
    mode: str, echo: EchoServers, tmp_path: Path
) -> None:
    """A child in its own network namespace may create sockets, but none reaches
    the host: no listener on 127.0.0.1 hears it, and its own port is not on the host."""
    policy = _policy(mode, tmp_path, sandbox_backend="bubblewrap")
    report = _net_probe(lambda e, h: e.call_sync(h), policy, echo)
    outward = [name for name in REACHING if name not in ("raw", "netlink", "udp6")]
    assert {name: report[name] for name in outward} == dict.fromkeys(outward, False)
    assert echo.received == []
    lines, connected = _listen_without_bind(policy)
    assert not connected and "accepted" not in lines


# -- finding 9: read-only changes no metadata ----------------------------------------

META_PROBE = r"""
import fcntl, json, os, sys
out = {}
def attempt(name, action):
    try:
        action()
        out[name] = True
    except OSError as exc:
        out[name] = exc.errno
for path in sys.argv[1:]:
    attempt("chmod " + path, lambda: os.chmod(path, 0o644))
    attempt("utime " + path, lambda: os.utime(path, (0, 0)))
    attempt("chown " + path, lambda: os.chown(path, os.getuid(), os.getgid()))
    attempt("setxattr " + path, lambda: os.setxattr(path, "user.probe", b"1"))
    def by_descriptor():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fchmod(fd, 0o666)
        finally:
            os.close(fd)
    attempt("fchmod " + path, by_descriptor)
    def chattr():
        with open(path) as f:
            fcntl.ioctl(f, 0x40086602, b"\0" * 8)  # FS_IOC_SETFLAGS: no flags
    attempt("chattr " + path, chattr)
tmp = os.path.join(os.environ["TMPDIR"], "mine")
open(tmp, "w").close()
attempt("chmod tmpdir", lambda: os.chmod(tmp, 0o700))
print(json.dumps(out))
"""


def _canaries(base: Path, owner: int) -> dict[str, Path]:
    """A private key (0600) under a denied directory, and a file outside every
    writable root that is not denied (0644)."""
    secret = base / "home" / ".ssh"
    secret.mkdir(parents=True)
    key = secret / "id_ed25519"
    key.write_text("PRIVATE KEY")
    key.chmod(0o600)
    outside = base / "outside.txt"
    outside.write_text("data")
    outside.chmod(0o644)
    for path in (base, base / "home", secret, key, outside):
        os.chown(path, owner, owner)
    base.chmod(0o755)
    (base / "home").chmod(0o755)
    return {"key": key, "outside": outside, "denied": secret}


def _snapshot(path: Path) -> tuple[int, int, int, int, list[str]]:
    info = path.stat()
    return info.st_mode, info.st_mtime_ns, info.st_uid, info.st_gid, os.listxattr(path)


def _metadata_probe(policy: Policy, paths: list[Path], command: str = PY) -> Any:
    handle = _handle(META_PROBE, *map(str, paths), command=command)
    result = Executor(policy).call_sync(handle)
    assert result.exit_code == 0, result.stderr
    return json.loads(str(result.stdout))


@pytest.mark.parametrize("user", ["root", "unprivileged"])
def test_read_only_changes_no_metadata(user: str) -> None:
    """A child that cannot read a private key made it world-readable with chmod;
    read-only now refuses chmod, chown, utime, xattrs and chattr everywhere."""
    if user == "root" and not ROOT_USER:
        pytest.skip("needs root")
    owner = 65534 if user == "unprivileged" else os.geteuid()
    base = Path(tempfile.mkdtemp())
    try:
        places = _canaries(base, owner)
        before = {name: _snapshot(places[name]) for name in ("key", "outside")}
        policy = Policy(sandbox="read-only", deny_read=(str(places["denied"]),))
        paths = [places["key"], places["outside"]]
        if user == "root":
            report = _metadata_probe(policy, paths)
        else:
            report = unprivileged(lambda: _metadata_probe(policy, paths, SYSTEM_PYTHON))
        assert {name: _snapshot(places[name]) for name in ("key", "outside")} == before
        assert stat.S_IMODE(places["key"].stat().st_mode) == 0o600
        assert [name for name, done in report.items() if done is True] == [], report
        assert report["chmod tmpdir"] == 1  # EPERM: seccomp sees no paths (docs/sandbox.md)
    finally:
        shutil.rmtree(base)


@pytest.mark.skipif(not BWRAP, reason="bubblewrap cannot run here")
@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_bubblewrap_changes_no_metadata_outside_the_writable_roots(
    mode: str, tmp_path: Path
) -> None:
    """Under bubblewrap the root is mounted read-only: the metadata of a file
    outside the writable roots cannot change (EROFS), and a denied one is hidden."""
    base = Path(tempfile.mkdtemp())
    try:
        places = _canaries(base, os.geteuid())
        before = {name: _snapshot(places[name]) for name in ("key", "outside")}
        policy = _policy(
            mode, tmp_path, deny_read=(str(places["denied"]),), sandbox_backend="bubblewrap"
        )
        report = _metadata_probe(policy, [places["key"], places["outside"]])
        assert {name: _snapshot(places[name]) for name in ("key", "outside")} == before
        changed = [name for name, done in report.items() if done is True]
        assert changed == ["chmod tmpdir"], report  # its TMPDIR is a writable mount
    finally:
        shutil.rmtree(base)


def test_workspace_write_still_changes_metadata_in_the_workspace(tmp_path: Path) -> None:
    """chmod +x, touch and copying with modes keep working in the workspace
    (docs/sandbox.md: why workspace-write does not refuse them under Landlock)."""
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    code = (
        "import os, shutil, subprocess, sys\n"
        "os.chdir(sys.argv[1])\n"
        "subprocess.run(['chmod', '+x', 'run.sh'], check=True)\n"
        "subprocess.run(['touch', '-d', '2001-01-01', 'run.sh'], check=True)\n"
        "shutil.copy2('run.sh', 'copy.sh')\n"
        "print(subprocess.run(['./copy.sh'], capture_output=True, text=True).stdout, end='')\n"
    )
    policy = _policy("workspace-write", tmp_path)
    result = Executor(policy).call_sync(python_handle_with_argv(code, str(tmp_path)))
    assert result.stdout == "ran\n", result.stderr
    assert os.access(tmp_path / "copy.sh", os.X_OK)


# -- finding 10: deny_read across bind mounts -----------------------------------------

BIND_SCENARIO = r"""
import json, os, subprocess, sys, tempfile
from command_handle import Executor, Policy, SandboxError
from command_handle.executor import _bubblewrap
from command_handle.form import escape
from tests.processes import python_handle

base = tempfile.mkdtemp()
os.chmod(base, 0o755)
home = os.path.join(base, "home")
os.makedirs(os.path.join(home, ".ssh"))
key = os.path.join(home, ".ssh", "id")
with open(key, "w") as f:
    f.write("PRIVATE KEY")
os.chmod(key, 0o644)  # readable by anyone but for deny_read
alias, lone = os.path.join(base, "alias"), os.path.join(base, "lone")
os.mkdir(alias)
open(lone, "w").close()
# An ancestor of the denied path bound elsewhere, and the key itself bound to a file.
subprocess.run(["mount", "--bind", home, alias], check=True)
subprocess.run(["mount", "--bind", key, lone], check=True)
READ = (
    "import sys\nfor p in sys.argv[1:]:\n"
    "    try: print(open(p).read())\n    except OSError: print('denied')\n"
)
names = [key, os.path.join(alias, ".ssh", "id"), lone]
backends = ["landlock"] + (["bubblewrap"] if _bubblewrap.available() is None else [])

def scenario(command, user):
    seen = {}
    for backend in backends:
        # A profile per user: one made by root has a TMPDIR only root may enter.
        denied = (os.path.join(home, ".ssh"), os.path.join(base, "profile-of-" + user))
        policy = Policy(sandbox="read-only", deny_read=denied, sandbox_backend=backend)
        handle = python_handle(READ, command=command, arguments=["-c", escape(READ), *names])
        result = Executor(policy).call_sync(handle)
        seen[backend] = result.stdout.split("\n")[:-1]
    return seen

report = {"root": scenario(sys.executable, "root")}
# A workspace that shows the denied path: Landlock cannot carve it out of a writable root.
try:
    Executor(Policy(sandbox="workspace-write", workspace=alias,
                    deny_read=(os.path.join(home, ".ssh"),))).call_sync(
        python_handle("print('ran')"))
    report["writable_alias"] = "ran"  # the canary: nothing may run
except SandboxError as exc:
    report["writable_alias"] = str(exc)
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(read)
    os.chdir("/")
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
    os.write(write, json.dumps(scenario("/usr/bin/python3", "nobody")).encode())
    os._exit(0)
os.close(write)
with os.fdopen(read) as source:
    report["unprivileged"] = json.loads(source.read())
os.waitpid(pid, 0)
print(json.dumps(report))
"""


@pytest.mark.skipif(not ROOT_USER or shutil.which("unshare") is None, reason="needs root")
def test_deny_read_holds_across_bind_mounts() -> None:
    """A denied file was readable, by its own path too, once an ancestor was
    bind-mounted elsewhere; now every name the mount table gives it is denied,
    as root and as an unprivileged user, with both backends."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", BIND_SCENARIO],
        capture_output=True,
        text=True,
        env=environment,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for user in ("root", "unprivileged"):
        for backend, seen in report[user].items():
            assert seen == ["denied"] * 3, (user, backend, seen)
    assert "is also visible at" in report["writable_alias"]


# -- where the filter cannot be loaded, and what the machine reports ------------------


def test_a_machine_without_libseccomp_refuses_the_network_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without the filter, Landlock alone would let UDP and the rest through:
    such a profile is refused and nothing runs; the network on needs no filter."""
    from command_handle.executor import _sandbox, _seccomp

    monkeypatch.setattr(_seccomp, "problem", lambda: _seccomp.WHY_NO_LIBSECCOMP)
    marker = tmp_path / "ran"
    handle = _handle("import sys; open(sys.argv[1], 'w')", str(marker))
    for policy in (_policy("workspace-write", tmp_path), Policy(sandbox="read-only")):
        executor = Executor(policy)
        with pytest.raises(SandboxError, match="libseccomp is not installed"):
            executor.call_sync(handle)
        assert executor.spawned == 0 and not marker.exists()
    assert _sandbox.profile_for(_policy("workspace-write", tmp_path, network=True)) is not None
    ran = Executor(_policy("workspace-write", tmp_path, network=True)).call_sync(handle)
    assert ran.exit_code == 0 and marker.exists()


def test_the_sandbox_check_reports_the_filter() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "command_handle", "sandbox", "check"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    report = json.loads(done.stdout)
    assert report["seccomp"] is True and report["read_only_metadata"] is True
    assert report["network"] is True and report["deny_read_across_bind_mounts"] is True


@pytest.mark.parametrize("backend", ["landlock", "bubblewrap"])
def test_a_hard_link_beside_a_denied_path_does_not_open_it(
    backend: str, run: Run, tmp_path: Path
) -> None:
    """Landlock's rules sit on inodes: granting a sibling file that is a hard link
    of a denied file granted the denied file by its own path too (an outside
    review of this change). Such a sibling is not granted."""
    base = tmp_path / "base"
    private = base / "private"
    private.mkdir(parents=True)
    key = private / "id_rsa"
    key.write_text("PRIVATE-KEY-CANARY")
    os.link(key, base / "notes.txt")
    (base / "plain.txt").write_text("public")
    policy = Policy(
        sandbox="read-only", workspace=str(base), deny_read=(str(private),), sandbox_backend=backend
    )
    code = (
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        print(path.rsplit('/', 1)[1], open(path).read())\n"
        "    except OSError as exc:\n"
        "        print(path.rsplit('/', 1)[1], 'refused', exc.errno)\n"
    )
    handle = python_handle_with_argv(code, str(key), str(base / "plain.txt"))
    result = run(Executor(policy), handle)
    assert "PRIVATE-KEY-CANARY" not in str(result.stdout), result.stdout
    assert "plain.txt public" in str(result.stdout)
