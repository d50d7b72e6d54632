"""The args encoding (Command Handle draft section 4): structured JSON to argv tokens.

In templates: ``{"$encode": "args", "git": {"commit": {"-m": {"$": "message"}}}}``.
Directly: ``encode_args({"ls": ["-la", data(path)]}, charset="argv")``.
Importing this module registers the ``args`` encoding in the default registry.
"""

from __future__ import annotations

from ..form import DEFAULT_REGISTRY
from ..form.extend import mark
from . import directives as _directives  # noqa: F401  (registers $args, $flags, $repeat)
from ._charset import CHARSETS
from ._encoder import Encoder
from ._errors import ArgsError
from .encoding import ArgsEncoding

__all__ = ["CHARSETS", "ArgsEncoding", "ArgsError", "data", "encode_args"]


def data(value: object) -> object:
    """Mark ``value`` as coming from the arguments (untrusted), for ``encode_args``.

    Plain values given to :func:`encode_args` count as written in a template
    (trusted); marked ones are subject to the flag-injection guard and can never
    name a flag.
    """
    return mark(value)


def encode_args(value: object, *, charset: str = "spec") -> list[str]:
    """Encode an already evaluated value as argv tokens.

    Raises :class:`ArgsError` naming the offending token, its index, the
    character and its code point, and the path inside ``value``.
    """
    if charset not in CHARSETS:
        raise ValueError(f"charset must be one of {sorted(CHARSETS)}")
    encoder = Encoder(charset)
    return encoder.finish(encoder.value(value, None))


DEFAULT_REGISTRY.add_encoding(ArgsEncoding())
