"""Tool definitions for each LLM API, from a Tool: one function per format, in a table.

- ``mcp``: MCP's ``Tool`` (``name``: ``manual.tool`` for a UTCP manual's tool,
  ``description``, ``inputSchema``, and
  ``outputSchema`` and ``annotations`` when the handle declares them);
- ``openai``: a Chat Completions function tool;
- ``openai-strict``: the same with ``strict: true`` and the schema in the strict
  subset (:mod:`._strict`);
- ``anthropic``: ``name``, ``description``, ``input_schema``;
- ``tool-handle``: the Tool Description of Tool Handle section 2.1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._strict import strict_schema
from ._tool import Tool

__all__ = ["FORMATS", "describe_tool"]


def _mcp(tool: Tool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": tool.utcp_name or tool.name,  # MCP names may hold "."
        "description": tool.description,
        "inputSchema": tool.parameters,
    }
    if tool.output_schema is not None:
        out["outputSchema"] = tool.output_schema
    if tool.annotations:
        out["annotations"] = dict(tool.annotations)
    return out


def _openai(tool: Tool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def _openai_strict(tool: Tool) -> dict[str, Any]:
    out = _openai(tool)
    out["function"] = {
        **out["function"],
        "parameters": strict_schema(tool.name, tool.parameters),
        "strict": True,
    }
    return out


def _anthropic(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def _tool_handle(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


FORMATS: dict[str, Callable[[Tool], dict[str, Any]]] = {
    "mcp": _mcp,
    "openai": _openai,
    "openai-strict": _openai_strict,
    "anthropic": _anthropic,
    "tool-handle": _tool_handle,
}


def describe_tool(tool: Tool, format: str) -> dict[str, Any]:
    try:
        build = FORMATS[format]
    except KeyError:
        raise ValueError(
            f"unknown tool format {format!r}; use one of {', '.join(FORMATS)}"
        ) from None
    return build(tool)
