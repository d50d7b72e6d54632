"""``$transform`` (section 5.4): apply named Transforms in sequence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._context import EvalContext
from .._errors import EvaluationError, FormError, TemplateSyntaxError
from .._nodes import Constant, Node, Operator, materialize
from .._registry import Transform
from .._values import UNDEFINED
from ._operator import SimpleOperator

if TYPE_CHECKING:
    from .._compiler import Compiler


def literal_names(node: Node) -> list[str] | None:
    """The names of a literal string or array of strings, else None."""
    if isinstance(node, Constant):
        if isinstance(node.value, str):
            return [node.value]
        if isinstance(node.value, list) and all(isinstance(n, str) for n in node.value):
            return list(node.value)
    return None


def names_of(value: object, what: str, pointer: str) -> list[str] | None:
    """Names from a transformed directive value; None means "yield Undefined"."""
    value = materialize(value)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        if not all(isinstance(n, str) for n in value):
            raise EvaluationError(f"every {what} name must be a string", pointer)
        return list(value)
    return None


class TransformOperator:
    __slots__ = ("fixed", "names", "pointer", "table")

    def __init__(
        self,
        names: Node,
        fixed: list[Transform] | None,
        table: Mapping[str, Transform],
        pointer: str,
    ) -> None:
        self.names = names
        self.fixed = fixed
        self.table = table
        self.pointer = pointer

    def apply(self, value: object, ctx: EvalContext) -> object:
        transforms = self.fixed
        if transforms is None:
            names = names_of(self.names.evaluate(ctx), "transform", self.pointer)
            if names is None:
                return UNDEFINED
            transforms = []
            for name in names:
                if name not in self.table:
                    # The name may come from the arguments: list what exists, echo nothing.
                    raise EvaluationError(
                        "the computed transform name is unknown; known: "
                        + ", ".join(sorted(self.table)),
                        self.pointer,
                    )
                transforms.append(self.table[name])
        try:
            for transform in transforms:
                value = transform(value)
                if value is UNDEFINED:
                    return UNDEFINED
        except FormError as exc:  # a transform's error: locate it at this directive
            raise exc.at(self.pointer) from None
        return value


class TransformDirective(SimpleOperator):
    name = "$transform"

    def compile(self, compiler: Compiler, obj: Mapping[str, Any], pointer: str) -> Operator:
        where = _pointer.child(pointer, self.name)
        node = compiler.compile(obj[self.name], where)
        table = compiler.registry.transforms
        fixed: list[Transform] | None = None
        names = literal_names(node)
        if names is not None:
            for name in names:
                if name not in table:
                    raise TemplateSyntaxError(f"unknown transform {name!r}", where)
            fixed = [table[name] for name in names]
        elif isinstance(node, Constant):
            node = Constant(None, where)  # a literal that names nothing yields Undefined
        return TransformOperator(node, fixed, table, where)
