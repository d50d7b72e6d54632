"""Running one Invocation: pipes, launch, supervision, result.

- argv only, never a shell; the child leads its own session and process group;
- stdin is /dev/null or fed concurrently with reading the outputs, so a child
  that never reads cannot deadlock the call;
- each piped stream is kept up to ``max_output`` bytes; the rest is read and
  dropped, so memory stays bounded whatever the child writes;
- on timeout or cancellation the group gets SIGTERM, then SIGKILL after the
  grace period; when the child exits, whatever is left of its group is killed.

:func:`run_invocation` awaits under trio or asyncio; :func:`run_invocation_sync`
blocks the calling thread. Both share everything but the waiting.
"""

from __future__ import annotations

import asyncio
import errno
import math
import os
import subprocess
import time
from collections.abc import Callable, Generator

import sniffio

from ..call import CommandResult, Invocation
from ..errors import HandleError, LaunchError, SandboxError
from ._capture import Capture
from ._cgroup import CallCgroup
from ._drive import ChunkCallback, SyncChunkCallback, drive, drive_sync
from ._ki import held
from ._spawn import (
    Child,
    ConfinementError,
    KilledAtLaunch,
    Spawner,
    launch,
    launch_async,
    launch_sync,
)
from ._supervise import Events, Handover, Outcome, Output, Request, supervise

__all__ = [
    "RESOURCE_ERRNOS",
    "launch_error",
    "refusal",
    "resource_error",
    "run_invocation",
    "run_invocation_sync",
]

# The host ran out of something; the handle is not at fault and a retry may work.
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN})


def _reason(exc: OSError) -> str:
    return f"{exc.strerror or 'error'} ({errno.errorcode.get(exc.errno or 0, 'error')})"


def resource_error(exc: OSError) -> LaunchError:
    """The refusal for a launch that failed because the host ran out of resources."""
    if isinstance(exc, KilledAtLaunch):
        return LaunchError(
            "the program was started, but this process ran out of resources to supervise it: "
            f"{_reason(exc)}; it was killed at once, and a later call may succeed",
            "/command",
        )
    return LaunchError(
        f"the program could not be started: this process ran out of resources: {_reason(exc)}; "
        "nothing ran, and a later call may succeed",
        "/command",
    )


def refusal(exc: OSError) -> HandleError | None:
    """The error for a launch that failed for a reason that is not the program's:
    the sandbox could not be applied, the host ran out of something, or the
    child could not be supervised and was killed at once. None otherwise."""
    if isinstance(exc, ConfinementError):
        return SandboxError(f"the sandbox could not be applied ({_reason(exc)}); nothing ran")
    if exc.errno in RESOURCE_ERRNOS:
        return resource_error(exc)
    if isinstance(exc, KilledAtLaunch):
        return LaunchError(
            f"the program was started, but could not be supervised ({_reason(exc)}); "
            "it was killed at once",
            "/command",
        )
    return None


def launch_error(exc: OSError, cwd: str, directory_pointer: str) -> HandleError:
    """The refusal for a launch that failed after every check passed.

    The checks ran before launch, so the world changed in between (a removed
    directory or executable, a lost permission), the host ran out of
    something, or the sandbox could not be applied. The message says which,
    and points at the field concerned. The one place where an OSError from a
    launch becomes an error of ours (plans use :func:`refusal`).
    """
    refused = refusal(exc)
    if refused is not None:
        return refused
    if exc.filename == cwd:
        return LaunchError(
            f"the directory could not be entered at launch ({_reason(exc)}); "
            "it changed after it was checked",
            directory_pointer,
        )
    return LaunchError(
        f"the program could not be started ({_reason(exc)}); "
        "it changed after it was checked, or is not a program this system can run",
        "/command",
    )


def _close(fds: list[int]) -> None:
    while fds:
        try:  # noqa: SIM105 - every call passes here; suppress() costs more
            os.close(fds.pop())
        except OSError:
            pass


