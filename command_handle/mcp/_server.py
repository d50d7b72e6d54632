"""A Toolbox as an MCP server (the official ``mcp`` SDK's low-level ``Server``).

- ``tools/list`` is ``Toolbox.describe("mcp")``, as MCP ``Tool`` objects (so the
  wire carries ``inputSchema``, ``outputSchema`` and ``annotations``);
- ``tools/call`` is ``Toolbox.call``: the result's text is the content;
  ``structuredContent`` is added when the tool declares an ``outputSchema`` and
  the call succeeded. Refusals and failed programs are results with
  ``isError: true``, never JSON-RPC errors, so the model reads them;
- with a progress token, progress is reported while the program runs (every
  :data:`PROGRESS_INTERVAL` seconds, with its latest output line);
- a cancelled request cancels ``Toolbox.call``, which kills the child's
  process group (and its cgroup, when the policy has one) before returning;
- a program that outlives its call (a tool with a ``session``) belongs to the
  MCP session that started it: over stdio, the one client; over HTTP, the
  ``Mcp-Session-Id``. A request without a session (the 2026 protocol, a
  stateless server) cannot be told from another client's, so those share one
  owner: the server's session-less clients. The process tools reach only the
  caller's own.
- with ``workspace_from_roots``, each call's workspace is the client's first
  ``file://`` root (MCP roots) that is a directory on this machine, and inside
  the Policy's workspace when it has one (the client narrows it, never
  widens it); without one, the Policy's own workspace stays. Roots are asked for with a server
  request, which clients of the initialize handshake answer; protocol
  2026-07-28 deprecates roots and has no server requests.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import replace
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from .. import __version__
from ..toolbox import Toolbox

__all__ = ["PROGRESS_INTERVAL", "build_server"]

PROGRESS_INTERVAL = 0.5  # seconds; the issue asks for at least one a second
STDIO_CLIENT = ("mcp", "stdio")  # the owner of the processes of a stdio server's one client
HTTP_CLIENTS = ("mcp", "http")  # of an HTTP server's requests that carry no session
MAX_MESSAGE = 200  # characters of the latest output line in a progress message
MAX_ROOT_TOOLBOXES = 16  # workspaces kept, one Toolbox (and Executor) each


def _inside(path: str, parent: str | None) -> bool:
    if parent is None:
        return True
    parent = os.path.realpath(parent)
    return path == parent or path.startswith(parent.rstrip("/") + "/")


async def _root_directory(ctx: Any, within: str | None) -> str | None:
    """The client's first ``file://`` root that is a directory here (inside
    ``within``, the configured workspace, when there is one), or None."""
    import mcp_types as types

    session = ctx.session
    try:
        if not session.check_client_capability(
            types.ClientCapabilities(roots=types.RootsCapability())
        ):
            return None
        with warnings.catch_warnings():  # roots are deprecated in newer protocol versions
            warnings.simplefilter("ignore")
            listed = await session.list_roots()
    except Exception:  # no back channel (protocol 2026-07-28 has no server requests): keep
        return None  # the Policy's workspace
    for root in listed.roots:
        uri = urlparse(str(root.uri))
        if uri.scheme == "file" and uri.netloc in ("", "localhost"):
            path = os.path.realpath(unquote(uri.path))
            if os.path.isdir(path) and _inside(path, within):
                return path
    return None


class _Progress:
    """The latest output line of one call, reported while it runs."""

    def __init__(self) -> None:
        self.line = ""
        self.started = time.monotonic()

    async def on_output(self, stream: str, line: str) -> None:
        if line.strip():
            self.line = line.strip()[:MAX_MESSAGE]

    async def report(self, ctx: Any) -> None:
        while True:
            await anyio.sleep(PROGRESS_INTERVAL)
            elapsed = round(time.monotonic() - self.started, 1)
            await ctx.session.report_progress(
                elapsed, None, self.line or f"running for {elapsed:g} s"
            )


def _wants_progress(ctx: Any) -> bool:
    """Whether the request carries a progress token (``_meta.progressToken``)."""
    meta = getattr(ctx, "meta", None)
    if isinstance(meta, dict):  # the SDK gives the wire's progressToken as progress_token
        return meta.get("progress_token", meta.get("progressToken")) is not None
    return getattr(meta, "progress_token", None) is not None


def session_owner(ctx: Any) -> object:
    """Who a call's processes belong to: the HTTP request's ``Mcp-Session-Id``;
    over stdio, its one client; the session-less HTTP clients, together."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is None:
        return STDIO_CLIENT
    session_id = headers.get("mcp-session-id")
    return HTTP_CLIENTS if not session_id else ("mcp-session", session_id)


def build_server(
    toolbox: Toolbox, name: str = "command-handle", *, workspace_from_roots: bool = False
) -> Server[Any]:
    """The MCP server for ``toolbox``; run it with a transport (see ``serve_stdio``)."""
    tools = [types.Tool.model_validate(d) for d in toolbox.describe("mcp")]
    structured = {tool.name for tool in toolbox if tool.output_schema is not None}
    by_root: dict[str, Toolbox] = {}

    async def toolbox_for(ctx: Any) -> Toolbox:
        if not workspace_from_roots:
            return toolbox
        root = await _root_directory(ctx, toolbox.policy.workspace)
        if root is None:
            return toolbox
        box = by_root.pop(root, None)
        if box is None:
            # The least recently used workspace makes room. Its processes run on:
            # every workspace's Toolbox shares the limits and the processes of
            # ``toolbox``, so they are still read, stopped and counted.
            if len(by_root) >= MAX_ROOT_TOOLBOXES:
                by_root.pop(next(iter(by_root)))
            box = toolbox.with_policy(replace(toolbox.policy, workspace=root))
        by_root[root] = box  # the most recently used last
        return box

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        owner = session_owner(ctx)
        box = await toolbox_for(ctx)
        if not _wants_progress(ctx):
            result = await box.call(params.name, arguments, owner=owner)
        else:
            progress = _Progress()
            async with anyio.create_task_group() as group:
                group.start_soon(progress.report, ctx)
                result = await box.call(
                    params.name, arguments, on_output=progress.on_output, owner=owner
                )
                group.cancel_scope.cancel()
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=result.content)]
        if params.name in structured and not result.is_error:
            return types.CallToolResult(
                content=content,
                structured_content=result.structured,
                is_error=False,
            )
        return types.CallToolResult(content=content, is_error=result.is_error)

    return Server(
        name,
        version=__version__,
        instructions="Each tool runs one program with no shell; arguments are values, never "
        "syntax. A result with isError says what to change.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
