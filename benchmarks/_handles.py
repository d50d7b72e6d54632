"""The handle the call benchmarks run: ``/bin/echo WORD``, the cheapest real program."""

from __future__ import annotations

from typing import Any

ECHO: dict[str, Any] = {
    "name": "echo",
    "description": "echoes a word",
    "handler": "command",
    "command": "/bin/echo",
    "parameters": {
        "type": "object",
        "properties": {"word": {"type": "string"}},
        "required": ["word"],
    },
    "arguments": [{"$": "word"}],
}
