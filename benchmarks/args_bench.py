"""Args encoding speed: microseconds per encode of the section 4.1 docker example.

Run: .venv/bin/python benchmarks/args_bench.py [--quick]

Three figures from one run: the example compiled once and evaluated through
``$encode: args`` (the goal is under 30 us), the same value through
``encode_args``, and a baseline: building the same argv with a hand-written
Python list (what a caller who trusts nothing to a template would write).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

from _timing import median_us

from command_handle.args import encode_args, written
from command_handle.form import compile_template

DOCKER = {
    "docker": {
        "run": {
            "-i": True,
            "-t": True,
            "-p": "8080",
            "--name=": "test-container",
            "--label=": ["app=myapp", "env=prod,debug"],
            "ubuntu": {"latest": None, "bash": None},
        }
    }
}
DYNAMIC = {
    "$encode": "args",
    "docker": {
        "run": {
            "-i": True,
            "-t": True,
            "-p": {"$": "port"},
            "--name=": {"$": "name"},
            "--label=": {"$": "labels"},
            "$args": [{"$": "image"}, {"$": "command"}],
        }
    },
}
DYNAMIC_ARGS = {
    "port": "8080",
    "name": "test-container",
    "labels": ["app=myapp", "env=prod,debug"],
    "image": "ubuntu:latest",
    "command": "bash",
}


def hand_written() -> list[str]:
    labels = ",".join(
        v.replace("\\", "\\\\").replace(",", "\\,") for v in ["app=myapp", "env=prod,debug"]
    )
    return [
        "docker",
        "run",
        "-it",
        "-p",
        "8080",
        "--name=test-container",
        "--label=" + labels,
        "ubuntu",
        "latest",
        "bash",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke test)")
    options = parser.parse_args()
    rounds, number = (3, 2000) if options.quick else (9, 20000)

    template = compile_template({"$encode": "args", **DOCKER})
    dynamic = compile_template(DYNAMIC)
    assert template.evaluate({}) == encode_args(written(DOCKER)) == hand_written()
    cases: list[tuple[str, Callable[[], object]]] = [
        ("section 4.1 docker via $encode", functools.partial(template.evaluate, {})),
        ("same, arguments from data", functools.partial(dynamic.evaluate, DYNAMIC_ARGS)),
        ("encode_args on the value", functools.partial(encode_args, written(DOCKER))),
        ("baseline: hand-written list", hand_written),
    ]
    results = {name: median_us(fn, rounds, number) for name, fn in cases}
    print(f"{'case':<34} {'median us':>10}")
    for name, us in results.items():
        print(f"{name:<34} {us:>10.2f}")
    ours = results["section 4.1 docker via $encode"]
    print(f"goal: under 30 us compiled: {ours:.2f} us ({'met' if ours < 30 else 'missed'})")


if __name__ == "__main__":
    main()
