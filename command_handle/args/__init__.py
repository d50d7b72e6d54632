"""The args encoding (Command Handle draft section 4): structured JSON to argv tokens.

In templates: ``{"$encode": "args", "git": {"commit": {"-m": {"$": "message"}}}}``.
Directly: ``encode_args(written({"ls": ["-la", data(path)]}), charset="argv")``.
Importing this module registers the ``args`` encoding in the default registry.
"""

from __future__ import annotations

from ..errors import CommandHandleError
from ..form import DEFAULT_REGISTRY
from ..form.extend import DataDict, DataList, DataStr, is_data, mark
from . import directives as _directives  # noqa: F401  (registers $args, $flags, $repeat)
from ._charset import CHARSETS
from ._encoder import Encoder, option_like
from ._errors import ArgsError, OptionLikeError
from .encoding import ArgsEncoding

__all__ = [
    "CHARSETS",
    "ArgsEncoding",
    "ArgsError",
    "CharsetError",
    "OptionLikeError",
    "Written",
    "data",
    "encode_args",
    "option_like",
    "written",
]


class CharsetError(CommandHandleError, ValueError):
    """``encode_args`` was given a character policy that does not exist."""


class Written:
    """A value the application wrote itself: see :func:`written`."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


def written(value: object) -> Written:
    """Mark ``value`` as written by the application, as a template's literal text
    is: its keys may name flags and its strings may begin with ``-``. Inside it,
    :func:`data` marks the parts that are still untrusted."""
    return Written(value)


def data(value: object) -> object:
    """Mark ``value`` as coming from the model (untrusted). Everything given to
    :func:`encode_args` is data already unless wrapped in :func:`written`; this
    marks untrusted parts inside a written value."""
    return mark(value)


def _with_provenance(value: object, trusted: bool, depth: int) -> object:
    if isinstance(value, Written):
        return _with_provenance(value.value, True, depth)
    if is_data(value) or depth <= 0:  # too deep: the encoder refuses it
        return value
    if isinstance(value, dict):
        if trusted:
            return {k: _with_provenance(v, True, depth - 1) for k, v in value.items()}
        return DataDict(
            {DataStr(k): _with_provenance(v, False, depth - 1) for k, v in value.items()}
        )
    if isinstance(value, list):
        elements = [_with_provenance(v, trusted, depth - 1) for v in value]
        return elements if trusted else DataList(elements)
    return value if trusted else mark(value)


def encode_args(value: object, *, charset: str = "spec") -> list[str]:
    """Encode an already evaluated value as argv tokens.

    Safe by default: ``value`` is data, as if it came from the model, so no part
    of it can become an option. Wrap what the application wrote in
    :func:`written` (``written({"ls": ["-la", data(path)]})``).

    Raises :class:`ArgsError` naming the offending token, its index, the
    character and its code point, and the path inside ``value``.
    """
    if charset not in CHARSETS:
        raise CharsetError(f"charset must be one of {sorted(CHARSETS)}")
    encoder = Encoder(charset)
    return encoder.finish(encoder.value(_with_provenance(value, False, 256), None))


DEFAULT_REGISTRY.add_encoding(ArgsEncoding())
