"""The flag guard: model text that a program would read as an option.

One predicate and one walk serve every front end: a handle's argv tokens, a
plan's words (before the run, from the placeholders, and during it, from
expanded values) and a 0.x provider's flag values. A word that the model's
data begins is refused when it starts with ``-``, ``+`` (vim's ``+cmd``) or
``@`` (gcc's ``@file``), unless a ``--`` written by the author came earlier;
the lone ``-`` (standard input) is an operand.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..args import option_like

__all__ = ["first_option_word", "option_prefix"]


# UTCP's text for a missing optional argument (utcp-cli's MISSING_ARG_<name>);
# published wrappers strip exactly that marker to drop a flag.
_MISSING_MARKER = re.compile(r"MISSING_ARG_\w*")
# The first characters of a word that can be read as an option: an option
# character, or the marker's "M". Any other word (and "") is an operand.
_MAY_BEGIN_OPTION = frozenset("-+@M")


def option_prefix(text: str) -> str:
    """The option character ``text`` begins with, or "" when a program reads it
    as an operand. A value that begins with UTCP's missing-argument marker is
    judged by what follows it (with the marker, as the prefix): a wrapper that
    strips the marker would pass ``MISSING_ARG_flag--upload-pack=x`` on as an
    option."""
    if text[:1] not in _MAY_BEGIN_OPTION:  # the usual word, answered without a match
        return ""
    marker = _MISSING_MARKER.match(text)
    if marker is not None:
        rest = text[marker.end() :]
        return text[: marker.end() + 1] if option_prefix(rest) else ""
    if text == "-" or option_like(text, flag_value=False) is None:
        return ""
    return text[0]


def first_option_word(words: Iterable[tuple[str, bool]]) -> tuple[int, str] | None:
    """The first word, as ``(index, prefix)``, that data begins (``(text, True)``)
    and that would be read as an option; words after a written ``--`` are
    operands. None when there is none."""
    after_end = False
    for index, (text, from_data) in enumerate(words):
        if not from_data:
            after_end = after_end or text == "--"
            continue
        if not after_end and text[:1] in _MAY_BEGIN_OPTION:  # else option_prefix says ""
            prefix = option_prefix(text)
            if prefix:
                return index, prefix
    return None
