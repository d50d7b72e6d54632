"""``$if`` / ``$then`` / ``$else`` (section 4.6): choose a branch; an absent branch is Undefined."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._context import EvalContext
from .._nodes import Node
from .._values import UNDEFINED
from ._common import Condition, refuse_plain

if TYPE_CHECKING:
    from .._compiler import Compiler


class IfNode:
    __slots__ = ("condition", "otherwise", "pointer", "then")

    def __init__(
        self, condition: Condition, then: Node | None, otherwise: Node | None, pointer: str
    ) -> None:
        self.condition = condition
        self.then = then
        self.otherwise = otherwise
        self.pointer = pointer

    def evaluate(self, ctx: EvalContext) -> object:
        branch = self.then if self.condition.test(ctx) else self.otherwise
        if branch is None:
            return UNDEFINED
        return branch.evaluate(ctx)


class IfDirective:
    name = "$if"
    category = "domain"
    properties = frozenset({"$then", "$else"})

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node:
        refuse_plain(self.name, plain, pointer)
        condition = Condition(compiler, obj[self.name], _pointer.child(pointer, self.name))
        then = (
            compiler.compile(obj["$then"], _pointer.child(pointer, "$then"))
            if "$then" in obj
            else None
        )
        otherwise = (
            compiler.compile(obj["$else"], _pointer.child(pointer, "$else"))
            if "$else" in obj
            else None
        )
        return IfNode(condition, then, otherwise, pointer)
