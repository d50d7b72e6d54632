"""Errors raised by the Tool Form evaluator.

Every error carries the JSON Pointer of the template node it is about, so a
template author can find the spot. Messages describe types and positions,
never argument values, because arguments may hold secrets.
"""

from __future__ import annotations

from ..errors import CommandHandleError

__all__ = [
    "EvaluationError",
    "FormError",
    "IncludeError",
    "LimitError",
    "RegistrationError",
    "TemplateSyntaxError",
]


class FormError(CommandHandleError):
    """Base class of every Tool Form error.

    ``pointer`` is the RFC 6901 JSON Pointer of the template node ("" is the
    template root); ``message`` says what is wrong without the location.
    """

    def __init__(self, message: str, pointer: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.pointer = pointer

    def __str__(self) -> str:
        where = f"at {self.pointer}" if self.pointer else "at the template root"
        return f"{self.message} ({where})"

    def at(self, pointer: str) -> FormError:
        """Return this error located at ``pointer`` unless it already has a location."""
        if not self.pointer:
            self.pointer = pointer
        return self


class TemplateSyntaxError(FormError):
    """The template is malformed; raised by ``compile_template``, before any evaluation."""


class EvaluationError(FormError):
    """The template is well formed but could not be evaluated against these arguments."""


class LimitError(EvaluationError):
    """A resource limit (depth, evaluations, expansion, output size) was exceeded."""


class IncludeError(FormError):
    """An ``$include`` reference was refused by the resolution policy or could not be loaded."""


class RegistrationError(CommandHandleError, ValueError):
    """A directive, transform or encoding was registered under a name it cannot have."""
