"""Whether text can cross into the operating system (argv, environment, paths)."""

from __future__ import annotations

import os

__all__ = ["MAX_ARGUMENT_BYTES", "exec_size_problem", "os_text_problem"]


def os_text_problem(text: str) -> str | None:
    """Why ``text`` cannot be passed to a program, or None if it can.

    A NUL ends a C string, and a lone surrogate (which JSON's ``\\ud800``
    escapes can produce) has no byte form; the surrogates Python uses for
    undecodable bytes (U+DC80 to U+DCFF) are those bytes, as in ``os.fsencode``.
    """
    if "\x00" in text:
        return "contains a NUL character"
    if text.isascii():  # no surrogate: nothing to encode
        return None
    try:
        os.fsencode(text)
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate (U+{ord(text[exc.start]):04X}), which has no byte form"
    return None


# Linux refuses one argv or environment string longer than this (MAX_ARG_STRLEN).
MAX_ARGUMENT_BYTES = 32 * 4096


def exec_size_problem(argv: list[str], env: dict[str, str]) -> tuple[str, int | None] | None:
    """Why execve would refuse this argv and environment as too large (E2BIG), or None.

    Returns the problem and the index of the argument at fault (None when the
    whole is too large). Checked before launch so the refusal says what to fix.
    """
    # A character takes at most 4 bytes (os.fsencode's surrogates take 1), and Linux
    # always allows at least MAX_ARGUMENT_BYTES in all: small text needs no measuring.
    characters = sum(map(len, argv))
    if env:  # each NAME=value
        characters += sum(map(len, env)) + sum(map(len, env.values())) + len(env)
    if 4 * characters + len(argv) + len(env) <= MAX_ARGUMENT_BYTES:
        return None
    sizes = [len(os.fsencode(token)) + 1 for token in argv]
    for index, size in enumerate(sizes):
        if size > MAX_ARGUMENT_BYTES:
            return (
                f"is {size - 1} bytes; one argument may have at most {MAX_ARGUMENT_BYTES - 1}",
                index,
            )
    entries = {name: len(os.fsencode(f"{name}={value}")) + 1 for name, value in env.items()}
    for name, size in entries.items():
        if size > MAX_ARGUMENT_BYTES:  # the same limit holds for each NAME=value
            return (
                f"and the environment: the variable {name} is {size - 1} bytes; "
                f"one variable may have at most {MAX_ARGUMENT_BYTES - 1}",
                None,
            )
    total = sum(sizes) + sum(entries.values())
    limit = os.sysconf("SC_ARG_MAX")
    if total > limit:
        return f"and the environment take {total} bytes; the system allows {limit}", None
    return None
