"""The ``mcp`` subcommand: serve folders of tools to MCP clients."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ._common import EXIT_OK, EXIT_REFUSED, UsageError
from .options import add_toolbox_flags, load_toolbox
from .options.config import declare

__all__ = ["add_mcp_parser"]


def _cmd_mcp(options: argparse.Namespace) -> int:
    try:
        import mcp  # noqa: F401  (the SDK, not this package's command_handle.mcp)
    except ImportError:
        raise UsageError(
            "the MCP server needs the official SDK: pip install 'command-handle[mcp]'"
        ) from None
    from ..mcp import is_loopback, plug_closed_stdin, serve

    plug_closed_stdin()  # before loading: nothing else may take descriptor 0
    token = None
    if options.bearer_token_env:
        token = os.environ.get(options.bearer_token_env)
        if not token:
            raise UsageError(
                f"--bearer-token-env: the variable {options.bearer_token_env} is unset"
            )
    if options.transport == "http" and not (options.allow_remote or is_loopback(options.host)):
        print(
            f"command-handle: refusing to listen on {options.host}, which is not a loopback "
            "address; put an authenticating reverse proxy in front and pass --allow-remote",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    from ._tools import why_refused

    # The server's log (stderr) says why a call was refused; the client is told
    # only that nothing ran and the application must act.
    toolbox = load_toolbox(options, events=why_refused)
    if not toolbox.names():  # a server that lists nothing only answers "no tool named..."
        for note in toolbox.skipped:
            print(f"skipped: {note}", file=sys.stderr)
        print(
            f"command-handle: no tool to serve in {', '.join(options.paths)}",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    serve(
        toolbox,
        options.transport,
        host=options.host,
        port=options.port,
        allow_remote=options.allow_remote,
        bearer_token=token,
        backend=options.backend,
        stateless=options.stateless,
        workspace_from_roots=options.workspace_from_roots,
    )
    return EXIT_OK


def add_mcp_parser(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp", help="serve tool files and folders to MCP clients (stdio or streamable HTTP)"
    )
    mcp.add_argument("paths", nargs="+", metavar="PATH", help="tool files and folders")
    mcp.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP: the address (default 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8000, help="HTTP: the port (default 8000)")
    mcp.add_argument(
        "--allow-remote",
        action="store_true",
        help="HTTP: allow a host that is not a loopback address (behind your own auth)",
    )
    mcp.add_argument(
        "--stateless",
        action="store_true",
        help="HTTP: no sessions, for a load balancer (a client then cancels a call by "
        "closing its request; notifications/cancelled cannot reach it)",
    )
    mcp.add_argument(
        "--bearer-token-env",
        metavar="VAR",
        help="HTTP: require 'Authorization: Bearer <token>', the token read from VAR",
    )
    mcp.add_argument(
        "--backend",
        choices=("asyncio", "trio"),
        default="asyncio",
        help="stdio: the event loop (HTTP runs on asyncio)",
    )
    mcp.add_argument(
        "--workspace-from-roots",
        action="store_true",
        help="each call's workspace is the client's first file:// root (MCP roots), when "
        "it gives one; else --workspace",
    )
    add_toolbox_flags(mcp)
    mcp.set_defaults(run=_cmd_mcp)


# ``[mcp]`` in a --config file: the server's own options.
declare(
    {
        f"mcp.{key}": key
        for key in (
            "transport",
            "host",
            "port",
            "allow_remote",
            "stateless",
            "bearer_token_env",
            "backend",
            "workspace_from_roots",
        )
    }
)
