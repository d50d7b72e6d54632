"""``last`` (section 6.4): the last element of an array; Undefined for anything else."""

from __future__ import annotations

from .._values import UNDEFINED


def last(value: object) -> object:
    if isinstance(value, list) and value:
        return value[-1]
    return UNDEFINED
