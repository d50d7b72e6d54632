"""A captured output stream: the first ``limit`` bytes, and whether more came."""

from __future__ import annotations

import codecs

__all__ = ["Capture"]


class Capture:
    """Bytes in arrival order, up to ``limit``; the rest is counted as truncation.

    One Capture may collect several streams (a plan step merges stdout and
    stderr into one buffer, as a terminal shows them).
    """

    __slots__ = ("buffer", "limit", "truncated")

    def __init__(self, limit: int) -> None:
        self.buffer = bytearray()
        self.limit = limit
        self.truncated = False

    def write(self, data: bytes) -> None:
        room = self.limit - len(self.buffer)
        if room > 0:
            self.buffer += data[:room]
        if len(data) > room:
            self.truncated = True

    def decode(self, encoding: str) -> tuple[str | bytes, bool]:
        """The text (bytes for ``"binary"``) and whether invalid bytes were replaced.

        When the cap cut the stream, a character split by the cut is dropped
        rather than reported as invalid: valid output is never "replaced".
        """
        data = bytes(self.buffer)
        if encoding == "binary":
            return data, False
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
