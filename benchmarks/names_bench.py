"""What checking the names a handle's templates read costs at load.

Run: .venv/bin/python benchmarks/names_bench.py [--quick]

Loads every fixture handle (``CommandHandle.from_dict``) with the check, and
with it replaced by a no-op in the same process, in interleaved rounds;
prints the median microseconds per handle of each and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from command_handle import CommandHandle
from command_handle.handle import _model

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [
    json.loads(path.read_text())
    for path in sorted((ROOT / "fixtures").glob("*/*.json"))
    if '"command"' in path.read_text() and "handle" in path.read_text()
]
DOCUMENTS = [d for d in DOCUMENTS if isinstance(d, dict) and "command" in d]


def load_all() -> float:
    started = time.perf_counter()
    for document in DOCUMENTS:
        CommandHandle.from_dict(document)
    return (time.perf_counter() - started) / len(DOCUMENTS) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    rounds = 10 if parser.parse_args().quick else 40
    checked: list[float] = []
    unchecked: list[float] = []
    original = _model.CommandHandle._check_names
    load_all()  # warm up
    for _ in range(rounds):
        checked.append(load_all())
        _model.CommandHandle._check_names = lambda self: None  # type: ignore[method-assign]
        unchecked.append(load_all())
        _model.CommandHandle._check_names = original  # type: ignore[method-assign]
    with_check, without = statistics.median(checked), statistics.median(unchecked)
    print(f"{len(DOCUMENTS)} handles; us per handle (median of {rounds} rounds)")
    print(f"  with the names check: {with_check:8.1f}")
    print(f"  without it:           {without:8.1f}")
    print(f"  ratio:                {with_check / without:8.3f}")


if __name__ == "__main__":
    main()
