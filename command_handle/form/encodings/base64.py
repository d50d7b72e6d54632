"""The ``base64`` encoding (section 7.2): RFC 4648 with padding, no line breaks.

Binary Values are encoded as they are, strings as UTF-8, and other JSON values
as their compact JSON text (the section 7.2 example encodes an object so).
``$content``, when present, is encoded instead of the pipeline value.
"""

from __future__ import annotations

import base64 as _base64
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ... import _json
from .. import _pointer
from .._context import EvalContext
from .._errors import EvaluationError, LimitError
from .._nodes import materialize
from .._registry import EncodeFunction
from .._values import UNDEFINED, EncodedStr, Headers

if TYPE_CHECKING:
    from .._compiler import Compiler

_HEADERS = Headers({"Content-Type": "application/base64"})


class Base64Encoding:
    name = "base64"
    media_type = "application/base64"
    properties = frozenset({"$content"})
    needs_provenance = False
    scope = None

    def compile(self, compiler: Compiler, obj: Mapping[str, Any], pointer: str) -> EncodeFunction:
        content = (
            compiler.compile(obj["$content"], _pointer.child(pointer, "$content"))
            if "$content" in obj
            else None
        )

        def encode(value: object, ctx: EvalContext) -> object:
            if content is not None:
                value = content.evaluate(ctx)
            value = materialize(value)
            if value is UNDEFINED:
                return UNDEFINED
            if isinstance(value, bytes):
                data = bytes(value)
            elif isinstance(value, str):
                data = value.encode("utf-8", "surrogatepass")
            else:
                try:
                    text = _json.stringify(value, None, ctx.limits.max_data_depth)
                    data = text.encode("utf-8", "surrogatepass")  # as for a string value
                except _json.NonJSONValueError as exc:
                    raise EvaluationError(f"base64 encoding: {exc}", pointer) from None
                except RecursionError:
                    raise LimitError("base64 encoding: value nested too deeply", pointer) from None
            text = _base64.b64encode(data).decode("ascii")
            ctx.count_output(len(text), pointer)
            return EncodedStr(text, _HEADERS)

        return encode
