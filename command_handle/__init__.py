"""command-handle: run command-line programs for AI agents safely.

Layers: :mod:`command_handle.form` evaluates Tool Form templates;
:mod:`command_handle.args` turns structured values into argv tokens.
"""

from .args import ArgsError, encode_args
from .form import (
    UNDEFINED,
    EvaluationError,
    FormError,
    IncludeError,
    LimitError,
    Limits,
    Template,
    TemplateSyntaxError,
    compile_template,
    evaluate,
)

__all__ = [
    "UNDEFINED",
    "ArgsError",
    "EvaluationError",
    "FormError",
    "IncludeError",
    "LimitError",
    "Limits",
    "Template",
    "TemplateSyntaxError",
    "compile_template",
    "encode_args",
    "evaluate",
]

__version__ = "0.1.0"
