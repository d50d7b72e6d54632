"""What the argv modes share: a value as one token, and the flag guard."""

from __future__ import annotations

from ... import _json
from ...errors import OptionArgumentError
from ...policy import option_prefix

__all__ = ["checked", "text_of"]


def text_of(value: object) -> str:
    """One argv token for a value: text as it is, ``true``/``false``, a
    number's JSON text, an array or object as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return _json.stringify(value)


def checked(name: str, text: str, allowed: frozenset[str]) -> str:
    """``text`` from the model's argument ``name``, refused when the script
    (or a program it hands the text to) would read it as an option; the
    parameters a tool lists in ``options_allowed`` pass."""
    prefix = "" if name in allowed else option_prefix(text)
    if prefix:
        raise OptionArgumentError(name, f"/{name}", prefix)
    return text
