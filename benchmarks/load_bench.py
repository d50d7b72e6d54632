"""Loading a big tool folder, against ``json.load`` of the same files; and
``Executor.call`` with a dict handle, against the same handle loaded once.

Run: .venv/bin/python benchmarks/load_bench.py [--quick]

Rows:

- ``Toolbox.load`` of 1,000 handles: copies of the fixture handles under
  distinct names (13 distinct parameter schemas), against listing the folder
  and ``json.load`` of every file. Goal: within 10x. Each load starts with the
  meta-schema cache empty, as a fresh server does;
- the same folder with every handle's schema distinct (a description that
  holds the handle's number), so that no cache of checked schemas helps;
- the first folder loaded again in the same process (schemas known);
- ``Executor.call_sync`` of ``/bin/echo`` given the handle as a dict, against
  the handle loaded once (per call).

Rounds are interleaved, so that drift on a shared machine hits both sides of
a row alike; figures are medians, with the lowest and highest per-round ratio.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from _handles import ECHO

from command_handle import CommandHandle, Executor, Toolbox, _jsonschema

ROOT = Path(__file__).resolve().parent.parent
HANDLES = sorted((ROOT / "fixtures" / "handles").glob("*.json"))
GOAL = 10.0


def make_folder(count: int, distinct_schemas: bool) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="load-bench-"))
    for index in range(count):
        source = json.loads(HANDLES[index % len(HANDLES)].read_text())
        source["name"] = f"{source['name']}-{index}"
        if distinct_schemas:
            parameters = source.setdefault("parameters", {"type": "object"})
            parameters["description"] = f"tool {index}"
            for schema in parameters.get("properties", {}).values():
                if isinstance(schema, dict):
                    schema["description"] = f"{schema.get('description', '')} (tool {index})"
        (folder / f"tool-{index:04}.json").write_text(json.dumps(source, indent=2))
    return folder


def json_floor(folder: Path) -> object:
    documents = []
    for path in sorted(folder.glob("*.json")):
        with open(path, "rb") as file:
            documents.append(json.load(file))
    return documents


def cold_load(folder: Path) -> object:
    _jsonschema._checked.clear()  # a fresh process has checked no schema
    return Toolbox.load(folder)


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def row(name: str, ours: list[float], base: list[float], unit: str, scale: float) -> None:
    mine, theirs = statistics.median(ours), statistics.median(base)
    ratios = [o / b for o, b in zip(ours, base, strict=True)]
    print(
        f"{name:<44} {mine * scale:>9.3f} {theirs * scale:>9.3f} {unit:<3} "
        f"{mine / theirs:>7.2f}x  ({min(ratios):.2f}-{max(ratios):.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke test)")
    quick = parser.parse_args().quick
    rounds, count, calls = (3, 200, 20) if quick else (9, 1000, 200)
    copies = make_folder(count, distinct_schemas=False)
    distinct = make_folder(count, distinct_schemas=True)
    executor = Executor()
    loaded = CommandHandle.load(ECHO)
    args = {"word": "hi"}
    samples: dict[str, tuple[list[float], list[float]]] = {
        "copies": ([], []),
        "distinct": ([], []),
        "again": ([], []),
        "dict": ([], []),
    }
    try:
        cold_load(copies), cold_load(distinct), json_floor(copies)  # warm up
        for _ in range(rounds):
            loads: list[tuple[str, Path, Callable[[Path], object]]] = [
                ("copies", copies, cold_load),
                ("distinct", distinct, cold_load),
                ("again", copies, Toolbox.load),
            ]
            for key, folder, load in loads:
                samples[key][1].append(timed(partial(json_floor, folder)))
                samples[key][0].append(timed(partial(load, folder)))
            samples["dict"][1].append(
                timed(lambda: [executor.call_sync(loaded, args) for _ in range(calls)]) / calls
            )
            samples["dict"][0].append(
                timed(lambda: [executor.call_sync(ECHO, args) for _ in range(calls)]) / calls
            )
    finally:
        shutil.rmtree(copies)
        shutil.rmtree(distinct)
    print(f"{count} handles, {rounds} rounds; medians, ratio (lowest-highest per round)")
    print(f"{'row':<44} {'ours':>9} {'baseline':>9}")
    row(f"Toolbox.load, copies (goal {GOAL:g}x json.load)", *samples["copies"], "ms", 1e3)
    row("Toolbox.load, every schema distinct", *samples["distinct"], "ms", 1e3)
    row("Toolbox.load again, same process", *samples["again"], "ms", 1e3)
    row("call_sync(dict) vs a loaded handle", *samples["dict"], "ms", 1e3)


if __name__ == "__main__":
    main()
