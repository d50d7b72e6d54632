"""The total order over JSON values (Tool Form section 2.1.1)."""

from __future__ import annotations

import functools
import math
from typing import Any

from ._errors import EvaluationError
from ._values import UNDEFINED

__all__ = ["compare", "sort_key"]

_RANK_UNDEFINED, _RANK_NULL, _RANK_BOOL, _RANK_NUMBER, _RANK_STRING, _RANK_ARRAY, _RANK_OBJECT = (
    range(7)
)


def _rank(value: object) -> int:
    if value is UNDEFINED:
        return _RANK_UNDEFINED
    if value is None:
        return _RANK_NULL
    if isinstance(value, bool):
        return _RANK_BOOL
    if isinstance(value, int | float):
        return _RANK_NUMBER
    if isinstance(value, str):
        return _RANK_STRING
    if isinstance(value, list):
        return _RANK_ARRAY
    if isinstance(value, dict):
        return _RANK_OBJECT
    # Only a Python caller can pass such a value; the transform that sorts locates the error.
    raise EvaluationError(f"a {type(value).__name__} value has no place in the total order")


def _cmp(a: Any, b: Any) -> int:
    return int(a > b) - int(a < b)


def _compare_numbers(a: float, b: float) -> int:
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)  # NaN equals NaN and follows every other number
    return _cmp(a, b)  # -0 == +0 holds for Python numbers


def compare(a: object, b: object, depth: int = 256) -> int:
    """Return -1, 0 or 1 as ``a`` precedes, equals or follows ``b``."""
    if depth <= 0:
        raise RecursionError("values nested too deeply to compare")
    rank_a, rank_b = _rank(a), _rank(b)
    if rank_a != rank_b:
        return -1 if rank_a < rank_b else 1
    if rank_a in (_RANK_UNDEFINED, _RANK_NULL):
        return 0
    if rank_a == _RANK_NUMBER:
        return _compare_numbers(a, b)  # type: ignore[arg-type]
    if rank_a in (_RANK_BOOL, _RANK_STRING):
        return _cmp(a, b)  # Python compares str by code point, False < True
    if rank_a == _RANK_ARRAY:
        assert isinstance(a, list) and isinstance(b, list)
        for x, y in zip(a, b, strict=False):
            result = compare(x, y, depth - 1)
            if result:
                return result
        return _cmp(len(a), len(b))
    assert isinstance(a, dict) and isinstance(b, dict)
    for key_a, key_b in zip(sorted(a), sorted(b), strict=False):
        if key_a != key_b:
            return -1 if key_a < key_b else 1
        result = compare(a[key_a], b[key_b], depth - 1)
        if result:
            return result
    return _cmp(len(a), len(b))


sort_key = functools.cmp_to_key(compare)
