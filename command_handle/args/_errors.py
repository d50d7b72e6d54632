"""ArgsError: the args encoding refused a value."""

from __future__ import annotations

from ..form import FormError

__all__ = ["ArgsError", "OptionLikeError"]


class ArgsError(FormError):
    """The args encoding refused its input.

    ``pointer`` is the JSON Pointer of the ``$encode`` object in the template
    (empty for direct ``encode_args`` calls) and ``path`` the JSON Pointer of
    the offending part inside the encoded value. For character-policy errors
    ``token``, ``index``, ``character`` and ``code_point`` say exactly what
    was refused.
    """

    def __init__(
        self,
        message: str,
        pointer: str = "",
        *,
        path: str = "",
        token: str | None = None,
        index: int | None = None,
        character: str | None = None,
    ) -> None:
        super().__init__(message, pointer)
        self.path = path
        self.token = token
        self.index = index
        self.character = character
        self.code_point = ord(character) if character is not None else None

    def __str__(self) -> str:
        inside = f" at input path {self.path}" if self.path else ""
        where = f"at {self.pointer}" if self.pointer else "at the template root"
        return f"{self.message}{inside} ({where})"


class OptionLikeError(ArgsError):
    """A token from the arguments would be read as an option (CWE-88): it begins
    with ``-``, or with ``+`` or ``@`` where an operand belongs. ``token`` is it."""
