"""``$match`` / ``$case`` (section 5.2): the first branch whose schema the input matches."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._context import EvalContext
from .._errors import TemplateSyntaxError
from .._nodes import Constant, Node, Operator, materialize
from .._schema import SchemaCheck
from .._values import UNDEFINED
from ._operator import SimpleOperator

if TYPE_CHECKING:
    from .._compiler import Compiler


class MatchOperator:
    __slots__ = ("branches", "pointer")

    def __init__(self, branches: list[tuple[SchemaCheck | None, Node]], pointer: str) -> None:
        self.branches = branches
        self.pointer = pointer

    def apply(self, value: object, ctx: EvalContext) -> object:
        for check, body in self.branches:
            if check is not None and not check.matches(value, ctx):
                continue
            result = materialize(body.evaluate(ctx))
            if result is not UNDEFINED:
                return result
        return UNDEFINED


class MatchDirective(SimpleOperator):
    name = "$match"

    def compile(self, compiler: Compiler, obj: Mapping[str, Any], pointer: str) -> Operator:
        where = _pointer.child(pointer, self.name)
        value = obj[self.name]
        if not isinstance(value, list):
            # Section 5.2 step 1: a non-array $match yields Undefined.
            return MatchOperator([(None, Constant(UNDEFINED, where))], where)
        branches: list[tuple[SchemaCheck | None, Node]] = []
        for index, branch in enumerate(value):
            at = _pointer.child(where, index)
            if isinstance(branch, dict) and "$case" in branch:
                check = compiler.schema(branch["$case"], _pointer.child(at, "$case"))
                if "$then" in branch:
                    extra = [k for k in branch if k not in ("$case", "$then")]
                    if extra:
                        raise TemplateSyntaxError(
                            f"a $match branch with $then has unexpected property {extra[0]!r}", at
                        )
                    body = compiler.compile(branch["$then"], _pointer.child(at, "$then"))
                else:
                    rest = {k: v for k, v in branch.items() if k != "$case"}
                    body = compiler.compile(rest, at)
                branches.append((check, body))
            else:
                branches.append((None, compiler.compile(branch, at)))
        return MatchOperator(branches, where)
