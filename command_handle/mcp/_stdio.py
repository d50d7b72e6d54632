"""The stdio transport: JSON-RPC lines on the process's stdin and stdout, fed to
the SDK's ``Server`` through memory streams, as the SDK's own transports do.

The SDK's ``stdio_server`` reads stdin in a worker thread, which a
cancellation cannot interrupt, and ends the session as soon as stdin closes,
which cancels the requests it has read but not yet answered. This transport
reads and writes from the event loop's thread, on any stdin a host can give:

- a pipe, socket, FIFO or terminal is waited on with the event loop, so a
  signal stops the server at once;
- a regular file or ``/dev/null``, which epoll refuses (``EPERM``), is read
  directly: its reads never wait;
- a descriptor 0 that was closed when the process started reads as empty.

When stdin closes, every request read before is answered (or cancelled by
the client) before the session ends. A host that wants the server gone at
once signals it, as MCP clients do about two seconds after closing stdin.
"""

from __future__ import annotations

import fcntl
import os
import select
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import (
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)

__all__ = ["StdioWire", "plug_closed_stdin"]

CHUNK = 65536  # bytes read at a time
# A write of at most PIPE_BUF bytes to a pipe that polls writable never
# blocks; a larger one could, with the event loop's thread in it.
WRITE_CHUNK = select.PIPE_BUF
FLUSH_LIMIT = 2.0  # seconds the answers still queued may take once serving ends
ANSWERS = (JSONRPCResponse, JSONRPCError)


def plug_closed_stdin() -> None:
    """Point descriptor 0 at the null device if it is closed, before anything
    else can take that number (an event loop's epoll, a pipe to a child)."""
    try:
        os.fstat(0)
    except OSError:
        null = os.open(os.devnull, os.O_RDONLY)
        if null != 0:
            os.dup2(null, 0)
            os.close(null)


def _pollable(fd: int) -> bool:
    """Whether the event loop can wait on ``fd``: epoll refuses regular files
    and some devices (``/dev/null``) with EPERM, and their reads and writes
    never wait."""
    try:
        probe = select.epoll()
    except (AttributeError, OSError):  # no epoll here: poll and kqueue take any fd
        return True
    try:
        probe.register(fd, select.EPOLLIN | select.EPOLLOUT)
    except PermissionError:
        return False
    finally:
        probe.close()
    return True


def _private_copy(fd: int, mode: int) -> int:
    """A close-on-exec copy of ``fd`` above the standard three; of the null
    device if ``fd`` is closed."""
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        null = os.open(os.devnull, mode | os.O_CLOEXEC)
        copy = fcntl.fcntl(null, fcntl.F_DUPFD_CLOEXEC, 3)
        os.close(null)
        return copy


def _point(fd: int, target: int | None, mode: int) -> None:
    """Make ``fd`` a copy of ``target``, or of the null device."""
    if target is not None:
        try:
            os.dup2(target, fd)
            return
        except OSError:  # target closed
            pass
    null = os.open(os.devnull, mode)
    if null != fd:
        os.dup2(null, fd)
        os.close(null)


