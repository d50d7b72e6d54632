"""``$encode`` (section 5.5): apply named Encodings in sequence.

Encodings read their own ``$``-named options from the same object (``$indent``,
``$content``...). ``$contentType`` is accepted beside any encoding and
overrides the Content-Type header of the result (Appendix A writes it so).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._context import EvalContext
from .._errors import EvaluationError, TemplateSyntaxError
from .._nodes import Constant, Node, Operator
from .._registry import EncodeFunction, Encoding, Scope
from .._values import UNDEFINED, EncodedBytes, EncodedStr, headers_of
from .transform import literal_names, names_of

if TYPE_CHECKING:
    from .._compiler import Compiler

_CONTENT_TYPE = "$contentType"


class EncodeOperator:
    __slots__ = ("content_type", "fixed", "names", "pointer", "table")

    def __init__(
        self,
        names: Node,
        fixed: list[EncodeFunction] | None,
        table: dict[str, EncodeFunction],
        content_type: str | None,
        pointer: str,
    ) -> None:
        self.names = names
        self.fixed = fixed
        self.table = table
        self.content_type = content_type
        self.pointer = pointer

    def apply(self, value: object, ctx: EvalContext) -> object:
        functions = self.fixed
        if functions is None:
            names = names_of(self.names.evaluate(ctx), "encoding", self.pointer)
            if names is None:
                return UNDEFINED
            functions = []
            for name in names:
                if name not in self.table:
                    # The name may come from the arguments: list what exists, echo nothing.
                    raise EvaluationError(
                        "the computed encoding name is unsupported; known: "
                        + ", ".join(sorted(self.table)),
                        self.pointer,
                    )
                functions.append(self.table[name])
        for function in functions:
            value = function(value, ctx)
        if self.content_type is not None:
            headers = headers_of(value).with_header("Content-Type", self.content_type)
            if isinstance(value, str):
                value = EncodedStr(value, headers)
            elif isinstance(value, bytes):
                value = EncodedBytes(value, headers)
        return value


class EncodeDirective:
    name = "$encode"
    category = "operator"

    def _encodings(self, compiler: Compiler, obj: Mapping[str, Any]) -> list[Encoding]:
        value = obj[self.name]
        table = compiler.registry.encodings
        if isinstance(value, str):
            return [table[value]] if value in table else []
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return [table[v] for v in value if v in table]
        return list(table.values())  # chosen at run time: any of them may read its options

    def claimed_properties(self, compiler: Compiler, obj: Mapping[str, Any]) -> frozenset[str]:
        names = {_CONTENT_TYPE}
        for encoding in self._encodings(compiler, obj):
            names |= encoding.properties
        return frozenset(names)

    def needs_provenance(self, compiler: Compiler, obj: Mapping[str, Any]) -> bool:
        return any(e.needs_provenance for e in self._encodings(compiler, obj))

    def input_scope(self, compiler: Compiler, obj: Mapping[str, Any]) -> Scope | bool | None:
        """The scope of the first encoding named literally, which receives the input.
        An encoding without one, or a name computed at run time, ends any enclosing
        scope (a JSON payload inside args is JSON)."""
        value = obj[self.name]
        first = value[0] if isinstance(value, list) and value else value
        encoding = compiler.registry.encodings.get(first) if isinstance(first, str) else None
        return encoding.scope if encoding is not None else None

    def compile(self, compiler: Compiler, obj: Mapping[str, Any], pointer: str) -> Operator:
        where = _pointer.child(pointer, self.name)
        node = compiler.compile(obj[self.name], where)
        table = compiler.registry.encodings
        content_type = None
        if _CONTENT_TYPE in obj:
            content_type = obj[_CONTENT_TYPE]
            if not isinstance(content_type, str):
                raise TemplateSyntaxError(
                    "$contentType must be a string", _pointer.child(pointer, _CONTENT_TYPE)
                )
        names = literal_names(node)
        if names is not None:
            for name in names:
                if name not in table:
                    raise TemplateSyntaxError(
                        f"unsupported encoding {name!r}; known: {', '.join(sorted(table))}", where
                    )
            compiled = {name: table[name].compile(compiler, obj, pointer) for name in set(names)}
            return EncodeOperator(node, [compiled[n] for n in names], compiled, content_type, where)
        if isinstance(node, Constant):
            node = Constant(None, where)  # a literal that names nothing yields Undefined
            return EncodeOperator(node, None, {}, content_type, where)
        compiled = {name: enc.compile(compiler, obj, pointer) for name, enc in table.items()}
        return EncodeOperator(node, None, compiled, content_type, where)
