"""What ``$credential`` and ``$context`` share: a name, and a value the application gave."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...form import TemplateSyntaxError
from ...form.extend import EvalContext, Node, json_pointer

if TYPE_CHECKING:
    from ...form.extend import Compiler


def field_name(directive: str, obj: Mapping[str, Any], pointer: str, plain: list[str]) -> str:
    """The field the directive reads: a non-empty string, alone in its object."""
    if plain:
        raise TemplateSyntaxError(
            f"{directive} takes over its object; unexpected property {plain[0]!r} beside it",
            pointer,
        )
    value = obj[directive]
    if not isinstance(value, str) or not value:
        raise TemplateSyntaxError(
            f"the value of {directive} must be a field name (a non-empty string)",
            json_pointer.child(pointer, directive),
        )
    return value


class Refused:
    """A directive written where it is not allowed: a load error that says why."""

    category = "domain"
    properties: frozenset[str] = frozenset()

    def __init__(self, name: str, why: str) -> None:
        self.name = name
        self.why = why

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node:
        raise TemplateSyntaxError(f"{self.name} is not allowed here: {self.why}", pointer)


def application_value(ctx: EvalContext, kind: str) -> Mapping[str, object] | None:
    value = ctx.application.get(kind)
    return value if isinstance(value, Mapping) else None


class FieldNode:
    """A compiled ``{"$directive": FIELD}``: what it reads, and where it is."""

    __slots__ = ("field", "pointer")

    def __init__(self, field: str, pointer: str) -> None:
        self.field = field
        self.pointer = pointer

    def evaluate(self, ctx: EvalContext) -> object:  # pragma: no cover - overridden
        raise NotImplementedError


class FieldDirective:
    """A Domain Directive whose value is a field name; ``node`` evaluates it."""

    name: str
    node: type[FieldNode]
    category = "domain"
    properties: frozenset[str] = frozenset()

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node:
        return self.node(field_name(self.name, obj, pointer, plain), pointer)
