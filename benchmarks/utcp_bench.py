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

The client table calls the same manual's tools through ``UtcpClient.call_tool``
(this project's, and ``utcp``'s own client with utcp-cli) and through
``utcp.call`` on the tool, all under asyncio: what the client adds (lookup,
variables, post-processing) over the call itself. Its tools have no ``$``:
``utcp``'s client substitutes ``$NAME`` in command text as a variable, so the
echo chain above fails there (``UtcpVariableNotFound``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import statistics
import tempfile
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


async def _rounds(
    call: Callable[[], Awaitable[object]], rounds: int, number: int, expect: str = "Previous: hello"
) -> float:
    """Median ms per call; runs under asyncio or trio alike."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            assert await call() == expect
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


CLIENT_TOOLS: dict[str, str] = {
    "echo (builtin)": "echo UTCP_ARG_message_UTCP_END",
    "/bin/echo": "/bin/echo UTCP_ARG_message_UTCP_END",
}


def _client_manual() -> dict[str, Any]:
    return {
        "manual_version": "1.0.0",
        "utcp_version": "1.0.2",
        "tools": [
            {
                "name": f"tool{index}",
                "description": label,
                "inputs": {"type": "object", "properties": {"message": {"type": "string"}}},
                "tool_call_template": {"call_template_type": "cli", "commands": [{"command": c}]},
            }
            for index, (label, c) in enumerate(CLIENT_TOOLS.items())
        ],
    }


async def _client_rows(directory: str, rounds: int, number: int) -> list[tuple[str, ...]]:
    config = {
        "manual_call_templates": [
            {
                "name": "bench",
                "call_template_type": "cli",
                "commands": [{"command": "cat manual.json"}],
                "working_dir": directory,
            }
        ]
    }
    ours = await utcp.UtcpClient.create(config=config)
    theirs: Any = None
    try:
        their_module = importlib.import_module("utcp.utcp_client")
        importlib.import_module("utcp_cli")  # registers the cli protocol
    except ImportError:
        their_module = None
    if their_module is not None:
        theirs = await their_module.UtcpClient.create(config=config)
    from command_handle import Executor

    executor = Executor()  # one, as the client keeps one
    rows = []
    for index, label in enumerate(CLIENT_TOOLS):
        name = f"bench.tool{index}"
        tool = utcp.load(_client_manual()).tool(f"tool{index}")  # type: ignore[union-attr]

        def client_call(n: str = name) -> Awaitable[object]:
            return ours.call_tool(n, ARGS)

        def direct_call(t: Any = tool) -> Awaitable[object]:
            return utcp.call(t, ARGS, executor=executor)

        calls = {"client": client_call, "direct": direct_call}
        if theirs is not None:

            def their_call(n: str = name) -> Awaitable[object]:
                coroutine: Awaitable[object] = theirs.call_tool(n, ARGS)
                return coroutine

            calls["theirs"] = their_call
        # Rounds alternate between the three, so the machine's noise falls on each.
        samples: dict[str, list[float]] = {key: [] for key in calls}
        for _ in range(rounds):
            for key, call in calls.items():
                samples[key].append(await _rounds(call, 1, number, "hello"))
        client_ms, direct_ms = (statistics.median(samples[k]) for k in ("client", "direct"))
        row = [label, f"{client_ms:.3f} ms", f"{direct_ms:.3f} ms", f"{client_ms / direct_ms:.2f}x"]
        if theirs is not None:
            their_ms = statistics.median(samples["theirs"])
            row += [f"{their_ms:.3f} ms", f"{their_ms / client_ms:.1f}x"]
        else:
            row += ["not installed (pip install -e '.[bench]')", ""]
        rows.append(tuple(row))
    return rows


def client_table(rounds: int, number: int) -> None:
    logging.disable(logging.CRITICAL)  # both clients log every call
    with tempfile.TemporaryDirectory() as directory:
        with open(f"{directory}/manual.json", "w", encoding="utf-8") as stream:
            json.dump(_client_manual(), stream)
        rows = asyncio.run(_client_rows(directory, rounds, number))
    print()
    print(
        "| tool | UtcpClient.call_tool (ours) | utcp.call | client / call "
        "| utcp's UtcpClient + utcp-cli | speed-up |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
    quick = "--quick" in __import__("sys").argv
    client_table(*((3, 20) if quick else (7, 100)))
