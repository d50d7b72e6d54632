"""command-handle: run command-line programs for AI agents safely.

Layers: :mod:`command_handle.form` evaluates Tool Form templates.
"""

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
    "EvaluationError",
    "FormError",
    "IncludeError",
    "LimitError",
    "Limits",
    "Template",
    "TemplateSyntaxError",
    "compile_template",
    "evaluate",
]

__version__ = "0.1.0"
