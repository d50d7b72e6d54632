"""Fixtures shared by the test modules."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio

from command_handle import CommandResult, Executor

Run = Callable[..., CommandResult]
BACKENDS = ("sync", "trio", "asyncio")


@pytest.fixture(scope="session", autouse=True)
def first_launch_done() -> None:
    """One launch before any test: what the first launch opens for good (the
    /dev/null every launch shares) is then open before a test counts the
    descriptors it leaves open."""
    Executor().call_sync({"name": "true", "handle": "command", "command": "true"})


@pytest.fixture(params=BACKENDS)
def run(request: pytest.FixtureRequest) -> Run:
    """``run(executor, handle, args=None)``: the same call through ``call_sync`` in
    this thread, ``await call`` under trio, or ``await call`` under asyncio, so a
    behavioural test shows the same behaviour on every path."""
    backend: str = request.param

    def call(executor: Executor, handle: Any, args: object = None) -> CommandResult:
        if backend == "sync":
            return executor.call_sync(handle, args)
        if backend == "trio":
            return trio.run(executor.call, handle, args)
        return asyncio.run(executor.call(handle, args))

    return call


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    """A real Temporal dev server's address: ``.ci/run``'s (from
    COMMAND_HANDLE_TEMPORAL_ADDRESS), or one started for this session."""
    from tests.temporal_server import dev_server

    with dev_server() as address:
        yield address
