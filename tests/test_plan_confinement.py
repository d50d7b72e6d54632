"""What a plan's interpreter does to files itself (the call's TMPDIR) never
blocks the event loop. Real processes."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import pytest
import trio

from command_handle import Executor, Policy, utcp

from .processes import PY, python_handle


def template(*commands: str) -> dict[str, Any]:
    return {"call_template_type": "cli", "commands": [{"command": c} for c in commands]}


async def _with_heartbeat(call: Callable[[], Awaitable[object]]) -> tuple[object, float, float]:
    """Run ``call`` while a task ticks every 10 ms: its result, how long it took,
    and the longest the ticking task waited between two ticks."""
    longest = 0.0
    finished = False

    async def heartbeat(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        nonlocal longest
        last = time.monotonic()
        task_status.started()
        while not finished:
            await anyio.sleep(0.01)
            now = time.monotonic()
            longest = max(longest, now - last)
            last = now

    async with anyio.create_task_group() as group:
        await group.start(heartbeat)  # ticking before the call begins
        started = time.monotonic()
        try:
            value = await call()
        finally:
            finished = True
        took = time.monotonic() - started
    return value, took, longest


# -- the call's TMPDIR is removed off the loop -----------------------------------------

FILL_TMPDIR = (
    "import os\n"
    'd = os.environ["TMPDIR"]\n'
    "for i in range(60000):\n"
    "    os.close(os.open(os.path.join(d, str(i)), os.O_CREAT | os.O_WRONLY, 0o600))\n"
    "print(d)\n"
)


@pytest.mark.parametrize(("kind", "loop"), [("plan", "trio"), ("handle", "asyncio")])
def test_removing_a_large_tmpdir_does_not_stall_the_loop(kind: str, loop: str) -> None:
    """A confined call whose child left 60,000 files in its TMPDIR: removing them
    takes over a second, and the loop keeps running meanwhile."""
    executor = Executor(Policy(sandbox="read-only", timeout=60))

    async def call() -> str:
        if kind == "plan":
            result = await utcp.run(
                template(f"{PY} -c {_quoted(FILL_TMPDIR)}"), {}, executor=executor
            )
            return result.output
        return str((await executor.call(python_handle(FILL_TMPDIR))).stdout).strip()

    async def scenario() -> tuple[object, float, float]:
        return await _with_heartbeat(call)

    if loop == "trio":
        tmpdir, _, longest = trio.run(scenario)
    else:
        tmpdir, _, longest = asyncio.run(scenario())
    assert isinstance(tmpdir, str) and tmpdir.startswith("/")
    assert not os.path.exists(tmpdir)
    assert longest < 0.3, longest


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
