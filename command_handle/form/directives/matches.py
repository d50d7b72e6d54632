"""``$matches`` (section 5.3): true if the input validates against a JSON Schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._context import EvalContext
from .._nodes import Operator
from .._schema import SchemaCheck
from ._operator import SimpleOperator

if TYPE_CHECKING:
    from .._compiler import Compiler


class MatchesOperator:
    __slots__ = ("check", "pointer")

    def __init__(self, check: SchemaCheck, pointer: str) -> None:
        self.check = check
        self.pointer = pointer

    def apply(self, value: object, ctx: EvalContext) -> object:
        return self.check.matches(value, ctx)


class MatchesDirective(SimpleOperator):
    name = "$matches"

    def compile(self, compiler: Compiler, obj: Mapping[str, Any], pointer: str) -> Operator:
        where = _pointer.child(pointer, self.name)
        return MatchesOperator(compiler.schema(obj[self.name], where), where)
