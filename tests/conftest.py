"""Fixtures shared by the test modules."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import trio

from command_handle import CommandResult, Executor

Run = Callable[..., CommandResult]
BACKENDS = ("sync", "trio", "asyncio")


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
