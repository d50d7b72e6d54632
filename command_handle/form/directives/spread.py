"""``$spread`` (section 4.5): a Fragment merged into the containing array or object.

A string is a Query Expression and every node it selects is merged; any other
value is transformed and merged as one node. Beside plain properties,
``$spread`` merges into the object they form, at its position in property
order (the ``config`` example of section 2.3); alone, it yields the Fragment
for the parent to merge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._context import EvalContext
from .._expressions import QueryExpression
from .._nodes import Node, ObjectNode
from .._provenance import mark
from .._values import UNDEFINED, Fragment

if TYPE_CHECKING:
    from .._compiler import Compiler


class QuerySpreadNode:
    __slots__ = ("pointer", "query")

    def __init__(self, query: QueryExpression, pointer: str) -> None:
        self.query = query
        self.pointer = pointer

    def evaluate(self, ctx: EvalContext) -> object:
        nodes = self.query.nodes(ctx.args)
        ctx.count_expansion(len(nodes), self.pointer)
        if ctx.mark_data:
            nodes = [mark(node) for node in nodes]
        return Fragment(nodes)


class ValueSpreadNode:
    __slots__ = ("pointer", "value")

    def __init__(self, value: Node, pointer: str) -> None:
        self.value = value
        self.pointer = pointer

    def evaluate(self, ctx: EvalContext) -> object:
        value = self.value.evaluate(ctx)
        if value is UNDEFINED:
            return UNDEFINED
        if type(value) is Fragment:
            return value  # a spread of a spread merges the inner nodes
        if isinstance(value, list | dict):
            ctx.count_expansion(len(value), self.pointer)
        return Fragment([value])


class SpreadDirective:
    name = "$spread"
    category = "domain"
    properties: frozenset[str] = frozenset()

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node:
        where = _pointer.child(pointer, self.name)
        value = obj[self.name]
        spread: Node
        if isinstance(value, str):
            spread = QuerySpreadNode(compiler.query(value, where), where)
        else:
            spread = ValueSpreadNode(compiler.compile(value, where, keep_undefined=True), where)
        if not plain:
            return spread
        entries: list[tuple[str, Node]] = []
        for key in obj:
            if key == self.name:
                entries.append((key, spread))  # the name is never used: Fragments merge
            elif key in plain:
                entries.append(compiler.entry(obj, key, pointer))
        return ObjectNode(entries, pointer)
