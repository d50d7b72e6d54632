"""``$args`` (section 4.3): tokens exactly as the value gives them, in order.

Tokens are checked by the character policy and the flag-injection guard like
any positional token; a literal ``"--"`` among them ends the options.
"""

from __future__ import annotations

from .._encoder import DIRECTIVES, Encoder, Path, Token


def encode_args_directive(encoder: Encoder, value: object, path: Path) -> list[Token]:
    return encoder.value(value, path)


DIRECTIVES["$args"] = encode_args_directive
