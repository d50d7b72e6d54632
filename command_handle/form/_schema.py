"""JSON Schema validation for ``$match`` and ``$matches`` (sections 5.2-5.3).

Schemas are processed in the dialect named by ``$schema`` (2020-12 by
default). ``format`` is an annotation, as the Format-Annotation vocabulary
says, unless the template was compiled with ``format_assertion=True``. Remote
``$ref``s are never fetched. Validators of literal schemas are built at compile
time; schemas computed at run time are cached by their JSON text.
"""

from __future__ import annotations

from typing import Any

from .. import _jsonschema
from .._json import NonJSONValueError, stringify
from ._context import EvalContext
from ._errors import EvaluationError, TemplateSyntaxError
from ._nodes import Constant, Node, materialize
from ._values import UNDEFINED

__all__ = ["SchemaCheck"]


def _unresolvable() -> type[Exception]:
    import referencing.exceptions  # loaded with jsonschema, on first use

    return referencing.exceptions.Unresolvable


def _build(schema: object, format_assertion: bool) -> Any:
    if not isinstance(schema, dict | bool):
        raise ValueError("a JSON Schema is an object or a boolean")
    jsonschema = _jsonschema.load()
    draft = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    _jsonschema.check_schema(schema, draft)  # boolean schemas are valid too
    return _jsonschema.validator(schema, formats=format_assertion, base=draft)


def _schema_problem(exc: Exception) -> str:
    # jsonschema's own message quotes the offending value, which may come from the
    # arguments; name the location and the metaschema keyword instead.
    if isinstance(exc, _jsonschema.load().SchemaError):
        where = "/" + "/".join(str(p) for p in exc.path) if exc.path else "its root"
        return f"invalid JSON Schema at {where}: fails the metaschema's {exc.validator!r} rule"
    return f"invalid JSON Schema: {exc}"


class SchemaCheck:
    """Validates an instance against a schema produced by a template node."""

    __slots__ = ("_cache", "_format_assertion", "_node", "_validator", "pointer")

    def __init__(self, node: Node, pointer: str, format_assertion: bool) -> None:
        self._node = node
        self.pointer = pointer
        self._format_assertion = format_assertion
        self._cache: dict[str, Any] = {}
        self._validator: Any = None
        if isinstance(node, Constant):
            try:
                self._validator = _build(node.value, format_assertion)
            except (_jsonschema.load().SchemaError, ValueError) as exc:
                raise TemplateSyntaxError(_schema_problem(exc), pointer) from None

    def _runtime_validator(self, ctx: EvalContext) -> Any:
        schema = materialize(self._node.evaluate(ctx))
        try:
            key = stringify(schema)
        except (NonJSONValueError, RecursionError):
            raise EvaluationError("the schema is not a JSON value", self.pointer) from None
        validator = self._cache.get(key)
        if validator is None:
            try:
                validator = _build(schema, self._format_assertion)
            except (_jsonschema.load().SchemaError, ValueError) as exc:
                raise EvaluationError(_schema_problem(exc), self.pointer) from None
            if len(self._cache) < 64:
                self._cache[key] = validator
        return validator

    def matches(self, instance: object, ctx: EvalContext) -> bool:
        validator = self._validator or self._runtime_validator(ctx)
        if instance is UNDEFINED:
            return False  # an Undefined Value is not a JSON instance
        try:
            return bool(validator.is_valid(instance))
        except _unresolvable():
            raise EvaluationError(
                "the schema has a $ref that cannot be resolved", self.pointer
            ) from None
        except RecursionError:
            raise EvaluationError(
                "the instance is nested too deeply to validate", self.pointer
            ) from None
