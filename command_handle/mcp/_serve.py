"""Running the server: over stdio (trio or asyncio) or streamable HTTP (asyncio).

Shutdown kills every child, and every process that outlived its call. Over
stdio the server ends when the client has closed stdin and every request it
sent is answered (``_stdio.py``), or on SIGTERM, SIGINT or SIGHUP: then the
running calls are cancelled, and a cancelled call kills its child's process
group before it returns. Over HTTP, uvicorn's shutdown ends the SDK's session
manager, which cancels the calls the same way. A client that ends its HTTP
session (DELETE) ends its processes.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import signal
from collections.abc import Awaitable, Callable, MutableMapping
from functools import partial
from typing import Any

import anyio

from ..errors import CommandHandleError
from ..toolbox import Toolbox
from ._server import build_server
from ._stdio import StdioWire, plug_closed_stdin

__all__ = [
    "ServeError",
    "http_app",
    "is_loopback",
    "serve",
    "serve_http",
    "serve_stdio",
    "transport_security",
]

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ServeError(CommandHandleError, ValueError):
    """The server was asked for what it refuses: a transport it does not have, or a
    host that is not a loopback address without ``allow_remote``."""


async def _cancel_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(*SIGNALS) as signals:
        async for _ in signals:
            scope.cancel()
            return


async def serve_stdio(toolbox: Toolbox, *, workspace_from_roots: bool = False) -> None:
    """Serve ``toolbox`` over this process's stdin and stdout until the client
    closes stdin and every request it sent is answered, or a signal arrives
    (trio or asyncio)."""
    server = build_server(toolbox, workspace_from_roots=workspace_from_roots)
    wire = StdioWire()
    try:
        serving = anyio.CancelScope()
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_on_signal, serving)
            await wire.serve(server, serving)
            group.cancel_scope.cancel()
    finally:
        await toolbox.aclose()  # the client is gone: so are its processes
        wire.release()


def _uvicorn_server() -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn, except that a signal ends the process with status 0 after the
        graceful shutdown (uvicorn re-raises it, so the exit looks like a crash)."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True
            else:
                self.should_exit = True

    return Server


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _loopback_names(host: str) -> list[str]:
    """The names a client may put in ``Host`` to reach a server bound to the
    loopback address ``host``: the address itself (IPv6 in brackets), and
    ``localhost`` where it resolves to it (127.0.0.1 and ::1)."""
    if host == "localhost":
        return ["localhost", "127.0.0.1", "[::1]"]
    address = ipaddress.ip_address(host)
    if address.version == 6:
        names = list(dict.fromkeys([f"[{address.compressed}]", f"[{host}]"]))
    else:
        names = [str(address)]
    if str(address) in ("127.0.0.1", "::1"):
        names.append("localhost")
    return names


def transport_security(host: str, port: int | None) -> Any:
    """DNS-rebinding protection for a server bound to a loopback ``host``: every
    request's ``Host`` must name that address (or ``localhost``, where it
    resolves there) with ``port``, and an ``Origin``, when sent, the same over
    http. A web page that rebinds its own name to 127.0.0.2 sends ``Host:
    its-name``, which is refused. ``port`` None (or 0: the kernel picks) allows
    any port. None for a host that is not a loopback address: there the
    deployer's reverse proxy decides what reaches the server."""
    if not is_loopback(host):
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    names = _loopback_names(host)
    suffixes = [f":{port}"] if port else [":*"]
    if port == 80:  # a client leaves the default port out
        suffixes.append("")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[name + suffix for name in names for suffix in suffixes],
        allowed_origins=[f"http://{name}{suffix}" for name in names for suffix in suffixes],
    )


def _ending_sessions(app: ASGIApp, toolbox: Toolbox) -> ASGIApp:
    """``app``, stopping a session's processes when its client ends it (DELETE)."""

    async def watched(scope: Scope, receive: Receive, send: Send) -> None:
        await app(scope, receive, send)
        if scope["type"] == "http" and scope.get("method") == "DELETE":
            session_id = dict(scope.get("headers") or []).get(b"mcp-session-id")
            if session_id:
                await toolbox.aclose(("mcp-session", session_id.decode("latin-1")))

    return watched


