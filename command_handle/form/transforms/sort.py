"""``sort`` (section 6.2): arrays by the total order, objects by property name."""

from __future__ import annotations

from .._order import sort_key
from .._values import UNDEFINED


def sort(value: object) -> object:
    if isinstance(value, list):
        return sorted(value, key=sort_key)  # stable, so equal elements keep their order
    if isinstance(value, dict):
        return {key: value[key] for key in sorted(value)}
    return UNDEFINED