class StdioWire:
    """Private copies of descriptors 0 and 1 for the wire; while it is claimed,
    0 reads the null device and 1 writes to stderr, so children and stray
    prints cannot touch the protocol."""

    def __init__(self) -> None:
        self.input = _private_copy(0, os.O_RDONLY)
        self.output = _private_copy(1, os.O_WRONLY)
        self.input_pollable = _pollable(self.input)
        self.output_pollable = _pollable(self.output)
        _point(0, None, os.O_RDONLY)
        _point(1, 2, os.O_WRONLY)
        self.unanswered: Counter[Any] = Counter()
        self.answered = anyio.Event()
        self.broken = False

    def release(self) -> None:
        """Give descriptors 0 and 1 back their wire."""
        for private, fd in ((self.input, 0), (self.output, 1)):
            os.dup2(private, fd)
            os.close(private)

    # -- reading -------------------------------------------------------------

    async def _chunks(self) -> AsyncIterator[bytes]:
        """The bytes of stdin as they arrive, until end of file."""
        fd = self.input
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while True:
            if self.input_pollable and not poller.poll(0):
                await anyio.wait_readable(fd)
            else:
                await anyio.lowlevel.checkpoint()  # a file never waits: let signals in
            try:
                data = os.read(fd, CHUNK)
            except OSError:  # a descriptor that cannot be read: no input
                return
            if not data:
                return
            yield data

    async def lines(self) -> AsyncIterator[bytes]:
        """Each line of stdin (without its newline), the last one even unterminated."""
        pieces: list[bytes] = []  # of the line not yet ended, joined once it is
        async for data in self._chunks():
            if b"\n" not in data:
                pieces.append(data)
                continue
            first, *rest = data.split(b"\n")
            pieces.append(first)
            yield b"".join(pieces)
            *complete, tail = rest
            for line in complete:
                yield line
            pieces = [tail] if tail else []
        if pieces:
            yield b"".join(pieces)

    def _note_read(self, message: Any) -> None:
        if isinstance(message, JSONRPCRequest):
            self.unanswered[message.id] += 1
        elif isinstance(message, JSONRPCNotification) and message.method == (
            "notifications/cancelled"
        ):  # the SDK never answers a request its client cancelled
            self._forget((message.params or {}).get("requestId"))

    def _forget(self, request_id: Any) -> None:
        if self.unanswered[request_id] <= 0:
            self.unanswered.pop(request_id, None)
            return
        self.unanswered[request_id] -= 1
        if self.unanswered[request_id] == 0:
            del self.unanswered[request_id]
        if not self.unanswered:
            self.answered.set()

    async def read(self, to_server: MemoryObjectSendStream[Any]) -> None:
        """Parse stdin's lines into messages for the server; at end of file, end
        the session once every request read has been answered."""
        async with to_server:
            async for line in self.lines():
                if not line.strip():
                    continue
                try:
                    message = jsonrpc_message_adapter.validate_json(
                        line.decode("utf-8", "replace"), by_name=False
                    )
                except Exception as exc:  # what the SDK's stdio transport does: report it
                    await to_server.send(exc)
                    continue
                self._note_read(message)
                await to_server.send(SessionMessage(message))
            while self.unanswered:
                self.answered = anyio.Event()
                await self.answered.wait()

    # -- writing -------------------------------------------------------------

    def _pieces(self, data: bytes) -> Iterator[memoryview]:
        view = memoryview(data)
        for start in range(0, len(view), WRITE_CHUNK):
            yield view[start : start + WRITE_CHUNK]

    async def _write_all(self, data: bytes, poller: select.poll) -> None:
        fd = self.output
        for piece in self._pieces(data):
            while piece:
                if self.output_pollable and not poller.poll(0):
                    await anyio.wait_writable(fd)
                written = os.write(fd, piece)
                piece = piece[written:]

    async def write(
        self, from_server: MemoryObjectReceiveStream[Any], serving: anyio.CancelScope
    ) -> None:
        """Write the server's messages, one line each, until it closes its stream.
        A client that is gone (EPIPE) ends the session: ``serving`` is cancelled,
        and what the server still sends is dropped."""
        poller = select.poll()
        poller.register(self.output, select.POLLOUT)
        async with from_server:
            async for session_message in from_server:
                message = session_message.message
                if not self.broken:
                    data = message.model_dump_json(by_alias=True, exclude_unset=True)
                    try:
                        await self._write_all(data.encode() + b"\n", poller)
                    except OSError:  # EPIPE, ECONNRESET: nobody reads the answers
                        self.broken = True
                        serving.cancel()
                if isinstance(message, ANSWERS):
                    self._forget(message.id)

    # -- the session ----------------------------------------------------------

    async def serve(self, server: Any, serving: anyio.CancelScope) -> None:
        """Run ``server`` on this wire until the session ends or ``serving`` is
        cancelled; the answers the server gives as it stops are still written
        (for at most :data:`FLUSH_LIMIT` seconds, if the client stopped reading)."""
        to_server, from_wire = anyio.create_memory_object_stream[Any](0)
        to_wire, from_server = anyio.create_memory_object_stream[Any](0)
        async with anyio.create_task_group() as writing:
            writing.start_soon(self.write, from_server, serving)
            try:
                with serving:
                    async with anyio.create_task_group() as session:
                        session.start_soon(self.read, to_server)
                        options = server.create_initialization_options()
                        await server.run(from_wire, to_wire, options)
                        session.cancel_scope.cancel()  # it ended on its own: stop reading
            finally:
                to_wire.close()  # the server closes it as it ends; a failure may not
                writing.cancel_scope.deadline = anyio.current_time() + FLUSH_LIMIT
