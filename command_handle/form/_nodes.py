"""Compiled template nodes.

``compile_template`` turns a template into a tree of these objects once; each
``evaluate(ctx)`` call then walks the tree with no parsing. A node evaluates to
a value, :data:`UNDEFINED` or a :class:`Fragment`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .._json import NonJSONValueError, stringify
from ._context import EvalContext
from ._errors import EvaluationError, LimitError
from ._expressions import SingularExpression
from ._provenance import mark, mark_interpolated
from ._values import UNDEFINED, Fragment

__all__ = [
    "ArrayNode",
    "Constant",
    "DirectiveNode",
    "Node",
    "ObjectNode",
    "Operator",
    "StringTemplateNode",
    "copy_value",
    "materialize",
    "merge_into_array",
    "merge_into_object",
    "to_text",
]


class Node(Protocol):
    pointer: str

    def evaluate(self, ctx: EvalContext) -> object: ...


class Operator(Protocol):
    """A compiled Operator Directive: a function of the previous pipeline value."""

    pointer: str

    def apply(self, value: object, ctx: EvalContext) -> object: ...


def copy_value(value: object, depth: int = 256) -> object:
    """Copy JSON containers so callers cannot mutate a compiled template's constants."""
    if isinstance(value, dict):
        if depth <= 0:
            raise RecursionError("value nested too deeply")
        return {k: copy_value(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list):
        if depth <= 0:
            raise RecursionError("value nested too deeply")
        return [copy_value(v, depth - 1) for v in value]
    return value


class Constant:
    """A node whose output does not depend on the arguments."""

    __slots__ = ("is_container", "pointer", "value")

    def __init__(self, value: object, pointer: str) -> None:
        self.value = value
        self.pointer = pointer
        self.is_container = isinstance(value, dict | list)

    def evaluate(self, ctx: EvalContext) -> object:
        if self.is_container:
            return copy_value(self.value)
        return self.value


def merge_into_array(out: list[object], fragment: Fragment) -> None:
    """Section 2.3 rule 2: arrays contribute elements, objects their property values."""
    for node in fragment.nodes:
        if isinstance(node, list):
            out.extend(node)
        elif isinstance(node, dict):
            out.extend(v for v in node.values() if v is not UNDEFINED)


def merge_into_object(out: dict[str, object], fragment: Fragment) -> None:
    """Section 2.3 rule 3: arrays by stringified index, objects by key; Undefined removes."""
    for node in fragment.nodes:
        if isinstance(node, list):
            for index, item in enumerate(node):
                out[str(index)] = item
        elif isinstance(node, dict):
            for key, item in node.items():
                if item is UNDEFINED:
                    out.pop(key, None)
                else:
                    out[key] = item


def materialize(value: object) -> object:
    """A Fragment outside any container becomes a plain value (see Fragment.materialize)."""
    if type(value) is Fragment:
        return value.materialize()
    return value


class ArrayNode:
    __slots__ = ("items", "pointer")

    def __init__(self, items: Sequence[Node], pointer: str) -> None:
        self.items = tuple(items)
        self.pointer = pointer

    def evaluate(self, ctx: EvalContext) -> object:
        out: list[object] = []
        for item in self.items:
            value = item.evaluate(ctx)
            if value is UNDEFINED:
                continue
            if type(value) is Fragment:
                merge_into_array(out, value)
            else:
                out.append(value)
        return out


class ObjectNode:
    """A plain object. With ``keep_undefined`` (the top level of a ``$spread`` value)
    Undefined properties are kept as markers so the merge can remove them."""

    __slots__ = ("entries", "keep_undefined", "pointer")

    def __init__(
        self, entries: Sequence[tuple[str, Node]], pointer: str, keep_undefined: bool = False
    ) -> None:
        self.entries = tuple(entries)
        self.pointer = pointer
        self.keep_undefined = keep_undefined

    def evaluate(self, ctx: EvalContext) -> object:
        out: dict[str, object] = {}
        for key, node in self.entries:
            value = node.evaluate(ctx)
            if value is UNDEFINED:
                if self.keep_undefined:
                    out[key] = UNDEFINED
                else:
                    out.pop(key, None)
                continue
            if type(value) is Fragment:
                merge_into_object(out, value)
            else:
                out[key] = value
        return out


def to_text(value: object, ctx: EvalContext, pointer: str) -> str:
    """String conversion of sections 2.8 and 5.1: strings as they are, Undefined as "",
    everything else as JSON text."""
    if isinstance(value, str):
        return value
    if type(value) is int:
        return str(value)  # the common case, without the serialiser's dispatch
    if value is UNDEFINED:
        return ""
    try:
        return stringify(materialize(value), max_depth=ctx.limits.max_data_depth)
    except NonJSONValueError as exc:
        raise EvaluationError(f"cannot convert to text: {exc}", pointer) from None
    except RecursionError:
        raise LimitError("value nested too deeply to convert to text", pointer) from None


class StringTemplateNode:
    """A string with ``{{...}}`` expressions (section 2.8). ``parts`` alternates
    literal text and expressions."""

    __slots__ = ("parts", "pointer")

    def __init__(self, parts: Sequence[str | SingularExpression], pointer: str) -> None:
        self.parts = tuple(parts)
        self.pointer = pointer

    def evaluate(self, ctx: EvalContext) -> object:
        if ctx.mark_data:
            return self._evaluate_marked(ctx)
        chunks: list[str] = []
        args = ctx.args
        for part in self.parts:
            if type(part) is str:
                chunks.append(part)
            else:
                # The value is data: it is converted to text, never evaluated again.
                value = part.evaluate(args)  # type: ignore[union-attr]
                chunks.append(value if type(value) is str else to_text(value, ctx, self.pointer))
        text = "".join(chunks)
        ctx.count_output(len(text), self.pointer)
        return text

    def _evaluate_marked(self, ctx: EvalContext) -> object:
        chunks: list[tuple[str, bool]] = []
        for part in self.parts:
            if type(part) is str:
                chunks.append((part, False))
            else:
                value = part.evaluate(ctx.args)  # type: ignore[union-attr]
                chunks.append((to_text(value, ctx, self.pointer), True))
        text = mark_interpolated(chunks)
        ctx.count_output(len(text), self.pointer)
        return text


class DirectiveNode:
    """An object with directives: Domain result (or the plain object), then Operators."""

    __slots__ = ("domain", "operators", "pointer", "provenance")

    def __init__(
        self,
        domain: Node,
        operators: Sequence[Operator],
        pointer: str,
        provenance: bool = False,
    ) -> None:
        self.domain = domain
        self.operators = tuple(operators)
        self.pointer = pointer
        # True when an operator needs to know which strings came from the arguments.
        self.provenance = provenance

    def evaluate(self, ctx: EvalContext) -> object:
        ctx.evaluations += 1  # ctx.count_evaluation, inline: once per directive
        if ctx.evaluations > ctx.limits.max_evaluations:
            raise ctx.too_many_evaluations(self.pointer)
        if not self.operators and not self.provenance:  # a lone domain: its value
            return self.domain.evaluate(ctx)
        if self.provenance and not ctx.mark_data:
            ctx.mark_data = True
            try:
                value = self.domain.evaluate(ctx)
            finally:
                ctx.mark_data = False
        elif ctx.mark_data and self.operators and not self.provenance:
            # The operators' output is marked whole below, so marking their input
            # (a deep copy of a possibly huge value) would be wasted.
            ctx.mark_data = False
            try:
                value = self.domain.evaluate(ctx)
            finally:
                ctx.mark_data = True
        else:
            value = self.domain.evaluate(ctx)
        if not self.operators:
            return value
        if type(value) is Fragment:
            value = value.materialize()
        for operator in self.operators:
            value = operator.apply(value, ctx)
        if ctx.mark_data and not self.provenance and not isinstance(self.domain, Constant):
            # Operators (join, encodings...) blend their input; if any of it could
            # be data, the conservative answer is that all of it is.
            value = mark(value)
        return value
