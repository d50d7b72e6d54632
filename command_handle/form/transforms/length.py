"""``length`` (section 6.1): code points of a string, elements of an array, members of an object."""

from __future__ import annotations

from .._values import UNDEFINED


def length(value: object) -> object:
    if isinstance(value, str | list | dict):
        return len(value)  # Python strings are sequences of code points
    return UNDEFINED
