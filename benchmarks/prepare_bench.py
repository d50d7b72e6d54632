"""What preparing a call costs: ``CommandHandle.prepare`` against the fair floor.

Run: .venv/bin/python benchmarks/prepare_bench.py [--quick] [--pin CPU]

``prepare`` is everything a call does before the executor takes over:
validation of the arguments, evaluation of the templates, the Policy's checks
(program lookup and file checks, directory, environment, flag guard, argv
size) and the Invocation. Three handles: ``/bin/echo WORD`` (the call
benchmarks' handle), fixtures/handles/search-text.json (the args encoding, a
bare command looked up in PATH, a directory from the arguments) and a grep
handle with several flags (a ``$if``, a ``files[*]`` spread, an interpolated
flag, an environment variable, ``options_allowed``).

Each is timed in blocks, each block right after a block of the fair floor
(``os.posix_spawn`` of ``/bin/echo`` with stdin from /dev/null, stdout and
stderr on pipes read to end-of-file, a new session; see floor_ladder.py), so
the ratio says what share of the cheapest complete call the preparation
adds; the figures are medians. The Python calls per prepare are counted with
cProfile, a figure that does not drift with the machine's load.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _floors import fair_floor
from _handles import ECHO

from command_handle import CommandHandle, Policy

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "handles"
FLAGS: dict[str, Any] = {
    "name": "grep-flags",
    "handler": "command",
    "command": "/bin/grep",
    "parameters": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string"},
            "files": {"type": "array", "items": {"type": "string"}},
            "count": {"type": "integer", "minimum": 0},
            "ignore_case": {"type": "boolean"},
        },
        "required": ["pattern", "files"],
    },
    "arguments": [
        "-n",
        "--color=never",
        {"$if": "ignore_case", "$then": "-i"},
        "--max-count={{count}}",
        "-e",
        {"$": "pattern"},
        "--",
        {"$spread": "files[*]"},
    ],
    "environment": {"LC_ALL": "C"},
    "options_allowed": ["pattern"],
}


def block_us(function: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        function()
    return (time.perf_counter() - start) / number * 1e6


def calls_per(function: Callable[[], object], number: int = 200) -> float:
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(number):
        function()
    profile.disable()
    return pstats.Stats(profile).total_calls / number  # type: ignore[attr-defined, no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--pin", type=int, metavar="CPU", help="run on this CPU only")
    options = parser.parse_args()
    if options.pin is not None:
        os.sched_setaffinity(0, {options.pin})
    rounds = 5 if options.quick else 15
    policy = Policy(allow_setuid=True)
    with tempfile.TemporaryDirectory() as directory:
        search = json.loads((FIXTURES / "search-text.json").read_text())
        cases: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
            ("echo", ECHO, {"word": "hi"}),
            (
                "search-text",
                search,
                {"pattern": "-x", "files": ["a", "b"], "ignore_case": True, "directory": directory},
            ),
            ("grep flags", FLAGS, {"pattern": "x", "files": ["a", "b"], "count": 3}),
        ]
        print(f"{'handle':12} {'prepare us':>10} {'floor us':>9} {'ratio':>7} {'calls':>6}")
        for name, document, args in cases:
            handle = CommandHandle.load(document)

            def prepare(handle: CommandHandle = handle, args: dict[str, Any] = args) -> None:
                handle.prepare(args, policy)

            block_us(prepare, 200)
            floors, prepares = [], []
            for _ in range(rounds):
                floors.append(block_us(fair_floor, 20))
                prepares.append(block_us(prepare, 500))
            ratios = [p / f for p, f in zip(prepares, floors, strict=True)]
            print(
                f"{name:12} {statistics.median(prepares):10.1f} {statistics.median(floors):9.0f}"
                f" {statistics.median(ratios):7.3f} {calls_per(prepare):6.0f}"
            )


if __name__ == "__main__":
    main()
