"""``$`` (section 4.1): the value of a Singular Expression over the Template Arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._context import EvalContext
from .._expressions import MISSING, SingularExpression, walk
from .._nodes import Node
from .._provenance import DataStr, mark
from .._values import UNDEFINED
from ._common import refuse_plain, require_string

if TYPE_CHECKING:
    from .._compiler import Compiler


class DollarNode:
    __slots__ = ("expression", "pointer", "steps")

    def __init__(self, expression: SingularExpression, pointer: str) -> None:
        self.expression = expression
        self.pointer = pointer
        # Member names without pipes (``{"$": "word"}``), the commonest: walked
        # here, one function fewer per evaluation (see SingularExpression.evaluate).
        self.steps = expression.steps if not expression.transforms else None

    def evaluate(self, ctx: EvalContext) -> object:
        if self.steps is not None:
            value = walk(self.steps, ctx.args)
            if value is MISSING:
                return UNDEFINED
        else:
            value = self.expression.evaluate(ctx.args)
        if ctx.mark_data:
            return DataStr(value) if type(value) is str else mark(value)
        return value


class DollarDirective:
    name = "$"
    category = "domain"
    properties: frozenset[str] = frozenset()

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node:
        refuse_plain(self.name, plain, pointer)
        source = require_string(self.name, obj, pointer)
        return DollarNode(compiler.singular(source, _pointer.child(pointer, "$")), pointer)
