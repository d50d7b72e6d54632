"""Running one Invocation with trio: the only code in the project that spawns.

- argv only, never a shell; the child starts a new session, so it leads its own
  process group and everything it forks can be signalled together;
- stdin is closed (``/dev/null``) or fed concurrently with reading the outputs,
  so a child that never reads cannot deadlock the call;
- each piped stream is read as it arrives and kept up to ``max_output`` bytes;
  the rest is read and dropped, so memory stays bounded whatever the child writes;
- on timeout or cancellation the group gets SIGTERM, then SIGKILL after the
  grace period; when the child exits, whatever is left of its group is killed,
  so no descendant outlives the call.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable

import trio

from ..errors import LaunchError
from ..handle import Invocation
from ._result import CommandResult

__all__ = [
    "RESOURCE_ERRNOS",
    "ChunkCallback",
    "launch_error",
    "resource_error",
    "run_invocation",
]

ChunkCallback = Callable[[str, bytes], Awaitable[None]]
_READ_SIZE = 65536


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
        os.killpg(pid, signum)


async def _terminate(process: trio.Process, grace: float) -> None:
    """SIGTERM to the group, SIGKILL after ``grace`` seconds; then reap."""
    if process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        with trio.move_on_after(grace):
            await process.wait()
    _signal_group(process.pid, signal.SIGKILL)
    await process.wait()


class _Capture:
    """One output stream: the first ``limit`` bytes, and whether more came."""

    __slots__ = ("buffer", "limit", "name", "truncated")

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        self.buffer = bytearray()
        self.truncated = False

    async def drain(self, stream: trio.abc.ReceiveStream, on_chunk: ChunkCallback | None) -> None:
        while True:
            try:
                chunk = await stream.receive_some(_READ_SIZE)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                return
            if not chunk:
                return
            room = self.limit - len(self.buffer)
            if room > 0:
                self.buffer += chunk[:room]
            if len(chunk) > room:
                self.truncated = True
            if on_chunk is not None:
                await on_chunk(self.name, bytes(chunk))

    def decode(self, encoding: str) -> tuple[str | bytes, bool]:
        data = bytes(self.buffer)
        if encoding == "binary":
            return data, False
        try:
            return data.decode(encoding), False
        except UnicodeDecodeError:
            return data.decode(encoding, errors="replace"), True


async def _feed(stream: trio.abc.SendStream, data: bytes) -> None:
    try:
        if data:
            await stream.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the child exited or closed stdin before reading everything: not an error
    finally:
        with trio.CancelScope(shield=True):
            await stream.aclose()


def _mode(mode: str) -> int | None:
    return {"pipe": subprocess.PIPE, "ignore": subprocess.DEVNULL, "inherit": None}[mode]


# The host ran out of something; the handle is not at fault and a retry may work.
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN})


def _reason(exc: OSError) -> str:
    return f"{exc.strerror or 'error'} ({errno.errorcode.get(exc.errno or 0, 'error')})"


def resource_error(exc: OSError) -> LaunchError:
    """The refusal for a launch that failed because the host ran out of resources."""
    return LaunchError(
        f"the program could not be started: this process ran out of resources: {_reason(exc)}; "
        "nothing ran, and a later call may succeed",
        "/command",
    )


def launch_error(exc: OSError, program: str, cwd: str, directory_pointer: str) -> LaunchError:
    """The refusal for a launch that failed after every check passed.

    The checks ran before launch, so the world changed in between (a removed
    directory or executable, a lost permission) or the host ran out of
    something. The message says which, and points at the field concerned.
    """
    if exc.errno in RESOURCE_ERRNOS:
        return resource_error(exc)
    if exc.filename == cwd:
        return LaunchError(
            f"the directory {cwd!r} could not be entered at launch ({_reason(exc)}); "
            "it changed after it was checked",
            directory_pointer,
        )
    return LaunchError(
        f"the program {program!r} could not be started ({_reason(exc)}); "
        "it changed after it was checked, or is not a program this system can run",
        "/command",
    )


async def _spawn(invocation: Invocation) -> trio.Process:
    try:
        return await trio.lowlevel.open_process(
            list(invocation.argv),
            stdin=subprocess.PIPE if invocation.stdin is not None else subprocess.DEVNULL,
            stdout=_mode(invocation.stdout),
            stderr=_mode(invocation.stderr),
            cwd=invocation.cwd,
            env=invocation.env,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        raise launch_error(exc, invocation.argv[0], invocation.cwd, "/directory") from None


async def run_invocation(
    invocation: Invocation,
    on_chunk: ChunkCallback | None = None,
    on_spawn: Callable[[], None] | None = None,
) -> CommandResult:
    """Run ``invocation`` to completion, timeout or cancellation; return its result.

    ``on_chunk`` receives the output as it arrives; ``on_spawn`` is called just
    before the launch, once the call can no longer be cancelled without a child.
    """
    started = time.monotonic()
    # A caller that gave up during evaluation or while waiting for a slot gets its
    # cancellation here: trio's fast paths up to the launch do not deliver it.
    await trio.lowlevel.checkpoint_if_cancelled()
    if on_spawn is not None:
        on_spawn()
    process = await _spawn(invocation)
    captures: dict[str, _Capture] = {}
    timed_out = False
    try:
        async with trio.open_nursery() as nursery:
            if process.stdin is not None and invocation.stdin is not None:
                nursery.start_soon(_feed, process.stdin, invocation.stdin)
            readers_done = trio.Event()
            readers = 0
            for name, stream in (("stdout", process.stdout), ("stderr", process.stderr)):
                if stream is not None:
                    capture = captures[name] = _Capture(name, invocation.max_output)
                    readers += 1

                    async def read(
                        capture: _Capture = capture, stream: trio.abc.ReceiveStream = stream
                    ) -> None:
                        nonlocal readers
                        try:
                            await capture.drain(stream, on_chunk)
                        finally:
                            readers -= 1
                            if readers == 0:
                                readers_done.set()

                    nursery.start_soon(read)
            if readers == 0:
                readers_done.set()
            with trio.move_on_after(invocation.timeout) as deadline:
                await process.wait()
            if deadline.cancelled_caught:
                timed_out = True
                await _terminate(process, invocation.kill_grace)
            # The child is gone; whatever it left in its group goes too, so the
            # pipes reach end-of-file.
            _signal_group(process.pid, signal.SIGKILL)
            with trio.move_on_after(invocation.kill_grace):
                await readers_done.wait()
            # A descendant that escaped the group (setsid) may still hold a pipe:
            # stop reading rather than wait for it.
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await _terminate(process, invocation.kill_grace)
            for pipe in (process.stdin, process.stdout, process.stderr):
                if pipe is not None:
                    await pipe.aclose()
    duration = time.monotonic() - started
    stdout, stdout_replaced = (
        captures["stdout"].decode(invocation.encoding) if "stdout" in captures else (None, False)
    )
    stderr, stderr_replaced = (
        captures["stderr"].decode(invocation.encoding) if "stderr" in captures else (None, False)
    )
    code = process.returncode
    assert code is not None
    return CommandResult(
        argv=invocation.argv,
        exit_code=code if code >= 0 else None,
        signal=-code if code < 0 else None,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out,
        stdout_truncated="stdout" in captures and captures["stdout"].truncated,
        stderr_truncated="stderr" in captures and captures["stderr"].truncated,
        duration_s=duration,
        stdout_replaced=stdout_replaced,
        stderr_replaced=stderr_replaced,
    )
