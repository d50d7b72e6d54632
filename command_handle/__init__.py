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

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from .toolbox import ApprovalRequest, AuditEvent, Denied, Toolbox, ToolResult

__all__ = [
    "DANGEROUS_ENVIRONMENT",
    "ApprovalRequest",
    "Denied",
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

# Each name is imported on first use, from the layer that defines it, so that
# a program pays only for the layers it touches: ``command-handle mcp`` never
# imports the UTCP translator for a folder with no UTCP manual, nor the
# executor before the first call (docs/decisions.md, "Start-up").
_HOME = {
    **dict.fromkeys(("ArgsError", "encode_args"), "args"),
    **dict.fromkeys(("CommandResult", "Event", "EventStream", "Executor"), "executor"),
    **dict.fromkeys(
        (
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
        ),
        "form",
    ),
    **dict.fromkeys(("CommandHandle", "Invocation", "IoSpec"), "handle"),
    **dict.fromkeys(("DANGEROUS_ENVIRONMENT", "Policy"), "policy"),
    **dict.fromkeys(
        ("Toolbox", "ToolResult", "ApprovalRequest", "AuditEvent", "Denied"), "toolbox"
    ),
}


def __getattr__(name: str) -> Any:
    layer = _HOME.get(name)
    if layer is None:
        if name in __all__:  # the error classes
            layer = "errors"
        else:
            raise AttributeError(f"module 'command_handle' has no attribute {name!r}")
    value = getattr(import_module(f".{layer}", __name__), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
