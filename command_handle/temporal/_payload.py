"""A result within Temporal's payload limit, cut by the head-and-tail rule.

Temporal refuses a payload over its blob limit (2 MiB by default) and warns
past 512 KiB, and a history holds every payload for as long as it is kept:
a large output belongs in the worker's storage, not in the history. A result
over the limit keeps every string's head and tail around ``[... N bytes
omitted ...]``, cut to the longest length at which the whole fits, and its
text says that it was cut. Nothing fails for size.
"""

from __future__ import annotations

import json
from typing import Any

from ..toolbox import head_and_tail
from ._call import DEFAULT_MAX_PAYLOAD

__all__ = ["DEFAULT_MAX_PAYLOAD", "encoded_size", "fit_result"]

_SHORTEST = 256  # no string is cut shorter than this; past it, structured goes


def encoded_size(value: object) -> int:
    """Bytes of ``value`` as Temporal's JSON converter writes it (ASCII escapes)."""
    return len(json.dumps(value, separators=(",", ":"), sort_keys=True).encode())


def _cut(value: object, longest: int) -> object:
    if isinstance(value, str):
        return value if len(value) <= longest else head_and_tail(value, longest)
    if isinstance(value, list):
        return [_cut(item, longest) for item in value]
    if isinstance(value, dict):
        return {key: _cut(item, longest) for key, item in value.items()}
    return value


def _longest(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return max((_longest(item) for item in value), default=0)
    if isinstance(value, dict):
        return max((_longest(item) for item in value.values()), default=0)
    return 0


def fit_result(result: dict[str, Any], limit: int = DEFAULT_MAX_PAYLOAD) -> dict[str, Any]:
    """``result`` (``{"is_error", "content", "structured"}``) as it is, or cut to
    at most ``limit`` bytes of JSON with ``content`` saying so."""
    if encoded_size(result) <= limit:
        return result
    note = (
        f"\n\n(The result was cut to fit the workflow history's limit of {limit} bytes; "
        "the middle of long values is omitted.)"
    )
    room = limit - encoded_size(note)
    low, high = _SHORTEST, max(_longest(result), _SHORTEST)
    best: dict[str, Any] | None = None
    while low <= high:  # the longest string length at which the result fits
        middle = (low + high) // 2
        cut = _cut(result, middle)
        assert isinstance(cut, dict)
        if encoded_size(cut) <= room:
            best, low = cut, middle + 1
        else:
            high = middle - 1
    if best is None:  # too many values to fit even when cut: keep the text only
        text = str(result.get("content", ""))
        best = {**result, "content": text, "structured": None}
        longest = max(room // 8, _SHORTEST)  # ASCII escapes take up to 6 bytes a character
        while encoded_size(best) > room and longest > _SHORTEST:
            best["content"] = head_and_tail(text, longest)
            longest //= 2
        note += " Its structured value did not fit and is left out."
    best["content"] = f"{best.get('content', '')}{note}"
    return best
