"""Per-call time of the UTCP documentation's two-step echo chain, through this
project's UTCP layer and through utcp-cli 1.1.5, in the same run.

Run: .venv/bin/pip install -e '.[bench]' && .venv/bin/python benchmarks/utcp_bench.py [--quick]

The chain (utcp-cli-protocol.md, "Testing CLI Tools")::

    echo UTCP_ARG_message_UTCP_END          (not appended)
    echo "Previous: $CMD_0_OUTPUT"

Both run it under asyncio, as utcp-cli's client does: ours through
``utcp.call`` under asyncio, and also under trio
under trio. utcp-cli starts ``/bin/bash`` for every call; this layer runs
the two ``echo`` builtins in-process, so a call spawns nothing. A third
line runs a chain that does spawn a program per step (``/bin/echo``), the
fairer comparison of process work. Figures are medians, in milliseconds
per call. The goal is at least 2x faster than utcp-cli.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from command_handle import utcp

CHAIN: dict[str, Any] = {
    "name": "test_cli",
    "call_template_type": "cli",
    "commands": [
        {"command": "echo UTCP_ARG_message_UTCP_END", "append_to_final_output": False},
        {"command": 'echo "Previous: $CMD_0_OUTPUT"'},
    ],
}
SPAWNING_CHAIN: dict[str, Any] = {
    **CHAIN,
    "commands": [
        {"command": "/bin/echo UTCP_ARG_message_UTCP_END", "append_to_final_output": False},
        {"command": '/bin/echo "Previous: $CMD_0_OUTPUT"'},
    ],
}
ARGS = {"message": "hello"}


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


async def _rounds(call: Callable[[], Awaitable[object]], rounds: int, number: int) -> float:
    """Median ms per call; runs under asyncio or trio alike."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            assert await call() == "Previous: hello"
        samples.append((time.perf_counter() - start) / number)
    return _median_ms(samples)


def _utcp_cli_call() -> Callable[[dict[str, Any]], Callable[[], Awaitable[object]]] | None:
    try:  # the 'bench' extra; imported by name so type checking does not need it
        templates = importlib.import_module("utcp_cli.cli_call_template")
        protocols = importlib.import_module("utcp_cli.cli_communication_protocol")
    except ImportError:
        return None
    logging.disable(logging.CRITICAL)  # utcp-cli logs every call at INFO
    protocol = protocols.CliCommunicationProtocol()

    def make(document: dict[str, Any]) -> Callable[[], Awaitable[object]]:
        template = templates.CliCallTemplateSerializer().validate_dict(document)

        def call() -> Awaitable[object]:
            coroutine: Awaitable[object] = protocol.call_tool(
                None, "test_cli.echo_chain", ARGS, template
            )
            return coroutine

        return call

    return make


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    rounds, number = (3, 20) if quick else (7, 100)

    rows: list[tuple[str, float, float | None]] = []
    make_utcp_cli = _utcp_cli_call()
    for label, document in (("echo chain (builtins)", CHAIN), ("/bin/echo chain", SPAWNING_CHAIN)):
        template = utcp.load(document)

        def via_asyncio(t: Any = template) -> Awaitable[object]:
            return utcp.call(t, ARGS)

        def via_trio(t: Any = template) -> Awaitable[object]:
            return utcp.call(t, ARGS)

        ours_asyncio = asyncio.run(_rounds(via_asyncio, rounds, number))
        ours_trio = trio.run(_rounds, via_trio, rounds, number)
        print(f"{label}: ours under trio {ours_trio:.3f} ms/call")
        theirs = None
        if make_utcp_cli is not None:
            theirs = asyncio.run(_rounds(make_utcp_cli(document), rounds, number))
        rows.append((label, ours_asyncio, theirs))

    print("| chain | ours (asyncio) | utcp-cli 1.1.5 | speed-up |")
    print("|---|---|---|---|")
    for label, ours, theirs in rows:
        if theirs is None:
            print(f"| {label} | {ours:.3f} ms | not installed (pip install -e '.[bench]') | |")
        else:
            print(f"| {label} | {ours:.3f} ms | {theirs:.3f} ms | {theirs / ours:.1f}x |")


if __name__ == "__main__":
    main()