def child_argv(inv: Invocation) -> tuple[tuple[str, ...], str]:
    """The argv a child gets and the file executed: the checked, resolved path,
    with the name as written as ``argv[0]``; under bubblewrap, bwrap's argv
    (it starts the program inside its namespaces, by its path)."""
    if inv.bubblewrap:
        argv = (*inv.bubblewrap, *inv.argv)
        return argv, argv[0]
    if inv.argv0 is not None:  # the name as written, as a shell passes it
        return (inv.argv0, *inv.argv[1:]), inv.argv[0]
    return inv.argv, inv.argv[0]


class _HandleRun:
    """One invocation's descriptors, supervisor and result."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation
        self.started = time.monotonic()
        self.captures: dict[str, Capture] = {}
        self.handover = Handover()

    def open_pipes(self) -> None:
        """Create the pipes; ``child_fds`` are the child's three streams."""
        inv = self.invocation
        self.ours: list[int] = []  # our ends, handed to the supervisor
        self.theirs: list[int] = []  # the child's ends, closed once it has them
        self.outputs: list[Output] = []
        self.stdin_fd = -1
        self.child_fds: list[int | None] = [subprocess.DEVNULL, None, None]
        self.cgroup: CallCgroup | None = None
        try:
            if inv.cgroup:  # made here: a sandboxed spawner thread may not write cgroupfs
                self.cgroup = CallCgroup()
            if inv.stdin is not None:
                read_end, self.stdin_fd = os.pipe()
                self.theirs.append(read_end)
                self.ours.append(self.stdin_fd)
                self.child_fds[0] = read_end
            for index, name, mode in ((1, "stdout", inv.stdout), (2, "stderr", inv.stderr)):
                if mode == "pipe":
                    read_end, write_end = os.pipe()
                    self.ours.append(read_end)
                    self.theirs.append(write_end)
                    capture = self.captures[name] = Capture(inv.max_output)
                    self.outputs.append(Output(name, read_end, capture))
                    self.child_fds[index] = write_end
                elif mode == "ignore":
                    self.child_fds[index] = subprocess.DEVNULL
        except OSError as exc:
            self.close_all()
            raise launch_error(exc, inv.cwd, "/directory") from None

    def launch(self, terminal: bool = False) -> Child:
        """Start the child (on the spawner thread, usually); with ``terminal``,
        its stdin is a pseudo-terminal's side that becomes its controlling one."""
        inv = self.invocation
        fds = self.child_fds
        argv, executable = child_argv(inv)
        child = self.handover.child = launch(
            argv,
            executable=executable,
            env=inv.env,
            cwd=inv.cwd,
            stdin=fds[0],
            stdout=fds[1],
            stderr=fds[2],
            limits=inv.limits,
            cgroup=self.cgroup,
            terminal=terminal,
        )
        return child

    def close_all(self) -> None:
        _close(self.ours)
        _close(self.theirs)
        if self.cgroup is not None:
            self.cgroup.discard()
            self.cgroup = None

    def abandon(self) -> None:
        """The caller was interrupted (Ctrl-C) before the supervisor took over:
        leave nothing of the launch. Once the supervisor has, its own cleanup did."""
        if self.handover.supervised:
            return
        if self.handover.child is not None:
            self.handover.child.finish()
        self.close_all()

    def launch_failed(self, exc: OSError) -> HandleError:
        self.close_all()
        return launch_error(exc, self.invocation.cwd, "/directory")

    def tell_started(self, child: Child, on_started: Callable[[int], None]) -> None:
        """Tell ``on_started``; if it raises, nothing of the call is left."""
        try:
            on_started(child.pid)
        except BaseException:
            child.finish()
            self.close_all()
            raise

    def supervise(
        self, child: Child, stream: bool, block: bool = False
    ) -> Generator[Request, Events, Outcome]:
        _close(self.theirs)
        inv = self.invocation
        return supervise(
            child,
            self.outputs,
            stdin_fd=self.stdin_fd,
            stdin_data=inv.stdin or b"",
            timeout=inv.timeout,
            grace=inv.kill_grace,
            stream=stream,
            block=block,
            handover=self.handover,
        )

    def result(self, outcome: Outcome) -> CommandResult:
        inv = self.invocation
        encoding = inv.encoding
        out = self.captures.get("stdout")
        err = self.captures.get("stderr")
        stdout = stderr = None
        out_replaced = err_replaced = False
        if out is not None:
            stdout, out_replaced = out.decode(encoding)
        if err is not None:
            stderr, err_replaced = err.decode(encoding)
        code = outcome.returncode
        return CommandResult.of_run(
            argv=inv.argv,
            exit_code=code if code >= 0 else None,
            signal=-code if code < 0 else None,
            stdout=stdout,
            stderr=stderr,
            timed_out=outcome.timed_out,
            stdout_truncated=out is not None and out.truncated,
            stderr_truncated=err is not None and err.truncated,
            duration_s=time.monotonic() - self.started,
            stdout_replaced=out_replaced,
            stderr_replaced=err_replaced,
            stdout_bytes=out.total if out is not None else 0,
            stderr_bytes=err.total if err is not None else 0,
            stdout_tail=out.decode_tail(encoding) if out is not None and out.truncated else None,
            stderr_tail=err.decode_tail(encoding) if err is not None and err.truncated else None,
        )


