"""command-handle: run command-line programs for AI agents safely.

Layers: :mod:`command_handle.form` evaluates Tool Form templates;
:mod:`command_handle.args` turns structured values into argv tokens;
:mod:`command_handle.handle` loads and renders Command Handles;
:mod:`command_handle.executor` runs them with trio (the only layer that spawns).
"""

from .args import ArgsError, encode_args
from .errors import (
    ArgumentsError,
    CommandError,
    DirectoryError,
    EnvironmentVariableError,
    HandleError,
    HandleLoadError,
    LaunchError,
    TemplateEvaluationError,
    Violation,
)
from .executor import CommandResult, Event, Executor
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
from .handle import CommandHandle, Invocation, IoSpec
from .policy import DANGEROUS_ENVIRONMENT, Policy

__all__ = [
    "DANGEROUS_ENVIRONMENT",
    "UNDEFINED",
    "ArgsError",
    "ArgumentsError",
    "CommandError",
    "CommandHandle",
    "CommandResult",
    "DirectoryError",
    "EnvironmentVariableError",
    "Event",
    "Executor",
    "HandleError",
    "HandleLoadError",
    "Invocation",
    "IoSpec",
    "LaunchError",
    "Policy",
    "TemplateEvaluationError",
    "Violation",
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
