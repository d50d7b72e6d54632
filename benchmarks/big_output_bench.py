"""A big output kept whole: time and peak memory against ``subprocess.run``.

Run: .venv/bin/python benchmarks/big_output_bench.py [--quick] [--mb N]

``/bin/cat`` of an N MB text file (100 by default), with ``Policy(max_output)``
large enough to keep all of it, through each way of calling:

- ``subprocess.run(capture_output=True)``, the baseline (bytes, no decoding);
- ``subprocess.run(capture_output=True, text=True)``, for reference;
- ``Executor.call_sync``; ``await Executor.call`` under ``trio.run``;
  ``asyncio.run(executor.call(handle))``, which returns the result from the
  main task (CPython formats that result's repr);
- streaming the same output: ``Executor.stream`` under trio, and
  ``run_sync(prepared, on_chunk)``; the consumer drops the chunks.

Each case runs in a fresh interpreter that imports the same modules (so the
peak RSS differs only by what the call itself holds), warms the path up with a
small call, then times one big call and reports ``ru_maxrss``. Cases are
interleaved over rounds; figures are medians, the ratio is against the
baseline's median, and the spread is the lowest and highest per-round ratio.
Goal: every case within 1.15x the baseline in time and in peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

CASES = [
    "subprocess.run",
    "subprocess.run text",
    "call_sync",
    "trio call",
    "asyncio.run(call)",
    "trio stream",
    "run_sync on_chunk",
]
BASELINE = "subprocess.run"
GOAL = 1.15


def _handle() -> dict[str, Any]:
    return {
        "name": "cat",
        "handler": "command",
        "command": "/bin/cat",
        "parameters": {
            "type": "object",
            "properties": {"file": {"type": "string"}},
            "required": ["file"],
        },
        "arguments": [{"$": "file"}],
    }


def run_case(case: str, path: str, size: int) -> dict[str, float]:
    """One case in this (fresh) interpreter: seconds for the big call, peak RSS."""
    import asyncio

    import trio

    from command_handle import CommandHandle, Executor, Policy

    executor = Executor(Policy(max_output=size + 1024, timeout=600))
    handle = CommandHandle.load(_handle())

    def once(file: str) -> int:
        if case == "subprocess.run":
            return len(subprocess.run(["/bin/cat", file], capture_output=True).stdout)
        if case == "subprocess.run text":
            return len(subprocess.run(["/bin/cat", file], capture_output=True, text=True).stdout)
        if case == "call_sync":
            return len(executor.call_sync(handle, {"file": file}).stdout or "")
        if case == "trio call":

            async def trio_call() -> int:
                return len((await executor.call(handle, {"file": file})).stdout or "")

            return trio.run(trio_call)
        if case == "asyncio.run(call)":
            # The result itself is what asyncio.run returns: the case the repr hurt.
            return len(asyncio.run(executor.call(handle, {"file": file})).stdout or "")
        if case == "trio stream":

            async def trio_stream() -> int:
                seen = 0
                async with executor.stream(handle, {"file": file}) as events:
                    async for event in events:
                        seen += len(event.data)
                return seen

            return trio.run(trio_stream)
        if case == "run_sync on_chunk":
            seen = [0]

            def on_chunk(stream: str, data: bytes) -> None:
                seen[0] += len(data)

            executor.run_sync(handle.prepare({"file": file}, executor.policy), on_chunk)
            return seen[0]
        raise SystemExit(f"unknown case {case!r}")

    small = path + ".small"
    once(small)  # warm up the path: imports, the spawner thread, caches
    start = time.perf_counter()
    got = once(path)
    seconds = time.perf_counter() - start
    assert got == size, (case, got, size)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": seconds, "peak_mib": peak_kib / 1024}


def make_file(directory: str, size: int) -> str:
    path = os.path.join(directory, "output.txt")
    line = b"".join(b"%05d the quick brown fox jumps over the lazy dog\n" % i for i in range(100))
    with open(path, "wb") as out:
        written = 0
        while written + len(line) <= size:
            out.write(line)
            written += len(line)
        out.write(b"x" * (size - written))
    with open(path + ".small", "wb") as out:
        out.write(b"small\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, 20 MB (smoke test)")
    parser.add_argument("--mb", type=int, default=None, help="output size in MB (default 100)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--case", help=argparse.SUPPRESS)  # internal: one case, in a child
    parser.add_argument("--path", help=argparse.SUPPRESS)
    options = parser.parse_args()
    size = (options.mb or (20 if options.quick else 100)) * 1000 * 1000
    if options.case:
        print(json.dumps(run_case(options.case, options.path, size)))
        return
    rounds = options.rounds or (2 if options.quick else 7)
    samples: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
    with tempfile.TemporaryDirectory(prefix="big-output-") as directory:
        path = make_file(directory, size)
        for _ in range(rounds):
            for case in CASES:  # interleaved: drift on a shared machine hits all alike
                child = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--case",
                        case,
                        "--path",
                        path,
                        "--mb",
                        str(size // 10**6),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                samples[case].append(json.loads(child.stdout))
    print(f"{size / 1e6:.0f} MB kept whole; {rounds} rounds; time s and peak RSS MiB (medians)")
    columns = f"{'x base':>7} {'spread':>13}"
    print(f"{'case':<22} {'time':>7} {columns}  {'peak':>7} {columns}")
    base = samples[BASELINE]
    for case in CASES:
        row = samples[case]
        cells = []
        for key in ("seconds", "peak_mib"):
            values = [sample[key] for sample in row]
            ratios = [
                sample[key] / reference[key] for sample, reference in zip(row, base, strict=True)
            ]
            median = statistics.median(values)
            ratio = median / statistics.median(sample[key] for sample in base)
            cells.append(f"{median:>7.3f} {ratio:>7.2f} {min(ratios):>6.2f}-{max(ratios):<6.2f}")
        print(f"{case:<22} {'  '.join(cells)}")
    print(f"goal: within {GOAL}x {BASELINE} in time and peak memory")


if __name__ == "__main__":
    main()
