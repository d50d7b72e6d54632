"""``$flags`` (section 4.3): a table of flags; combinable switches first.

Bare names are allowed (``a`` is ``-a``, ``message`` is ``--message``,
``author=`` is ``--author=``). Every single-character flag whose value is
``true`` goes into one token per prefix (``-abv``), emitted first; the other
flags follow in property order.
"""

from __future__ import annotations

from ...form.extend import is_data, type_name
from .._encoder import DIRECTIVES, Encoder, Path, Role, Token
from .._names import FLAG, is_combinable, normalize_flag_name


def flag_name(encoder: Encoder, name: str, path: Path, bare: bool) -> str:
    if is_data(name):
        raise encoder.error(
            "flag names must be written in the template, not taken from the arguments", path
        )
    normalized = normalize_flag_name(name) if bare else name
    if not FLAG.fullmatch(normalized):
        raise encoder.error(f"{name!r} is not a flag name (-x, --name or --name=)", path)
    return normalized


def encode_flags(encoder: Encoder, value: object, path: Path) -> list[Token]:
    if not isinstance(value, dict):
        raise encoder.error(f"$flags takes an object of flags, not {type_name(value)}", path)
    combined: dict[str, list[str]] = {}
    rest: list[Token] = []
    for key, item in value.items():
        where = (path, key)
        name = flag_name(encoder, key, where, bare=True)
        if item is True and is_combinable(name):
            combined.setdefault(name[0], []).append(name[1])
        else:
            rest.extend(encoder.flag(name, item, where, 1))
    first = [
        Token(prefix + "".join(chars), False, Role.NAME, None, path)
        for prefix, chars in combined.items()
    ]
    return first + rest


DIRECTIVES["$flags"] = encode_flags
