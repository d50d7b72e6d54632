"""A running program's output as plain text: terminal control sequences removed.

What a process writes reaches a model, and through an MCP host often a
person's terminal. Escape sequences are noise to the first and orders to the
second (a window title, the clipboard through OSC 52, a cleared screen), and
one in the middle of a credential (``SEC\\x1b[0mRET``) hides it from
redaction. So a process's output is shown without them, before it is
redacted: ECMA-48's CSI, OSC and other string sequences and two-character
escapes, C1 controls, and C0 controls other than tab, newline and carriage
return.

A read may end inside a sequence; :func:`plain` then returns that start as
``pending``, to be put before the next read's text, so that the sequence is
recognised whole. A start longer than :data:`MAX_PENDING` is dropped instead:
an unterminated string holds back nothing for long.
"""

from __future__ import annotations

import re

__all__ = ["MAX_PENDING", "plain"]

MAX_PENDING = 4096  # characters of an unfinished sequence held for the next read

_STRING = r"[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # OSC, DCS, SOS, PM, APC ... ST
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: parameters, intermediates, final byte
    rf"|\x1b{_STRING}"
    r"|\x1b[ -/]*[0-~]"  # two-character escapes (with intermediates: charsets)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"  # the remaining controls, one by one
)
_UNFINISHED = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|[\]PX^_][^\x07\x1b\x9c]*\x1b?|[ -/]*)?\Z")


def plain(text: str, *, more: bool, terminal: bool = False) -> tuple[str, str]:
    """``text`` without control sequences, and the unfinished sequence it ends
    with when ``more`` output may follow (else that is dropped too). A
    ``terminal``'s CR LF line ends are LF, and a CR it ends with is held back
    as well (its LF may follow)."""
    if terminal:
        text = text.replace("\r\n", "\n")
    pending = ""
    if more:
        unfinished = _UNFINISHED.search(text)
        if unfinished is not None and len(unfinished.group()) <= MAX_PENDING:
            pending = unfinished.group()
        elif terminal and text.endswith("\r"):
            pending = "\r"
        text = text[: len(text) - len(pending)]
    return _CONTROL.sub("", text), pending
