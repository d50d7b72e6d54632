"""command-handle: run command-line programs for AI agents safely.

Layers: :mod:`command_handle.form` evaluates Tool Form templates;
:mod:`command_handle.args` turns structured values into argv tokens;
:mod:`command_handle.handle` loads and renders Command Handles;
:mod:`command_handle.utcp` translates UTCP CLI templates into plans;
:mod:`command_handle.policy` checks calls against the application's Policy;
:mod:`command_handle.executor` runs them under trio, asyncio or threads (the
only layer that spawns).
"""

from .args import ArgsError, encode_args
from .errors import (
    AfterRunError,
    ArgumentsError,
    ArgvTextError,
    CallTimeoutError,
    CommandError,
    CommandHandleError,
    DirectoryError,
    EnvironmentVariableError,
    HandleError,
    HandleLoadError,
    LaunchError,
    OptionArgumentError,
    PathArgumentError,
    PolicyError,
    PolicyTypeError,
    SandboxError,
    TemplateEvaluationError,
    TranslationError,
    Violation,
)
from .executor import CommandResult, Event, EventStream, Executor
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
    "AfterRunError",
    "ArgsError",
    "ArgumentsError",
    "ArgvTextError",
    "CallTimeoutError",
    "CommandError",
    "CommandHandle",
    "CommandHandleError",
    "CommandResult",
    "DirectoryError",
    "EnvironmentVariableError",
    "Event",
    "EventStream",
    "Executor",
    "HandleError",
    "HandleLoadError",
    "Invocation",
    "IoSpec",
    "LaunchError",
    "OptionArgumentError",
    "PathArgumentError",
    "Policy",
    "PolicyError",
    "PolicyTypeError",
    "SandboxError",
    "TemplateEvaluationError",
    "TranslationError",
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
