"""Credential values, and their redaction from text shown to anyone.

A Credential Object is the application's mapping of secrets (Tool Handle
4.3). Every string or number in it, except the ``scheme`` that names its
kind, is a secret. Values shorter than :data:`MIN_REDACTED` characters are
not redacted from program output, where they cannot be told from ordinary
text; they are still masked wherever the invocation is shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import AnyStr

__all__ = [
    "MIN_REDACTED",
    "REDACTED",
    "redact",
    "redact_bytes",
    "redact_cut",
    "redact_value",
    "secret_values",
]

MIN_REDACTED = 4
REDACTED = "[credential]"


def secret_values(credential: Mapping[str, object] | None) -> tuple[str, ...]:
    """The credential's secret strings, longest first (so that one inside another
    is redacted whole)."""
    if not credential:
        return ()
    found: set[str] = set()
    pending: list[object] = [v for k, v in credential.items() if k != "scheme"]
    while pending:
        value = pending.pop()
        if isinstance(value, Mapping):
            pending.extend(value.values())
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            text = str(value)
            if text:
                found.add(text)
    return tuple(sorted(found, key=len, reverse=True))


def redact(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if len(secret) >= MIN_REDACTED and secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_cut(
    text: str, secrets: tuple[str, ...], *, cut_before: bool = False, cut_after: bool = False
) -> str:
    """``text`` redacted, when it is a piece of longer output that was cut before
    anyone could redact it (the executor's ``max_output`` cap keeps a head and
    a tail, knowing no secrets). A secret that straddles such a cut shows in
    the piece only in part, so a start that is a secret's end (``cut_before``)
    or an end that is a secret's start (``cut_after``), of
    :data:`MIN_REDACTED` characters or more, is redacted too. Where we cut
    ourselves, redact the whole text first and cut after."""
    return _redact_piece(redact(text, secrets), secrets, REDACTED, cut_before, cut_after)


def redact_bytes(
    data: bytes, secrets: tuple[str, ...], *, cut_before: bool = False, cut_after: bool = False
) -> bytes:
    """``data`` (binary output) with each secret's UTF-8 bytes redacted, and the
    parts of one at a cut edge, as :func:`redact_cut` does for text: before
    anything encodes the bytes (base64) so that no text search can see them."""
    encoded = sorted(
        (secret.encode() for secret in secrets if len(secret) >= MIN_REDACTED),
        key=len,
        reverse=True,
    )
    marker = REDACTED.encode()
    for secret in encoded:
        if secret in data:
            data = data.replace(secret, marker)
    return _redact_piece(data, tuple(encoded), marker, cut_before, cut_after)


def _redact_piece(
    text: AnyStr,
    secrets: tuple[AnyStr, ...],
    marker: AnyStr,
    cut_before: bool,
    cut_after: bool,
) -> AnyStr:
    """The part of a secret that a cut left at either end of ``text``, redacted."""
    if not (cut_before or cut_after):
        return text
    for secret in secrets:
        if len(secret) <= MIN_REDACTED:
            continue
        for size in range(len(secret) - 1, MIN_REDACTED - 1, -1):
            if cut_before and text.startswith(secret[-size:]):
                text = marker + text[size:]
                break
        for size in range(len(secret) - 1, MIN_REDACTED - 1, -1):
            if cut_after and text.endswith(secret[:size]):
                text = text[:-size] + marker
                break
    return text


def redact_value(value: object, secrets: tuple[str, ...]) -> object:
    """``value`` (a JSON value) with every secret in its strings and keys redacted."""
    if not secrets:
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {redact(str(k), secrets): redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v, secrets) for v in value]
    return value
