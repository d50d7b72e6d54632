"""Bash tool plugins: a call against running the same script by hand, and
loading 50 plugins cold and from the schema cache.

Run: .venv/bin/python benchmarks/plugin_bench.py [--quick]

Rows:

- ``Toolbox.call_sync`` of the guide's echo tool (positional mode), against
  ``subprocess.run(["bash", path, "run", value, "false"])`` of the same file:
  what argument checks, the Policy, the clean environment and the result cost
  over a bare spawn;
- ``Toolbox.load`` of a folder of 50 bash tools with an empty schema cache
  (each ``bash FILE schema`` runs), against the same load with the cache warm
  (no process starts).

Rounds are interleaved, so that drift on a shared machine hits both sides of
a row alike; figures are medians, with the lowest and highest per-round ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from command_handle import Toolbox

ROOT = Path(__file__).resolve().parent.parent
ECHO = ROOT / "fixtures" / "plugins" / "template-bash-tool" / "template_bash_echo.bash"


def timed(function: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        function()
    return (time.perf_counter() - start) / number


def row(
    name: str, ours: Callable[[], object], floor: Callable[[], object], rounds: int, number: int
) -> None:
    pairs = []
    for _ in range(rounds):
        pairs.append((timed(ours, number), timed(floor, number)))
    ours_ms = statistics.median(a for a, _ in pairs) * 1e3
    floor_ms = statistics.median(b for _, b in pairs) * 1e3
    ratios = [a / b for a, b in pairs]
    print(
        f"{name:<44} {ours_ms:9.2f} ms {floor_ms:9.2f} ms  "
        f"ratio {ours_ms / floor_ms:5.2f} (per round {min(ratios):.2f}-{max(ratios):.2f})"
    )


def plugin_folder(count: int) -> Path:
    """``count`` copies of the echo tool under distinct ids (distinct contents)."""
    folder = Path(tempfile.mkdtemp(prefix="plugin-bench-"))
    text = ECHO.read_text()
    for index in range(count):
        name = f"echo_{index:03}"
        (folder / f"{name}.bash").write_text(text.replace("template_bash_echo", name))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    rounds = 3 if quick else 7
    cache = Path(tempfile.mkdtemp(prefix="plugin-bench-cache-"))
    os.environ["XDG_CACHE_HOME"] = str(cache)
    try:
        toolbox = Toolbox.load(ECHO, allow_bash_tools=True)
        args = {"value": "hello", "uppercase": False}
        assert toolbox.call_sync("template_bash_echo", args).content == "hello"
        row(
            "call: Toolbox.call_sync vs subprocess.run",
            lambda: toolbox.call_sync("template_bash_echo", args),
            lambda: subprocess.run(
                ["bash", str(ECHO), "run", "hello", "false"], capture_output=True, check=True
            ),
            rounds,
            10 if quick else 30,
        )
        folder = plugin_folder(50)

        def cold() -> object:
            shutil.rmtree(cache / "command-handle", ignore_errors=True)
            return Toolbox.load(folder, allow_bash_tools=True)

        def warm() -> object:
            return Toolbox.load(folder, allow_bash_tools=True)

        warm()
        row("load 50 plugins: cold vs schema cache", cold, warm, rounds, 1)
        shutil.rmtree(folder)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