def _bearer(app: ASGIApp, token: str) -> ASGIApp:
    """``app`` behind ``Authorization: Bearer <token>`` (compared in constant time)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"text/plain"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b"unauthorized\n"})
                return
        await app(scope, receive, send)

    return guarded


def http_app(
    toolbox: Toolbox,
    host: str = "127.0.0.1",
    bearer_token: str | None = None,
    *,
    port: int | None = None,
    stateless: bool = False,
    workspace_from_roots: bool = False,
) -> Any:
    """The ASGI app serving ``toolbox`` at ``/mcp``.

    By default each client gets a session (``Mcp-Session-Id``), so its
    ``notifications/cancelled``, which arrives in a request of its own, reaches
    the call it names and kills its process tree. ``stateless`` serves every
    request on its own, so that any number of server processes can share a
    load balancer; a client must then cancel by closing the request (as
    clients of the 2026 protocol do), because a cancel notification finds no
    call to match. On a loopback ``host`` it answers only requests whose
    ``Host`` (and ``Origin``) name ``host:port`` (:func:`transport_security`);
    pass the ``port`` it is served on."""
    server = build_server(toolbox, workspace_from_roots=workspace_from_roots)
    app: Any = server.streamable_http_app(
        stateless_http=stateless, host=host, transport_security=transport_security(host, port)
    )
    watched = _ending_sessions(app, toolbox)
    return _bearer(watched, bearer_token) if bearer_token else watched


def serve_http(
    toolbox: Toolbox,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    allow_remote: bool = False,
    bearer_token: str | None = None,
    stateless: bool = False,
    workspace_from_roots: bool = False,
) -> None:
    """Serve ``toolbox`` over streamable HTTP until SIGTERM or SIGINT (asyncio,
    uvicorn), with sessions unless ``stateless`` (:func:`http_app`). A host
    that is not a loopback address is refused unless ``allow_remote``:
    authentication is the deployer's reverse proxy's job, or ``bearer_token``'s."""
    if not (allow_remote or is_loopback(host)):
        raise ServeError(
            f"refusing to listen on {host}, which is not a loopback address: put an "
            "authenticating reverse proxy in front and pass --allow-remote"
        )
    import uvicorn

    server_class = _uvicorn_server()
    config = uvicorn.Config(
        http_app(
            toolbox,
            host,
            bearer_token,
            port=port,
            stateless=stateless,
            workspace_from_roots=workspace_from_roots,
        ),
        host=host,
        port=port,
        log_level=os.environ.get("COMMAND_HANDLE_HTTP_LOG", "warning"),
        timeout_graceful_shutdown=1,
        lifespan="on",
    )
    try:
        server_class(config).run()
    finally:
        toolbox.close()  # the server's end: no process it started runs on


def serve(
    toolbox: Toolbox,
    transport: str = "stdio",
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    allow_remote: bool = False,
    bearer_token: str | None = None,
    backend: str = "asyncio",
    stateless: bool = False,
    workspace_from_roots: bool = False,
) -> None:
    """Serve ``toolbox`` until the client goes away or a signal arrives: what
    ``command-handle mcp`` runs. ``transport`` is ``"stdio"`` (on ``backend``,
    ``"asyncio"`` or ``"trio"``) or ``"http"`` (streamable HTTP, with sessions
    unless ``stateless``). With ``workspace_from_roots``, a call's workspace
    is the client's first ``file://`` root (MCP roots)."""
    if transport == "http":
        serve_http(
            toolbox,
            host,
            port,
            allow_remote=allow_remote,
            bearer_token=bearer_token,
            stateless=stateless,
            workspace_from_roots=workspace_from_roots,
        )
    elif transport == "stdio":
        plug_closed_stdin()
        anyio.run(
            partial(serve_stdio, toolbox, workspace_from_roots=workspace_from_roots),
            backend=backend,
        )
    else:
        raise ServeError(f'transport must be "stdio" or "http", not {transport!r}')
