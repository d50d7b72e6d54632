"""``{"$context": NAME}``: a value the application gives the call (the workspace, the
user, the tenant), which the model can neither see nor set.

A name the application did not give evaluates to the Undefined Value, as a
missing argument does with ``$``, so a template can supply a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...form import UNDEFINED
from ...form.extend import EvalContext, Node
from ._application import application_value, field_name

if TYPE_CHECKING:
    from ...form.extend import Compiler

NAME = "$context"


class ContextNode:
    __slots__ = ("name", "pointer")

    def __init__(self, name: str, pointer: str) -> None:
        self.name = name
        self.pointer = pointer

    def evaluate(self, ctx: EvalContext) -> object:
        context = application_value(ctx, "context")
        if context is None:
            return UNDEFINED
        return context.get(self.name, UNDEFINED)


class ContextDirective:
    name = NAME
    category = "domain"
    properties: frozenset[str] = frozenset()

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node:
        return ContextNode(field_name(NAME, obj, pointer, plain), pointer)
