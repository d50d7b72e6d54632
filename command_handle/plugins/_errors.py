"""The plugin layer's load error."""

from __future__ import annotations

from ..errors import HandleLoadError

__all__ = ["BashToolError"]


class BashToolError(HandleLoadError):
    """A bash tool or plugin document breaks the contract; ``pointer`` is into
    what ``schema`` printed (or into the document)."""
