"""Text for a person's terminal or page, shown as written."""

from __future__ import annotations

import re

__all__ = ["printable"]

# What a terminal or a page would act on instead of showing: C0 and C1 controls
# (escape sequences, carriage returns) and the bidirectional overrides that
# reorder text (a summary may hold the model's words).
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with each character a person would not see as written shown
    as an escape (``\\x1b``, ``\\u202e``), so a summary says what it says."""
    return _HIDDEN.sub(lambda found: found.group().encode("unicode_escape").decode(), text)
