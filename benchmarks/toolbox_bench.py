"""What the Toolbox costs: loading a folder of handles, and a call by name over
the executor call it wraps, measured in the same run.

Run: .venv/bin/python benchmarks/toolbox_bench.py [--quick]

Rows:

- load: ``Toolbox.load`` of a folder of 100 handles (copies of the fixture
  handles under distinct names), against reading and parsing the same files
  with ``json.loads`` (the floor any loader pays); ms per folder and per handle;
- describe: ``toolbox.describe("openai-strict")`` for the 100 tools;
- call (trio) and call_sync: ``Toolbox.call`` against ``Executor.call`` on the
  same handle and arguments (``/bin/echo``), with an approve hook and an
  events callback on the Toolbox side, as an agent would run it. Rounds are
  interleaved; figures are medians.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import trio
from _handles import ECHO

from command_handle import CommandHandle, Executor, Toolbox
from command_handle.toolbox import Tool

ROOT = Path(__file__).resolve().parent.parent
HANDLES = sorted((ROOT / "fixtures" / "handles").glob("*.json"))

ARGS = {"word": "hi"}


def make_folder(count: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="toolbox-bench-"))
    for index in range(count):
        source = json.loads(HANDLES[index % len(HANDLES)].read_text())
        source["name"] = f"{source['name']}-{index}"
        (folder / f"tool-{index:03}.json").write_text(json.dumps(source))
    return folder


def timed(function: Callable[[], object], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()
        samples.append((time.perf_counter() - start) * 1e3)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    rounds = 5 if quick else 15
    calls = 50 if quick else 200

    folder = make_folder(100)
    try:
        load, floor = [], []
        for _ in range(rounds):  # interleaved
            load += timed(lambda: Toolbox.load(folder), 1)
            floor += timed(
                lambda: [json.loads(p.read_bytes()) for p in sorted(folder.glob("*.json"))], 1
            )
        toolbox = Toolbox.load(folder)
        describe = timed(lambda: toolbox.describe("openai-strict"), rounds)
    finally:
        shutil.rmtree(folder)
    load_ms = statistics.median(load)
    print(f"load 100 handles: {load_ms:8.2f} ms ({load_ms / 100:.3f} ms per handle)")
    print(f"json.loads floor: {statistics.median(floor):8.2f} ms")
    print(f"describe openai-strict (100 tools): {statistics.median(describe):.2f} ms")

    handle = CommandHandle.load(ECHO)
    executor = Executor()
    events: list[object] = []
    toolbox = Toolbox(
        [Tool.from_handle(handle)],
        approve=lambda request: True,
        events=lambda event: events.append(event) if len(events) < 1000 else None,
    )

    async def executor_calls() -> None:
        for _ in range(calls):
            await executor.call(handle, ARGS)

    async def toolbox_calls() -> None:
        for _ in range(calls):
            result = await toolbox.call("echo", ARGS)
            assert result.content == "hi"

    ours_async, base_async, ours_sync, base_sync = [], [], [], []
    for _ in range(rounds):
        base_async += [t / calls for t in timed(lambda: trio.run(executor_calls), 1)]
        ours_async += [t / calls for t in timed(lambda: trio.run(toolbox_calls), 1)]
        base_sync += [
            t / calls
            for t in timed(lambda: [executor.call_sync(handle, ARGS) for _ in range(calls)], 1)
        ]
        ours_sync += [
            t / calls
            for t in timed(lambda: [toolbox.call_sync("echo", ARGS) for _ in range(calls)], 1)
        ]
    for label, ours, base in (
        ("call (trio)", ours_async, base_async),
        ("call_sync", ours_sync, base_sync),
    ):
        o, b = statistics.median(ours), statistics.median(base)
        print(
            f"{label:12} Toolbox {o:.3f} ms  Executor {b:.3f} ms  "
            f"overhead {(o - b) * 1000:.0f} us ({o / b:.2f}x)"
        )


if __name__ == "__main__":
    main()
