"""A captured output stream: the first ``limit`` bytes, and whether more came."""

from __future__ import annotations

import codecs

__all__ = ["Capture"]


TAIL_LIMIT = 64 * 1024


class Capture:
    """Bytes in arrival order, up to ``limit``; the rest is counted as truncation.

    Past the limit, the last bytes are kept too (at most ``limit`` and
    :data:`TAIL_LIMIT`), so that a reader can see how the output ended, and
    ``total`` counts every byte written.

    One Capture may collect several streams (a plan step merges stdout and
    stderr into one buffer, as a terminal shows them).
    """

    __slots__ = ("buffer", "limit", "tail", "total", "truncated")

    def __init__(self, limit: int) -> None:
        self.buffer = bytearray()
        self.limit = limit
        self.truncated = False
        self.total = 0
        self.tail = bytearray()

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self.limit - len(self.buffer)
        if room > 0:
            self.buffer += data[:room]
        if len(data) > room:
            self.truncated = True
            keep = min(self.limit, TAIL_LIMIT)
            self.tail += data[max(room, 0) :][-keep:]
            if len(self.tail) > keep:
                del self.tail[:-keep]

    def decode_tail(self, encoding: str) -> str | bytes | None:
        """The kept end of a truncated stream (None when nothing was cut). A
        character split where the tail begins is dropped."""
        if not self.truncated:
            return None
        data = bytes(self.tail)
        if encoding == "binary":
            return data
        return data.decode(encoding, "replace").lstrip("\ufffd")

    def decode(self, encoding: str) -> tuple[str | bytes, bool]:
        """The text (bytes for ``"binary"``) and whether invalid bytes were replaced.

        When the cap cut the stream, a character split by the cut is dropped
        rather than reported as invalid: valid output is never "replaced".
        """
        # Decoded straight from the buffer: a copy first would cost the output's
        # size again in time and peak memory (docs/decisions.md).
        data = self.buffer
        if encoding == "binary":
            return bytes(data), False
        if not self.truncated:
            try:
                return data.decode(encoding), False
            except UnicodeDecodeError:
                return data.decode(encoding, "replace"), True
        decoder = codecs.getincrementaldecoder(encoding)("strict")
        try:
            return decoder.decode(data, final=not self.truncated), False
        except UnicodeDecodeError:
            lenient = codecs.getincrementaldecoder(encoding)("replace")
            return lenient.decode(data, final=not self.truncated), True
