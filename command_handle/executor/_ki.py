"""Ctrl-C under trio, held off while a call owns a slot or a child.

trio raises ``KeyboardInterrupt`` at whatever bytecode runs when SIGINT
arrives, unless that code is protected; then it delivers it at the main
task's next checkpoint. Raised between a launch's return and the start of its
supervision, it would leave the child running; between taking a slot and the
``try`` that frees it, the slot would be lost. The functions that hold a slot
or a child are therefore protected (:func:`held`), and a Ctrl-C reaches them
at a wait, where the call kills its child and frees what it holds.

trio (0.28 and later) protects by code object, so marking needs no wrapper
and no import of trio until a program uses it: :func:`protect` marks the
functions the first time a call runs once trio is loaded, before the call
takes anything.

The caller's own callbacks (``on_chunk``, ``on_started``) are run open to
Ctrl-C (:func:`open_chunk`, :func:`open_started`): a callback that computes for
long must still be interruptible, as it is outside a call; it runs only while
the child is supervised, where an exception from it kills the child.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

__all__ = ["held", "open_chunk", "open_started", "protect"]

F = TypeVar("F", bound=Callable[..., Any])

_HELD: list[Callable[..., Any]] = []
_OPEN: list[Callable[..., Any]] = []
_marked = False


def held(function: F) -> F:
    """Protect ``function`` (and what it calls) from an immediate Ctrl-C under trio."""
    _HELD.append(function)
    if _marked:  # a module imported after the first call (the plan interpreter)
        import trio

        trio.lowlevel.enable_ki_protection(function)
    return function


def _open(function: F) -> F:
    """Run ``function`` (and what it calls) open to Ctrl-C, even inside a held one."""
    _OPEN.append(function)
    if _marked:
        import trio

        trio.lowlevel.disable_ki_protection(function)
    return function


@_open
async def _chunk_open(
    callback: Callable[[str, bytes], Awaitable[None]], stream: str, data: bytes
) -> None:
    await callback(stream, data)


@_open
def _started_open(callback: Callable[[int, str], None], pid: int, program: str) -> None:
    callback(pid, program)


def open_chunk(
    callback: Callable[[str, bytes], Awaitable[None]] | None,
) -> Callable[[str, bytes], Awaitable[None]] | None:
    """The caller's ``on_chunk``, run open to Ctrl-C."""
    return None if callback is None else partial(_chunk_open, callback)


def open_started(
    callback: Callable[[int, str], None] | None,
) -> Callable[[int, str], None] | None:
    """The caller's ``on_started``, run open to Ctrl-C."""
    return None if callback is None else partial(_started_open, callback)


def protect() -> None:
    """Mark the held functions, once trio is loaded (no trio run exists before)."""
    global _marked
    if _marked or "trio" not in sys.modules:
        return
    import trio

    for function in _HELD:
        trio.lowlevel.enable_ki_protection(function)
    for function in _OPEN:
        trio.lowlevel.disable_ki_protection(function)
    _marked = True
