"""The ``json`` encoding (section 7.1): RFC 8259 text, compact or indented by ``$indent``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ... import _json
from .. import _pointer
from .._context import EvalContext
from .._errors import EvaluationError, LimitError
from .._nodes import Constant, materialize
from .._registry import EncodeFunction
from .._values import UNDEFINED, EncodedStr, Headers

if TYPE_CHECKING:
    from .._compiler import Compiler

_HEADERS = Headers({"Content-Type": "application/json"})


def _indent(value: object) -> int | None:
    """``true`` is 2 spaces, a positive integer that many; anything else is compact."""
    if value is True:
        return 2
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


class JsonEncoding:
    name = "json"
    media_type = "application/json"
    properties = frozenset({"$indent"})
    needs_provenance = False
    scope = None

    def compile(self, compiler: Compiler, obj: Mapping[str, Any], pointer: str) -> EncodeFunction:
        indent_node = (
            compiler.compile(obj["$indent"], _pointer.child(pointer, "$indent"))
            if "$indent" in obj
            else Constant(False, pointer)
        )
        fixed = _indent(indent_node.value) if isinstance(indent_node, Constant) else None
        dynamic = not isinstance(indent_node, Constant)

        def encode(value: object, ctx: EvalContext) -> object:
            value = materialize(value)
            if value is UNDEFINED:
                return UNDEFINED
            indent = _indent(materialize(indent_node.evaluate(ctx))) if dynamic else fixed
            try:
                text = _json.stringify(value, indent, ctx.limits.max_data_depth)
            except _json.NonJSONValueError as exc:
                raise EvaluationError(f"json encoding: {exc}", pointer) from None
            except RecursionError:
                raise LimitError("json encoding: value nested too deeply", pointer) from None
            ctx.count_output(len(text), pointer)
            return EncodedStr(text, _HEADERS)

        return encode
