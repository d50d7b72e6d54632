"""Character policies for argv tokens.

``spec`` is section 4.2 of the Command Handle draft: printable ASCII
0x21-0x7E except ``#``, ``'``, ``<``, ``>`` and ``\\``. (The draft's literal
ranges also leave out 0x61-0x7A, which would forbid every lowercase letter;
that is an erratum, docs/spec-notes.md.) ``argv`` allows anything but NUL:
tokens go to the program as separate argv entries and no shell ever reads
them, so quotes and spaces are harmless; NUL cannot be passed at all.

Neither makes a token safe for a program that passes it to a shell: ``spec``
admits ``;``, ``|``, ``$``, ``(`` and backticks (docs/args.md).
"""

from __future__ import annotations

import re

__all__ = ["CHARSETS", "first_forbidden"]

_FORBIDDEN = {
    "spec": re.compile(r"[^\x21-\x7e]|[#'<>\\]"),
    "argv": re.compile(r"\x00"),
}
CHARSETS = frozenset(_FORBIDDEN)


def first_forbidden(token: str, charset: str) -> int:
    """Index of the first character ``charset`` forbids in ``token``, or -1."""
    match = _FORBIDDEN[charset].search(token)
    return match.start() if match else -1
