"""MCP server: serve a Toolbox to any MCP client, over stdio or streamable HTTP.

:func:`serve` is the entry point (what ``command-handle mcp`` runs);
:func:`serve_stdio` (await it under trio or asyncio) and :func:`serve_http`
are its transports; :func:`build_server` gives the SDK ``Server`` for other
transports, :func:`http_app` the ASGI app. ``command-handle mcp PATH...`` runs
them (docs/mcp.md).
"""

from ._serve import (
    ServeError,
    http_app,
    is_loopback,
    serve,
    serve_http,
    serve_stdio,
    transport_security,
)
from ._server import PROGRESS_INTERVAL, build_server
from ._stdio import plug_closed_stdin

__all__ = [
    "PROGRESS_INTERVAL",
    "ServeError",
    "build_server",
    "http_app",
    "is_loopback",
    "plug_closed_stdin",
    "serve",
    "serve_http",
    "serve_stdio",
    "transport_security",
]
