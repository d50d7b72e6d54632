"""``first`` (section 6.3): the first element of an array; Undefined for anything else."""

from __future__ import annotations

from .._values import UNDEFINED


def first(value: object) -> object:
    if isinstance(value, list) and value:
        return value[0]
    return UNDEFINED
