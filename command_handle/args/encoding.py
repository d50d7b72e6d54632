"""The Tool Form encoding ``args`` (Command Handle section 4, IANA 6.2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..form import TemplateSyntaxError
from ..form.extend import EncodeFunction, EvalContext, materialize
from ..form.extend import json_pointer as _pointer
from ._charset import CHARSETS
from ._encoder import Encoder
from ._scope import ArgsScope

if TYPE_CHECKING:
    from ..form.extend import Compiler

__all__ = ["ArgsEncoding"]


class ArgsEncoding:
    """``{"$encode": "args", ...}`` evaluates to a list of argv tokens.

    ``$charset`` chooses the character policy: ``"spec"`` (default) or ``"argv"``.
    The encoding asks the evaluator for provenance, so it can tell tokens
    written in the template from tokens taken from the arguments.
    """

    name = "args"
    media_type = "text/plain"
    properties = frozenset({"$charset"})
    needs_provenance = True
    scope = ArgsScope()

    def compile(self, compiler: Compiler, obj: Mapping[str, Any], pointer: str) -> EncodeFunction:
        charset = obj.get("$charset", "spec")
        if charset not in CHARSETS:
            raise TemplateSyntaxError(
                f"$charset must be one of {sorted(CHARSETS)}", _pointer.child(pointer, "$charset")
            )
        depth = compiler.limits.max_data_depth

        def encode(value: object, ctx: EvalContext) -> object:
            encoder = Encoder(charset, pointer, depth, ctx.option_values)
            return encoder.finish(encoder.value(materialize(value), None))

        return encode
