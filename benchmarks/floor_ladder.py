"""Where a trio call's time goes, rung by rung, against the posix_spawn floors.

Run: .venv/bin/python benchmarks/floor_ladder.py [--quick] [--pin CPU]

``--pin 0`` runs everything on CPU 0 (as ``taskset -c 0`` does; children
inherit it), as in a container limited to one core: there the spawner thread
cannot overlap the event loop.

Two floors, each timed in a block before every block of a rung:

- the raw floor: ``os.posix_spawn`` + ``waitpid``, stdout to /dev/null, no
  pipes, no session;
- the fair floor: what any complete call must do, in C as far as Python
  allows: ``os.posix_spawn`` with stdin from /dev/null, stdout and stderr
  on pipes read to end-of-file, a new session (``setsid=True``), then
  ``waitpid``.

Each rung adds one thing a complete call needs to the one before it, all
under trio and all launching ``/bin/echo hi`` with glibc's posix_spawn:

1. spawn, wait for the child's pidfd, reap, then read the pipes;
2. the pipes watched while the child runs (a child that writes more than a
   pipe holds would otherwise block for ever): the output wakes the caller,
   then the exit does;
3. a timeout on each wait;
4. the executor's supervisor (group kill, orphan reaping, caps, streams);
5. ``run_invocation``: pipes, the launch, the result object;
6. ``Executor.run``: the policy's sandbox check, the slot, the program re-check;
7. ``Executor.call``: validation and evaluation (render) before all of it;
8. the same with the ``no_new_privs`` spawner thread (the default; rungs 4 to
   7 launch in the caller's thread, as ``Policy(allow_setuid=True,
   keep_capabilities=True)`` does);
9. ``Executor.call_sync`` (the default), blocking, for comparison;
10. ``Executor.run_sync`` (the default) of the rendered invocation: the
    blocking run path without render, which every sync caller shares.

Every block of 20 calls of a rung is timed right after a block of each floor
and divided by it, so that the drift of a shared machine cancels; the figures
are the medians of those ratios, with their lowest and highest. Goals: rung
8 within 1.6x the fair floor on one CPU, rung 9 within 1.3x.
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable

import trio
from _floors import ARGV, drain, fair_floor
from _floors import raw_floor as floor
from _handles import ECHO

from command_handle import CommandHandle, Executor, Policy
from command_handle.executor import _drive, _posix_spawn, _process, _spawn, _supervise
from command_handle.executor._capture import Capture

CWD = os.getcwd()
HANDLE = CommandHandle.load(ECHO)
ARGS = {"word": "hi"}
# Launches in the caller's thread: with only allow_setuid, a root process still
# hands each launch to a thread that drops the capabilities for children.
INLINE = Executor(Policy(allow_setuid=True, keep_capabilities=True))
DEFAULT = Executor()
INVOCATION = HANDLE.render(ARGS, INLINE.policy)


def _spawn_piped() -> tuple[int, int, int]:
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    pid = _posix_spawn.spawn(ARGV, ARGV[0], {}, CWD, (subprocess.DEVNULL, out_write, err_write))
    os.close(out_write)
    os.close(err_write)
    return pid, out_read, err_read


async def pidfd_only() -> None:
    pid, out, err = _spawn_piped()
    exit_fd = os.pidfd_open(pid)
    await trio.lowlevel.wait_readable(exit_fd)
    os.waitpid(pid, 0)
    os.close(exit_fd)
    drain(out, err)


async def _watched(timeout: bool) -> None:
    pid, out, err = _spawn_piped()
    exit_fd = os.pidfd_open(pid)
    poller = select.epoll()
    for fd in (exit_fd, out, err):
        poller.register(fd, select.EPOLLIN)
    exited = False
    while not exited:
        if timeout:
            with trio.move_on_after(60):
                await trio.lowlevel.wait_readable(poller.fileno())
        else:
            await trio.lowlevel.wait_readable(poller.fileno())
        for fd, _ in poller.poll(0):
            if fd == exit_fd:
                exited = True
            elif not os.read(fd, 65536):
                poller.unregister(fd)
    os.waitpid(pid, 0)
    poller.close()
    os.close(exit_fd)
    drain(out, err)


async def pipes_watched() -> None:
    await _watched(timeout=False)


async def with_timeout() -> None:
    await _watched(timeout=True)


async def supervised() -> None:
    pid, out, err = _spawn_piped()
    outputs = [
        _supervise.Output("stdout", out, Capture(1 << 20)),
        _supervise.Output("stderr", err, Capture(1 << 20)),
    ]
    await _drive.drive(_supervise.supervise(_spawn.Child(pid), outputs, timeout=60, grace=2))


async def run_invocation() -> None:
    await _process.run_invocation(INVOCATION)


async def executor_run() -> None:
    await INLINE.run(INVOCATION)


async def executor_call() -> None:
    await INLINE.call(HANDLE, ARGS)


async def executor_call_no_new_privs() -> None:
    await DEFAULT.call(HANDLE, ARGS)


async def executor_call_sync() -> None:
    DEFAULT.call_sync(HANDLE, ARGS)


DEFAULT_INVOCATION = HANDLE.render(ARGS, DEFAULT.policy)


async def executor_run_sync() -> None:
    DEFAULT.run_sync(DEFAULT_INVOCATION)


RUNGS: list[tuple[str, Callable[[], Awaitable[None]]]] = [
    ("1 spawn, pidfd wait, read after exit", pidfd_only),
    ("2 + pipes watched while it runs", pipes_watched),
    ("3 + a timeout on each wait", with_timeout),
    ("4 the executor's supervisor", supervised),
    ("5 run_invocation", run_invocation),
    ("6 Executor.run", executor_run),
    ("7 Executor.call (render first)", executor_call),
    ("8 Executor.call, no_new_privs thread", executor_call_no_new_privs),
    ("9 Executor.call_sync (blocking)", executor_call_sync),
    ("10 Executor.run_sync (no render)", executor_run_sync),
]


async def _block(function: Callable[[], Awaitable[None]], size: int) -> float:
    start = time.perf_counter()
    for _ in range(size):
        await function()
    return (time.perf_counter() - start) / size


def _sync_block(function: Callable[[], None], size: int) -> float:
    start = time.perf_counter()
    for _ in range(size):
        function()
    return (time.perf_counter() - start) / size


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):>6.3f} ({min(values):.2f}-{max(values):.2f})"


async def measure(blocks: int, size: int) -> None:
    for _, function in RUNGS:  # warm up
        await _block(function, 5)
    raw: dict[str, list[float]] = {name: [] for name, _ in RUNGS}
    fair: dict[str, list[float]] = {name: [] for name, _ in RUNGS}
    raw_floors: list[float] = []
    fair_floors: list[float] = []
    for _ in range(blocks):
        for name, function in RUNGS:
            raw_base = _sync_block(floor, size)
            fair_base = _sync_block(fair_floor, size)
            raw_floors.append(raw_base)
            fair_floors.append(fair_base)
            spent = await _block(function, size)
            raw[name].append(spent / raw_base)
            fair[name].append(spent / fair_base)
    cpus = sorted(os.sched_getaffinity(0))
    print(f"CPUs {cpus}; {blocks} blocks of {size} calls per rung")
    print(
        f"raw floor (posix_spawn + waitpid): {statistics.median(raw_floors) * 1e3:.3f} ms per call"
    )
    fair_over_raw = statistics.median(f / r for f, r in zip(fair_floors, raw_floors, strict=True))
    print(
        "fair floor (+ stdin /dev/null, two pipes read to EOF, setsid): "
        f"{statistics.median(fair_floors) * 1e3:.3f} ms per call ({fair_over_raw:.3f}x raw)"
    )
    print(f"{'rung':<40} {'x raw floor':>20} {'x fair floor':>20}")
    for name, _ in RUNGS:
        print(f"{name:<40} {_spread(raw[name]):>20} {_spread(fair[name]):>20}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer blocks (smoke test)")
    parser.add_argument("--pin", type=int, metavar="CPU", help="run on this CPU only")
    options = parser.parse_args()
    if options.pin is not None:
        os.sched_setaffinity(0, {options.pin})
    blocks, size = (3, 10) if options.quick else (40, 20)
    trio.run(measure, blocks, size)
