"""Whether text can cross into the operating system (argv, environment, paths)."""

from __future__ import annotations

import os

__all__ = ["os_text_problem"]


def os_text_problem(text: str) -> str | None:
    """Why ``text`` cannot be passed to a program, or None if it can.

    A NUL ends a C string, and a lone surrogate (which JSON's ``\\ud800``
    escapes can produce) has no byte form; the surrogates Python uses for
    undecodable bytes (U+DC80 to U+DCFF) are those bytes, as in ``os.fsencode``.
    """
    if "\x00" in text:
        return "contains a NUL character"
    try:
        os.fsencode(text)
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate (U+{ord(text[exc.start]):04X}), which has no byte form"
    return None
