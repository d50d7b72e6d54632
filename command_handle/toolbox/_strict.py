"""A parameters schema rewritten to OpenAI's strict subset.

Strict mode decodes only what the schema allows, and accepts a subset of
JSON Schema: every object closed (``additionalProperties: false``) and every
property required. The rewrite, recursively:

- closes each object and lists all its properties in ``required``;
- makes each property that was optional nullable (a ``null`` from the model
  then means "absent": :func:`~command_handle.toolbox.drop_nulls` removes it
  before validation);
- keeps the keywords strict mode enforces (:data:`KEPT`), and turns ``oneOf``
  into ``anyOf`` (looser; the original schema is still enforced at call time);
- drops annotations and the validation keywords strict mode cannot express
  (:data:`DROPPED`): the Toolbox validates every call against the original
  schema, so the model gets a clear error instead of a silent pass;
- refuses what would change the shape of valid arguments (:data:`REFUSED`,
  free-form objects, maps) with :class:`StrictSchemaError` naming the tool and
  the keyword.
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import CommandHandleError

__all__ = ["DROPPED", "KEPT", "REFUSED", "StrictSchemaError", "strict_schema"]

KEPT = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "description",
        "title",
        "$ref",
        "$defs",
        "definitions",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
DROPPED = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "minLength",
        "maxLength",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "contentEncoding",
        "contentMediaType",
        "minContains",
        "maxContains",
    }
)
REFUSED = frozenset(
    {
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "patternProperties",
        "dependentSchemas",
        "dependentRequired",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "prefixItems",
        "contains",
        "$dynamicRef",
        "$anchor",
    }
)
# The string formats strict mode understands; another is dropped.
FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


class StrictSchemaError(CommandHandleError, ValueError):
    """A tool's parameters cannot be expressed in OpenAI's strict mode."""

    def __init__(self, tool: str, keyword: str, pointer: str, why: str) -> None:
        self.tool = tool
        self.keyword = keyword
        self.pointer = pointer
        super().__init__(
            f"tool {tool!r}: {keyword!r} at /parameters{pointer} cannot be expressed in "
            f"OpenAI strict mode: {why}"
        )


def strict_schema(tool: str, schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (a parameters schema) in the strict subset; ``schema`` is not changed."""
    return _Rewriter(tool).rewrite(copy.deepcopy(schema), "")


class _Rewriter:
    def __init__(self, tool: str) -> None:
        self.tool = tool

    def refuse(self, keyword: str, pointer: str, why: str) -> StrictSchemaError:
        return StrictSchemaError(self.tool, keyword, pointer, why)

    def rewrite(self, schema: Any, pointer: str) -> dict[str, Any]:
        if schema is True or schema == {}:
            raise self.refuse("true", pointer, "a value of any type cannot be decoded strictly")
        if not isinstance(schema, dict):
            raise self.refuse("false", pointer, "a schema that accepts nothing")
        out: dict[str, Any] = {}
        for keyword, value in schema.items():
            if keyword in REFUSED:
                raise self.refuse(keyword, pointer, "strict mode has no equivalent")
            if keyword == "oneOf":
                keyword = "anyOf"
            elif keyword in DROPPED or keyword not in KEPT:
                continue
            if keyword == "format" and value not in FORMATS:
                continue
            out[keyword] = value
        for keyword in ("anyOf",):
            if keyword in out:
                out[keyword] = [
                    self.rewrite(branch, f"{pointer}/{keyword}/{index}")
                    for index, branch in enumerate(out[keyword])
                ]
        for defs in ("$defs", "definitions"):
            if defs in out:
                out[defs] = {
                    name: self.rewrite(sub, f"{pointer}/{defs}/{name}")
                    for name, sub in out[defs].items()
                }
        if "items" in out:
            out["items"] = self.rewrite(out["items"], f"{pointer}/items")
        if _is_object(out):
            self.close(out, schema, pointer)
        return out

    def close(self, out: dict[str, Any], original: dict[str, Any], pointer: str) -> None:
        extra = original.get("additionalProperties")
        properties = out.get("properties") or {}
        if extra not in (None, False):
            raise self.refuse(
                "additionalProperties",
                pointer,
                "an object with open-ended keys (a map) cannot be decoded strictly",
            )
        if not properties and extra is None and pointer:
            raise self.refuse(
                "properties",
                pointer,
                "a free-form object (no properties) cannot be decoded strictly",
            )
        required = set(original.get("required", ()))
        rewritten: dict[str, Any] = {}
        for name, sub in properties.items():
            where = f"{pointer}/properties/{name}"
            strict = self.rewrite(sub, where)
            rewritten[name] = strict if name in required else _nullable(strict)
        out["properties"] = rewritten
        out["required"] = list(rewritten)
        out["additionalProperties"] = False


def _is_object(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return (
        kind == "object"
        or (isinstance(kind, list) and "object" in kind)
        or (kind is None and "properties" in schema)
    )


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts null."""
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema and "const" not in schema:
        return {**schema, "type": [kind, "null"]} if kind != "null" else schema
    if isinstance(kind, list) and "enum" not in schema and "const" not in schema:
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    if "enum" in schema and isinstance(kind, (str, type(None))):
        enum = schema["enum"] if None in schema["enum"] else [*schema["enum"], None]
        out = {**schema, "enum": enum}
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        return out
    description = schema.get("description")
    inner = {k: v for k, v in schema.items() if k != "description"}
    out = {"anyOf": [inner, {"type": "null"}]}
    if description is not None:
        out["description"] = description
    return out
