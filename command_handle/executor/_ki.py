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
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["held", "protect"]

F = TypeVar("F", bound=Callable[..., Any])

_HELD: list[Callable[..., Any]] = []
_marked = False


def held(function: F) -> F:
    """Protect ``function`` (and what it calls) from an immediate Ctrl-C under trio."""
    _HELD.append(function)
    return function


def protect() -> None:
    """Mark the held functions, once trio is loaded (no trio run exists before)."""
    global _marked
    if _marked or "trio" not in sys.modules:
        return
    import trio

    for function in _HELD:
        trio.lowlevel.enable_ki_protection(function)
    _marked = True
