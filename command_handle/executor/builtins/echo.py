"""``echo [-neE] [arg ...]`` with bash's rules (``xpg_echo`` off).

Options are recognised only while each argument is ``-`` followed solely by
``n``, ``e`` and ``E``. With ``-e``: ``\\a \\b \\c \\e \\E \\f \\n \\r \\t \\v \\\\``,
``\\0nnn`` (octal), ``\\xHH``, ``\\uHHHH`` and ``\\UHHHHHHHH``; ``\\c`` stops all output.
"""

from __future__ import annotations

import os
import re

from .._shell import BuiltinIO, ShellState

NAMES = ("echo",)

_OPTION = re.compile(r"-[neE]+")
_SIMPLE = {
    ord("a"): b"\a",
    ord("b"): b"\b",
    ord("e"): b"\x1b",
    ord("E"): b"\x1b",
    ord("f"): b"\f",
    ord("n"): b"\n",
    ord("r"): b"\r",
    ord("t"): b"\t",
    ord("v"): b"\v",
    ord("\\"): b"\\",
}
_HEX = b"0123456789abcdefABCDEF"


async def run(shell: ShellState, args: list[str], io: BuiltinIO) -> int:
    newline, escapes = True, False
    while args and _OPTION.fullmatch(args[0]):
        for flag in args.pop(0)[1:]:
            if flag == "n":
                newline = False
            else:
                escapes = flag == "e"
    out = bytearray()
    for index, arg in enumerate(args):
        if index:
            out += b" "
        data = os.fsencode(arg)
        if escapes:
            text, stop = _unescape(data)
            out += text
            if stop:
                await io.out(bytes(out))
                return 0
        else:
            out += data
    if newline:
        out += b"\n"
    await io.out(bytes(out))
    return 0


def _unescape(data: bytes) -> tuple[bytes, bool]:
    """Interpret backslash escapes; the flag is True when ``\\c`` ended the output."""
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        byte = data[i]
        if byte != 0x5C or i + 1 >= n:  # not a backslash, or a trailing one
            out.append(byte)
            i += 1
            continue
        kind = data[i + 1]
        i += 2
        if kind in _SIMPLE:
            out += _SIMPLE[kind]
        elif kind == ord("c"):
            return bytes(out), True
        elif kind == ord("0"):
            digits = _take(data, i, 3, b"01234567")
            out.append(int(digits or b"0", 8) & 0xFF)
            i += len(digits)
        elif kind == ord("x"):
            digits = _take(data, i, 2, _HEX)
            if digits:
                out.append(int(digits, 16))
                i += len(digits)
            else:
                out += b"\\x"
        elif kind in (ord("u"), ord("U")):
            digits = _take(data, i, 4 if kind == ord("u") else 8, _HEX)
            if digits:
                out += chr(min(int(digits, 16), 0x10FFFF)).encode("utf-8", "surrogatepass")
                i += len(digits)
            else:
                out += b"\\" + bytes([kind])
        else:
            out += b"\\" + bytes([kind])
    return bytes(out), False


def _take(data: bytes, start: int, limit: int, allowed: bytes) -> bytes:
    end = start
    while end < len(data) and end - start < limit and data[end] in allowed:
        end += 1
    return data[start:end]
