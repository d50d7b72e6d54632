"""The start-up baseline: a minimal stdio MCP server written with the official SDK
(its low-level ``Server`` and ``stdio_server``, as the SDK's examples do), serving
the tools of a folder of handle files (name, description, parameters), each
answered with a fixed text.

Run: python benchmarks/_minimal_mcp_server.py FOLDER
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def main() -> None:
    tools = []
    for path in sorted(Path(sys.argv[1]).glob("*.json")):
        document = json.loads(path.read_text())
        tools.append(
            types.Tool(
                name=document["name"],
                description=document["description"],
                input_schema=document["parameters"],
            )
        )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="done")])

    server = Server("minimal", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
