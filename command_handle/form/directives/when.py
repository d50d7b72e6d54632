"""``$when`` (section 4.7): the rest of the object if the condition holds, else Undefined."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._context import EvalContext
from .._nodes import Node
from .._values import UNDEFINED
from ._common import Condition

if TYPE_CHECKING:
    from .._compiler import Compiler


class WhenNode:
    __slots__ = ("body", "condition", "pointer")

    def __init__(self, condition: Condition, body: Node, pointer: str) -> None:
        self.condition = condition
        self.body = body
        self.pointer = pointer

    def evaluate(self, ctx: EvalContext) -> object:
        if self.condition.test(ctx):
            return self.body.evaluate(ctx)
        return UNDEFINED


class WhenDirective:
    name = "$when"
    category = "domain"
    properties: frozenset[str] = frozenset()

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node:
        condition = Condition(compiler, obj[self.name], _pointer.child(pointer, self.name))
        return WhenNode(condition, compiler.plain_object(obj, plain, pointer), pointer)