async def _deliver_cancellation() -> None:
    """Raise a cancellation that is pending for this caller, before anything starts.

    Under trio a full checkpoint costs a trip through the scheduler; a pending
    cancellation shows in the task's cancel status, and a deadline that passed
    while the call was evaluated is compared here. asyncio delivers
    ``Task.cancel()`` only when the task yields, so it yields.
    """
    if sniffio.current_async_library() == "trio":
        import trio

        deadline = trio.current_effective_deadline()
        if deadline != math.inf and deadline <= trio.current_time():
            await trio.lowlevel.checkpoint()
        await trio.lowlevel.checkpoint_if_cancelled()
    else:
        await asyncio.sleep(0)


@held
async def run_invocation(
    invocation: Invocation,
    on_chunk: ChunkCallback | None = None,
    on_spawn: Callable[[], None] | None = None,
    confined: Spawner | None = None,
    on_started: Callable[[int], None] | None = None,
) -> CommandResult:
    """Run ``invocation`` to completion, timeout or cancellation (trio or asyncio).

    ``on_chunk`` receives the output as it arrives; ``on_spawn`` is called just
    before the launch, once the call can no longer be cancelled without a child;
    ``on_started`` gets the child's pid once it runs.
    """
    # A caller that gave up during evaluation or while waiting for a slot gets its
    # cancellation here: the fast paths up to the launch do not deliver it, and a
    # deadline that passed meanwhile is only noticed once we yield to the loop.
    await _deliver_cancellation()
    run = _HandleRun(invocation)
    run.open_pipes()
    if on_spawn is not None:
        on_spawn()
    try:
        child = await launch_async(
            run.launch, invocation.no_new_privs, confined, settle=on_chunk is None
        )
    except OSError as exc:
        raise run.launch_failed(exc) from None
    except BaseException:
        run.close_all()  # the launch is over, and its child gone
        raise
    if on_started is not None:
        run.tell_started(child, on_started)
    try:
        return run.result(await drive(run.supervise(child, on_chunk is not None), on_chunk))
    except KilledAtLaunch as exc:
        raise launch_error(exc, invocation.cwd, "/directory") from None


def run_invocation_sync(
    invocation: Invocation,
    on_spawn: Callable[[], None] | None = None,
    confined: Spawner | None = None,
    on_started: Callable[[int], None] | None = None,
    on_chunk: SyncChunkCallback | None = None,
) -> CommandResult:
    """Run ``invocation`` in the calling thread, with no event loop; ``on_chunk``
    is called in this thread with the output as it arrives."""
    run = _HandleRun(invocation)
    run.open_pipes()
    if on_spawn is not None:
        on_spawn()
    # Ctrl-C can come at any call of this function: until the supervisor takes
    # over, ``abandon`` kills the child that the spawner thread recorded.
    try:
        child = launch_sync(run.launch, invocation.no_new_privs, confined)
    except OSError as exc:
        raise run.launch_failed(exc) from None
    except BaseException:
        run.abandon()
        raise
    try:
        if on_started is not None:
            run.tell_started(child, on_started)
        supervisor = run.supervise(child, on_chunk is not None, block=True)
        return run.result(drive_sync(supervisor, on_chunk))
    except KilledAtLaunch as exc:
        raise launch_error(exc, invocation.cwd, "/directory") from None
    except BaseException:
        run.abandon()
        raise
