"""command-handle: run command-line programs for AI agents safely.

Layers: :mod:`command_handle.form` evaluates Tool Form templates;
:mod:`command_handle.args` turns structured values into argv tokens;
:mod:`command_handle.handle` loads and renders Command Handles;
:mod:`command_handle.utcp` translates UTCP CLI templates into plans;
:mod:`command_handle.policy` checks calls against the application's Policy;
:mod:`command_handle.executor` runs them under trio, asyncio or threads (the
only layer that spawns); :mod:`command_handle.toolbox` loads folders of tools,
describes them for LLM APIs and calls them by name (``command_handle.Toolbox``).
"""

from typing import TYPE_CHECKING, Any

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
    ProgramChangedError,
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
    "ApprovalRequest",
    "AuditEvent",
    "ToolResult",
    "Toolbox",
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
    "ProgramChangedError",
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

if TYPE_CHECKING:
    from .toolbox import ApprovalRequest, AuditEvent, Toolbox, ToolResult

# The Toolbox layer (and the UTCP layer under it) loads on first use, so that
# importing the core stays quick.
_LAZY = {"Toolbox", "ToolResult", "ApprovalRequest", "AuditEvent"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import toolbox

        return getattr(toolbox, name)
    raise AttributeError(f"module 'command_handle' has no attribute {name!r}")
