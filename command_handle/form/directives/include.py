"""``$include`` (section 4.4): a JSON resource, inserted without further transformation.

The policy lives in ``_include``. A literal reference is loaded and checked at
compile time, so a missing file is a compile error; the loaded value is copied
on each use. A reference computed from the arguments is resolved per evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._context import EvalContext
from .._include import Includer
from .._nodes import Constant, Node, materialize
from .._values import UNDEFINED
from ._common import refuse_plain

if TYPE_CHECKING:
    from .._compiler import Compiler


class IncludeNode:
    __slots__ = ("includer", "pointer", "reference")

    def __init__(self, reference: Node, includer: Includer, pointer: str) -> None:
        self.reference = reference
        self.includer = includer
        self.pointer = pointer

    def evaluate(self, ctx: EvalContext) -> object:
        reference = materialize(self.reference.evaluate(ctx))
        if not isinstance(reference, str):
            return UNDEFINED
        return self.includer.load(reference, self.pointer, computed=True)


class IncludeDirective:
    name = "$include"
    category = "domain"
    properties: frozenset[str] = frozenset()

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node:
        refuse_plain(self.name, plain, pointer)
        reference = compiler.compile(obj[self.name], _pointer.child(pointer, self.name))
        if isinstance(reference, Constant):
            if not isinstance(reference.value, str):
                return Constant(UNDEFINED, pointer)
            return Constant(compiler.includer.load(reference.value, pointer), pointer)
        return IncludeNode(reference, compiler.includer, pointer)
