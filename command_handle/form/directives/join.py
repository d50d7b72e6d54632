"""``$join`` (section 5.1): the input's elements as text, joined by a separator.

Elements are values already produced by the pipeline; they are converted to
text but not transformed again, so argument data is never evaluated as a
template (docs/spec-notes.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._context import EvalContext
from .._nodes import Node, Operator, materialize, to_text
from .._values import UNDEFINED
from ._operator import SimpleOperator

if TYPE_CHECKING:
    from .._compiler import Compiler


class JoinOperator:
    __slots__ = ("pointer", "separator")

    def __init__(self, separator: Node, pointer: str) -> None:
        self.separator = separator
        self.pointer = pointer

    def apply(self, value: object, ctx: EvalContext) -> object:
        separator = materialize(self.separator.evaluate(ctx))
        sep = separator if isinstance(separator, str) else ""
        if value is UNDEFINED:
            return ""
        if isinstance(value, list):
            items = value
        elif isinstance(value, dict):
            items = list(value.values())
        else:
            items = [value]
        # Count each piece as it is made, so an oversized result is refused
        # before it is built.
        pieces = []
        for index, item in enumerate(items):
            piece = to_text(item, ctx, self.pointer)
            ctx.count_output(len(piece) + (len(sep) if index else 0), self.pointer)
            pieces.append(piece)
        return sep.join(pieces)


class JoinDirective(SimpleOperator):
    name = "$join"

    def compile(self, compiler: Compiler, obj: Mapping[str, Any], pointer: str) -> Operator:
        where = _pointer.child(pointer, self.name)
        return JoinOperator(compiler.compile(obj[self.name], where), where)
