"""Provenance: which values came from the Template Arguments.

The args encoding must refuse a token that begins with ``-`` when its text
came from the arguments (CWE-88), yet trust the same text written in the
template. While an encoding that declares ``needs_provenance`` evaluates its
input, the evaluator marks argument-derived values with the ``Data*``
subclasses below; they compare, hash and serialise as the plain values. Outside
such subtrees nothing is marked, so ordinary evaluation pays one flag check.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "DataDict",
    "DataFloat",
    "DataInt",
    "DataList",
    "DataStr",
    "is_data",
    "mark",
    "mark_interpolated",
]


class DataStr(str):
    """A string that came from the Template Arguments."""

    __slots__ = ()


class DataInt(int):
    """An integer that came from the Template Arguments."""

    __slots__ = ()


class DataFloat(float):
    """A float that came from the Template Arguments."""

    __slots__ = ()


class DataDict(dict[str, object]):
    """An object that came from the Template Arguments: its keys are data, never flags."""

    __slots__ = ()


class DataList(list[object]):
    """An array that came from the Template Arguments."""

    __slots__ = ()


_DATA_TYPES = (DataStr, DataInt, DataFloat, DataDict, DataList)
_DATA_TYPE_SET = frozenset(_DATA_TYPES)


def is_data(value: object) -> bool:
    return type(value) in _DATA_TYPE_SET  # the Data* classes are final in practice


def mark(value: object, depth: int = 256) -> object:
    """Return ``value`` with every string, number, object and array marked as data."""
    if type(value) is str:  # the usual argument, without the checks below
        return DataStr(value)
    if isinstance(value, _DATA_TYPES):
        return value
    if isinstance(value, str):
        return DataStr(value)
    if isinstance(value, bool) or value is None:
        return value  # true/false/null never yield a token starting with "-"
    if isinstance(value, int):
        return DataInt(value)
    if isinstance(value, float):
        return DataFloat(value)
    if depth <= 0:
        raise RecursionError("value nested too deeply")
    if isinstance(value, dict):
        # Keys are marked too, so they stay data when merged into a template object.
        return DataDict({DataStr(k): mark(v, depth - 1) for k, v in value.items()})
    if isinstance(value, list):
        return DataList([mark(v, depth - 1) for v in value])
    return value


def mark_interpolated(chunks: Sequence[tuple[str, bool]]) -> str:
    """Join string-template chunks ``(text, from_data)``; the result is data when its
    first character came from an interpolated value."""
    text = "".join(chunk for chunk, _ in chunks)
    for chunk, from_data in chunks:
        if chunk:
            return DataStr(text) if from_data else text
    return text
