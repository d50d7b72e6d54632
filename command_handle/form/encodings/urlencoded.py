"""The ``urlencoded`` encoding (section 7.3): application/x-www-form-urlencoded.

Nested members are named by their path joined with ``.`` (``user.roles.0``);
null and Undefined members are left out; spaces become ``+`` and every other
character outside ``A-Za-z0-9_.-~`` is percent-encoded as UTF-8.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus

from ... import _json
from .._context import EvalContext
from .._errors import EvaluationError, LimitError
from .._nodes import materialize
from .._registry import EncodeFunction
from .._values import UNDEFINED, EncodedStr, Headers

if TYPE_CHECKING:
    from .._compiler import Compiler

_HEADERS = Headers({"Content-Type": "application/x-www-form-urlencoded"})


def _scalar(value: object, pointer: str) -> str:
    try:
        text = _json.scalar_text(value)
    except _json.NonJSONValueError as exc:
        raise EvaluationError(f"urlencoded encoding: {exc}", pointer) from None
    if text is not None:
        return text
    if isinstance(value, bytes):
        raise EvaluationError("urlencoded encoding cannot encode a binary value", pointer)
    raise EvaluationError(f"urlencoded encoding cannot encode {type(value).__name__}", pointer)


def _pairs(prefix: str, value: object, out: list[str], pointer: str, depth: int) -> None:
    if value is None or value is UNDEFINED:
        return
    if depth <= 0:
        raise LimitError("urlencoded encoding: value nested too deeply", pointer)
    if isinstance(value, dict):
        for key, item in value.items():
            _pairs(f"{prefix}.{key}" if prefix else key, item, out, pointer, depth - 1)
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            _pairs(f"{prefix}.{index}" if prefix else str(index), item, out, pointer, depth - 1)
        return
    out.append(quote_plus(prefix, safe="~") + "=" + quote_plus(_scalar(value, pointer), safe="~"))


class UrlencodedEncoding:
    name = "urlencoded"
    media_type = "application/x-www-form-urlencoded"
    properties: frozenset[str] = frozenset()
    needs_provenance = False
    scope = None

    def compile(self, compiler: Compiler, obj: Mapping[str, Any], pointer: str) -> EncodeFunction:
        def encode(value: object, ctx: EvalContext) -> object:
            value = materialize(value)
            pairs: list[str] = []
            if isinstance(value, dict):
                _pairs("", value, pairs, pointer, ctx.limits.max_data_depth)
            text = "&".join(pairs)
            ctx.count_output(len(text), pointer)
            return EncodedStr(text, _HEADERS)

        return encode
