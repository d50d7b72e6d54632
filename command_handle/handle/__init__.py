"""Command Handles: the model, loading, and rendering to an Invocation (no spawning here)."""

from ..call import Invocation, StreamMode
from ._lint import LintWarning, lint
from ._model import MAX_ARGUMENT_DEPTH, CommandHandle, IoSpec, check_arguments

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "CommandHandle",
    "Invocation",
    "IoSpec",
    "LintWarning",
    "StreamMode",
    "check_arguments",
    "lint",
]
