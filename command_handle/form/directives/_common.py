"""Helpers shared by several directive modules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._context import EvalContext
from .._errors import TemplateSyntaxError
from .._nodes import Constant, Node
from .._values import is_truthy

if TYPE_CHECKING:
    from .._compiler import Compiler

__all__ = ["Condition", "refuse_plain", "require_string"]


def refuse_plain(name: str, plain: list[str], pointer: str) -> None:
    """Domain Directives without plain properties reject them rather than drop them."""
    if plain:
        raise TemplateSyntaxError(
            f"{name} takes over its object; unexpected property {plain[0]!r} beside it "
            "(move it to another object)",
            pointer,
        )


def require_string(name: str, obj: Mapping[str, Any], pointer: str) -> str:
    value = obj[name]
    if not isinstance(value, str):
        raise TemplateSyntaxError(
            f"the value of {name} must be a string", _pointer.child(pointer, name)
        )
    return value


class Condition:
    """The condition of ``$if``/``$when``: a string is a Logical Expression; any other
    value is transformed and tested for truthiness (sections 4.6-4.7)."""

    __slots__ = ("constant", "logical", "node")

    def __init__(self, compiler: Compiler, value: object, pointer: str) -> None:
        self.logical = compiler.logical(value, pointer) if isinstance(value, str) else None
        self.node: Node | None = None
        self.constant: bool | None = None
        if self.logical is None:
            node = compiler.compile(value, pointer)
            if isinstance(node, Constant):
                self.constant = is_truthy(node.value)
            else:
                self.node = node

    def test(self, ctx: EvalContext) -> bool:
        if self.logical is not None:
            return self.logical.evaluate(ctx.args)
        if self.node is not None:
            return is_truthy(self.node.evaluate(ctx))
        return bool(self.constant)
