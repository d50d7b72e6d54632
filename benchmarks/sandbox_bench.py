"""What confinement costs per call: a sandboxed /bin/true against an unconfined one.

Run: .venv/bin/python benchmarks/sandbox_bench.py [--quick]

Both go through the same Executor path (validation, checks, spawner thread,
supervision); the sandboxed one launches from the profile's Landlock-restricted
spawner (and its seccomp filter, but with the network on in workspace-write)
and gets a fresh TMPDIR. Rounds are interleaved; medians in ms per
call. Goal: a sandboxed call within 1.5x of an unconfined one.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from command_handle import CommandHandle, Executor, Policy

TRUE = CommandHandle.load({"name": "true", "handle": "command", "command": "/bin/true"})


def per_call_ms(executor: Executor, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        assert executor.call_sync(TRUE).exit_code == 0
    return (time.perf_counter() - start) / number * 1e3


def main(quick: bool) -> None:
    rounds, number = (3, 50) if quick else (7, 300)
    workspace = tempfile.mkdtemp()
    executors = {
        "unconfined (no_new_privs only)": Executor(Policy()),
        "read-only, network off": Executor(Policy(sandbox="read-only")),
        "workspace-write, network off": Executor(
            Policy(sandbox="workspace-write", workspace=workspace)
        ),
        # the only profile without a seccomp filter: Landlock alone
        "workspace-write, network on": Executor(
            Policy(sandbox="workspace-write", workspace=workspace, network=True)
        ),
    }
    for executor in executors.values():
        per_call_ms(executor, 10)  # start the spawner threads, warm the caches
    samples: dict[str, list[float]] = {name: [] for name in executors}
    for _ in range(rounds):
        for name, executor in executors.items():
            samples[name].append(per_call_ms(executor, number))
    base = statistics.median(samples["unconfined (no_new_privs only)"])
    print(f"{'/bin/true, ms per call (median)':<34} {'ms':>7} {'ratio':>6}")
    for name, found in samples.items():
        median = statistics.median(found)
        print(f"{name:<34} {median:>7.3f} {median / base:>6.3f}")
    print("goal: sandboxed within 1.5x of unconfined")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke test)")
    main(parser.parse_args().quick)
