"""``$each`` / ``$as`` / ``$key`` / ``$value`` (section 4.8): iteration.

A string is a Query Expression and the Node List is iterated as it is (so
``"$.items"`` iterates once, over the array; write ``"$.items[*]"`` for its
elements; docs/spec-notes.md). Each value is bound under the ``$as`` name at
the top of the Template Arguments for the per-item template: ``$value`` if
present, otherwise the object's plain properties. Operators beside ``$each``
apply to the whole result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ... import _json
from .. import _pointer
from .._context import EvalContext
from .._errors import EvaluationError, TemplateSyntaxError
from .._expressions import QueryExpression
from .._nodes import Constant, Node, materialize
from .._provenance import DataDict, DataStr, is_data, mark
from .._values import UNDEFINED, Fragment, type_name

if TYPE_CHECKING:
    from .._compiler import Compiler


def _sequence(value: object) -> list[object]:
    value = materialize(value)
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return list(value.values())
    return []


class EachNode:
    __slots__ = ("body", "key", "name", "pointer", "query", "source")

    def __init__(
        self,
        query: QueryExpression | None,
        source: Node | None,
        name: str,
        key: Node | None,
        body: Node,
        pointer: str,
    ) -> None:
        self.query = query
        self.source = source
        self.name = name
        self.key = key
        self.body = body
        self.pointer = pointer

    def evaluate(self, ctx: EvalContext) -> object:
        if self.query is not None:
            items = self.query.nodes(ctx.args)
            if ctx.mark_data:
                items = [mark(item) for item in items]
        else:
            assert self.source is not None
            items = _sequence(self.source.evaluate(ctx))
        ctx.count_expansion(len(items), self.pointer)
        outer = ctx.args
        base = outer if isinstance(outer, dict) else {}
        results: list[object] = []
        mapping: dict[str, object] = {}
        keys_from_data = False
        try:
            for item in items:
                bound = dict(base)  # one shallow copy per item; the arguments stay untouched
                bound[self.name] = item
                ctx.args = bound
                value = self.body.evaluate(ctx)
                if type(value) is Fragment:
                    value = value.materialize()
                if self.key is None:
                    if value is not UNDEFINED:
                        results.append(value)
                    continue
                key = materialize(self.key.evaluate(ctx))
                if key is UNDEFINED or value is UNDEFINED:
                    continue
                keys_from_data = keys_from_data or is_data(key)
                mapping[self._key_text(key)] = value
        finally:
            ctx.args = outer
        if self.key is None:
            return results
        if ctx.mark_data and keys_from_data:
            return DataDict(mapping)
        return mapping

    def _key_text(self, key: object) -> str:
        if isinstance(key, str):
            return key
        if isinstance(key, int | float) and not isinstance(key, bool):
            text = _json.format_number(key)
            return DataStr(text) if is_data(key) else text
        raise EvaluationError(
            f"$key must evaluate to a string or a number, got {type_name(key)}",
            _pointer.child(self.pointer, "$key"),
        )


class EachDirective:
    name = "$each"
    category = "domain"
    properties = frozenset({"$as", "$key", "$value"})

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node:
        where = _pointer.child(pointer, self.name)
        if "$as" not in obj:
            raise TemplateSyntaxError("$each needs $as, the name to bind each value to", pointer)
        name = obj["$as"]
        if not isinstance(name, str) or not name:
            raise TemplateSyntaxError(
                "$as must be a non-empty string", _pointer.child(pointer, "$as")
            )
        value = obj[self.name]
        query = compiler.query(value, where) if isinstance(value, str) else None
        source = None if query is not None else compiler.compile(value, where)
        key = (
            compiler.compile(obj["$key"], _pointer.child(pointer, "$key"))
            if "$key" in obj
            else None
        )
        if "$value" in obj:
            if plain:
                raise TemplateSyntaxError(
                    f"$each has a $value template, so property {plain[0]!r} beside it would be "
                    "ignored; move it into $value",
                    pointer,
                )
            body = compiler.compile(obj["$value"], _pointer.child(pointer, "$value"))
        else:
            body = compiler.plain_object(obj, plain, pointer)
        if isinstance(source, Constant) and not isinstance(source.value, list | dict):
            source = Constant([], where)
        return EachNode(query, source, name, key, body, pointer)
