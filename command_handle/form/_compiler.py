"""Static validation and compilation of templates into node trees."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from . import _pointer
from ._errors import TemplateSyntaxError
from ._expressions import LogicalExpression, QueryExpression, SingularExpression
from ._include import Includer
from ._limits import Limits
from ._nodes import (
    ArrayNode,
    Constant,
    DirectiveNode,
    Node,
    ObjectNode,
    StringTemplateNode,
)
from ._registry import Registry, Scope, Transform
from ._schema import SchemaCheck
from ._strings import parse_string_template
from ._values import UNDEFINED

__all__ = ["Compiler", "is_directive_name"]


def _foldable(node: Node) -> bool:
    """Constants fold into their parent, except the Undefined Value, which parents drop."""
    return isinstance(node, Constant) and node.value is not UNDEFINED


def is_directive_name(key: str) -> bool:
    return key.startswith("$") and not key.startswith("$$")


class Compiler:
    """Compiles one template. Directive modules call back into it for their parts."""

    def __init__(
        self,
        registry: Registry,
        limits: Limits,
        includer: Includer,
        format_assertion: bool,
    ) -> None:
        self.registry = registry
        self.limits = limits
        self.includer = includer
        self.format_assertion = format_assertion
        self._depth = 0
        self._nodes = 0
        self.scope: Scope | None = None
        # Per object (by id): keys whose values a Scope releases from itself.
        self._released: dict[int, frozenset[str]] = {}

    # -- values ---------------------------------------------------------------

    def compile(self, value: object, pointer: str, *, keep_undefined: bool = False) -> Node:
        """Compile any template value found at ``pointer``."""
        self._nodes += 1
        if self._nodes > self.limits.max_nodes:
            raise TemplateSyntaxError(
                f"the template has more than {self.limits.max_nodes} values", pointer
            )
        if isinstance(value, str):
            return self.string(value, pointer)
        if value is None or isinstance(value, bool | int | float | bytes):
            if isinstance(value, float) and not math.isfinite(value):
                raise TemplateSyntaxError("templates cannot contain NaN or Infinity", pointer)
            return Constant(value, pointer)
        self._depth += 1
        try:
            if self._depth > self.limits.max_depth:
                raise TemplateSyntaxError(
                    f"template nesting exceeds the limit of {self.limits.max_depth} levels", pointer
                )
            if isinstance(value, list):
                return self._array(value, pointer)
            if isinstance(value, dict):
                return self._object(value, pointer, keep_undefined)
        finally:
            self._depth -= 1
        raise TemplateSyntaxError(f"a {type(value).__name__} is not a JSON value", pointer)

    def _array(self, value: list[Any], pointer: str) -> Node:
        items = [self.compile(item, _pointer.child(pointer, i)) for i, item in enumerate(value)]
        if all(_foldable(item) for item in items):
            return Constant([item.value for item in items], pointer)  # type: ignore[attr-defined]
        return ArrayNode(items, pointer)

    def plain_object(
        self, obj: Mapping[str, Any], keys: list[str], pointer: str, keep_undefined: bool = False
    ) -> Node:
        """The object made of ``keys`` of ``obj``, none of them directives."""
        entries = [self.entry(obj, key, pointer) for key in keys]
        if all(_foldable(node) for _, node in entries):
            return Constant({k: n.value for k, n in entries}, pointer)  # type: ignore[attr-defined]
        return ObjectNode(entries, pointer, keep_undefined)

    def entry(self, obj: Mapping[str, Any], key: str, pointer: str) -> tuple[str, Node]:
        """The output name and compiled value of the plain property ``key`` of ``obj``."""
        if not isinstance(key, str):
            raise TemplateSyntaxError("object keys must be strings", pointer)
        child = _pointer.child(pointer, key)
        if key.startswith("$$"):
            # Section 2.2.3: drop one '$'; the value is data, not a template.
            return key[1:], Constant(obj[key], child)
        if key in self._released.get(id(obj), ()):
            scope, self.scope = self.scope, None
            try:
                return key, self.compile(obj[key], child)
            finally:
                self.scope = scope
        return key, self.compile(obj[key], child)

    def _input_scope(self, obj: dict[str, Any]) -> Scope | None:
        scope = self.scope
        for key in obj:
            operator = self.registry.operators.get(key) if isinstance(key, str) else None
            if operator is not None:
                chosen = operator.input_scope(self, obj)
                if chosen is not False:
                    scope = chosen  # type: ignore[assignment]
        return scope

    def _object(self, obj: dict[str, Any], pointer: str, keep_undefined: bool) -> Node:
        outer_scope = self.scope
        scope = self._input_scope(obj)
        passthrough = scope.names if scope is not None else frozenset()
        directive_keys = [
            k for k in obj if isinstance(k, str) and is_directive_name(k) and k not in passthrough
        ]
        plain = [k for k in obj if k not in directive_keys]
        if scope is not None:
            released = scope.check(obj, pointer)
            if released:
                self._released[id(obj)] = released
        if not directive_keys:
            return self.plain_object(obj, plain, pointer, keep_undefined)
        registry = self.registry
        domain_key: str | None = None
        operator_keys: list[str] = []
        others: list[str] = []
        for key in directive_keys:
            if key in registry.modifiers:
                registry.modifiers[key].check(obj[key], _pointer.child(pointer, key))
            elif key in registry.domains:
                if domain_key is not None:
                    raise TemplateSyntaxError(
                        f"an object may hold one Domain Directive, found {domain_key} and {key}",
                        pointer,
                    )
                domain_key = key
            elif key in registry.operators:
                operator_keys.append(key)
            else:
                others.append(key)
        # Operators first: an unsupported encoding explains its stray options better
        # than "unknown directive" would.
        operators = [registry.operators[key].compile(self, obj, pointer) for key in operator_keys]
        allowed: set[str] = set()
        if domain_key is not None:
            allowed |= registry.domains[domain_key].properties
        for key in operator_keys:
            allowed |= registry.operators[key].claimed_properties(self, obj)
        for key in others:
            if key not in allowed:
                raise TemplateSyntaxError(self._unknown_message(key, domain_key), pointer)
        self.scope = scope
        try:
            if domain_key is not None:
                domain = registry.domains[domain_key].compile(self, obj, pointer, plain)
            else:
                domain = self.plain_object(obj, plain, pointer, keep_undefined)
        finally:
            self.scope = outer_scope
        if not operator_keys and domain_key is None:
            return domain  # only modifiers: they leave no trace in the output
        provenance = any(registry.operators[k].needs_provenance(self, obj) for k in operator_keys)
        return DirectiveNode(domain, operators, pointer, provenance)

    def _unknown_message(self, key: str, domain_key: str | None) -> str:
        for name, directive in self.registry.domains.items():
            if key in directive.properties and name != domain_key:
                return f"{key} is a property of {name} and needs it in the same object"
        if key in self.registry.encoding_properties():
            return f"{key} is an encoding option and needs an $encode that uses it"
        return (
            f"unknown directive {key}; to write a data property whose name starts with '$', "
            f"escape it as ${key}"
        )

    # -- strings and expressions ---------------------------------------------

    def string(self, text: str, pointer: str) -> Node:
        if "{" not in text and "}" not in text and "\\" not in text:
            return Constant(text, pointer)
        parts = parse_string_template(text, pointer)
        compiled: list[str | SingularExpression] = []
        for part in parts:
            if isinstance(part, str):
                compiled.append(part)
            else:
                expression, column = part
                try:
                    compiled.append(self.singular(expression, pointer))
                except TemplateSyntaxError as exc:
                    exc.message = f"in the expression at column {column}: {exc.message}"
                    raise
        if all(isinstance(p, str) for p in compiled):
            return Constant("".join(compiled), pointer)  # type: ignore[arg-type]
        return StringTemplateNode(compiled, pointer)

    def lookup_transform(self, name: str) -> Transform | None:
        return self.registry.transforms.get(name)

    def singular(self, text: str, pointer: str) -> SingularExpression:
        return SingularExpression(
            text.strip(), pointer, self.limits.max_query_length, self.lookup_transform
        )

    def query(self, text: str, pointer: str) -> QueryExpression:
        return QueryExpression(text, pointer, self.limits.max_query_length)

    def logical(self, text: str, pointer: str) -> LogicalExpression:
        return LogicalExpression(text, pointer, self.limits.max_query_length)

    def schema(self, value: object, pointer: str) -> SchemaCheck:
        return SchemaCheck(self.compile(value, pointer), pointer, self.format_assertion)
