"""``$repeat`` (section 4.3): a flag repeated for each element of an array.

``{"-I": ["a", "b"]}`` gives ``-I a -I b``; ``{"--define=": ["X=1"]}`` gives
``--define=X=1``. An element yielding several tokens is joined into one
``name=`` token; an element yielding none is skipped.
"""

from __future__ import annotations

from ...form.extend import type_name
from .._encoder import DIRECTIVES, Encoder, Path, Token
from .flags import flag_name


def encode_repeat(encoder: Encoder, value: object, path: Path) -> list[Token]:
    if not isinstance(value, dict):
        raise encoder.error(f"$repeat takes an object of flags, not {type_name(value)}", path)
    tokens: list[Token] = []
    for key, items in value.items():
        where = (path, key)
        name = flag_name(encoder, key, where, bare=False)
        if not isinstance(items, list):
            raise encoder.error(
                f"$repeat values must be arrays; {key!r} has a {type_name(items)}", where
            )
        for index, item in enumerate(items):
            tokens.extend(encoder.flag(name, item, (where, index), 1))
    return tokens


DIRECTIVES["$repeat"] = encode_repeat
