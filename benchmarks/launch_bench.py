"""glibc's posix_spawn against subprocess.Popen, both from the spawner thread.

Run: .venv/bin/python benchmarks/launch_bench.py [--quick]

The executor keeps a launch of its own (``executor/_posix_spawn.py``) beside
``subprocess.Popen``, which it uses where glibc lacks the extensions and for
``cgroup_per_call``. This measures whether it earns its keep. Both ways start
``/bin/echo hi`` exactly as ``launch()`` does (a new session, stdin on
/dev/null, stdout and stderr on fresh pipes, no other descriptor, the same
environment and directory), from the ``no_new_privs`` spawner thread, and
open the exit descriptor; rows:

- launch: ``Spawner.call`` of the launch, until the caller holds the child;
- launch + exit: the same, then the wait for its exit (reaped);
- whole call: ``run_invocation_sync`` of the same argv (pipes, launch,
  supervision, result), ``launch()`` taking one path or the other.

Blocks of calls alternate between the two ways (which goes first alternates
too), so the drift of a shared machine hits both alike; each row gives the
median per-call time of each way over its blocks (wall clock, and CPU time
of this process, the spawner thread included) and the median of the
per-pair ratios posix_spawn / Popen.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from functools import partial

from command_handle import CommandHandle, Policy
from command_handle.executor import _posix_spawn, _process, _spawn

ARGV = ("/bin/echo", "hi")
ENV = {"PATH": "/usr/bin:/bin"}
CWD = os.getcwd()
INVOCATION = CommandHandle.load(
    {"name": "echo", "handle": "command", "command": ARGV[0], "arguments": [ARGV[1]]}
).render(None, Policy())
_AVAILABLE = _posix_spawn.available


Streams = tuple[int, int, int]
Sample = tuple[float, float]  # wall and CPU seconds of the part timed


def _posix(streams: Streams) -> _spawn.Child:
    return _spawn.Child(_posix_spawn.spawn(ARGV, ARGV[0], ENV, CWD, streams))


def _popen(streams: Streams) -> _spawn.Child:
    child = _spawn.start_popen(ARGV, ARGV[0], ENV, CWD, streams)
    child.watch()
    return child


def _clock() -> Sample:
    return time.perf_counter(), time.process_time()


def _since(start: Sample) -> Sample:
    now = _clock()
    return now[0] - start[0], now[1] - start[1]


def _launch(start: Callable[[Streams], _spawn.Child], wait: bool) -> Sample:
    """One launch from the spawner thread, timed until the caller holds the
    child, or (``wait``) until it has exited and been reaped."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    job = partial(start, (subprocess.DEVNULL, out_write, err_write))
    began = _clock()
    child = _spawn.spawner.call(job)
    if wait:
        child.reap()
    took = _since(began)
    for fd in (out_write, err_write, out_read, err_read):
        os.close(fd)
    child.reap()
    child.close()
    return took


def _whole(posix: bool) -> Sample:
    # launch() asks _posix_spawn.available() on every call: the switch is that.
    _posix_spawn.available = _AVAILABLE if posix else (lambda: False)
    try:
        began = _clock()
        result = _process.run_invocation_sync(INVOCATION)
        took = _since(began)
    finally:
        _posix_spawn.available = _AVAILABLE
    assert result.stdout == "hi\n", result
    return took


ROWS: dict[str, tuple[Callable[[], Sample], Callable[[], Sample]]] = {
    "launch": (partial(_launch, _posix, False), partial(_launch, _popen, False)),
    "launch + exit": (partial(_launch, _posix, True), partial(_launch, _popen, True)),
    "whole call": (partial(_whole, True), partial(_whole, False)),
}


def _block(function: Callable[[], Sample], number: int) -> Sample:
    """Mean wall and CPU microseconds per call over ``number`` calls."""
    samples = [function() for _ in range(number)]
    return (
        sum(wall for wall, _ in samples) / number * 1e6,
        sum(cpu for _, cpu in samples) / number * 1e6,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke test)")
    options = parser.parse_args()
    pairs, number = (6, 20) if options.quick else (60, 50)
    assert _posix_spawn.available(), "glibc's extensions are missing: only Popen runs here"
    for posix, popen in ROWS.values():  # warm both paths and the spawner thread
        _block(posix, 5)
        _block(popen, 5)
    print(f"/bin/echo hi from the spawner thread, us per call (median of {pairs} blocks each)")
    heads = ("posix_spawn", "Popen", "ratio", "CPU ps", "CPU Popen", "ratio")
    print(f"{'':16}" + "".join(f"{head:>12}" for head in heads))
    for name, (posix, popen) in ROWS.items():
        walls: dict[bool, list[float]] = {True: [], False: []}
        cpus: dict[bool, list[float]] = {True: [], False: []}
        wall_ratios, cpu_ratios = [], []
        for index in range(pairs):
            got = {}
            for is_posix in (True, False) if index % 2 == 0 else (False, True):
                got[is_posix] = _block(posix if is_posix else popen, number)
                walls[is_posix].append(got[is_posix][0])
                cpus[is_posix].append(got[is_posix][1])
            wall_ratios.append(got[True][0] / got[False][0])
            cpu_ratios.append(got[True][1] / got[False][1])
        figures = [statistics.median(walls[True]), statistics.median(walls[False])]
        figures += [statistics.median(wall_ratios), statistics.median(cpus[True])]
        figures += [statistics.median(cpus[False]), statistics.median(cpu_ratios)]
        cells = (
            f"{figure:12.3f}" if index in (2, 5) else f"{figure:12.1f}"
            for index, figure in enumerate(figures)
        )
        print(f"{name:16}" + "".join(cells), flush=True)


if __name__ == "__main__":
    main()
