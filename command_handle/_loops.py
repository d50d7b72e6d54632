"""Running an async function to completion from sync code.

A sync call (``run_sync`` of a plan, ``Toolbox.call_sync`` with an async hook)
needs an event loop for its async parts. ``anyio.run`` refuses to start one in
a thread that already runs a loop (sync code called from a coroutine, or from
a trio task), so there the function runs on a fresh loop in a helper thread.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import sniffio

__all__ = ["run_to_completion"]

T = TypeVar("T")


def run_to_completion(function: Callable[[], Awaitable[T]]) -> T:
    """``function()`` awaited on a fresh event loop: in this thread, or in a helper
    thread when this one already runs an event loop (asyncio or trio)."""
    try:
        sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return anyio.run(function)
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(anyio.run(function))
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    helper = threading.Thread(target=run, name="command-handle-sync-call")
    helper.start()
    helper.join()
    if failure:
        raise failure[0]
    return outcome[0]
