"""UTCP CLI compatibility: run UTCP call templates and manuals with no shell.

:func:`translate` parses each command with a bash grammar (tree-sitter-bash)
into an inspectable :class:`~command_handle.plan.Plan` of argv executions;
:func:`prepare` checks a call into the one
:class:`~command_handle.call.PreparedCall` every front end produces;
:func:`call` runs it on the core executor and returns what utcp-cli's
``call_tool`` returns. Tool arguments are values, never shell syntax.
"""

from ..call import PlanResult, PreparedCall, StepResult
from ..errors import TranslationError
from ._api import (
    DEFAULT_INHERITED,
    call,
    call_sync,
    discover,
    manual_from_output,
    output_value,
    prepare,
    prepare_plan,
    run,
    run_sync,
    translate,
)
from ._client import (
    MAX_VARIABLES_FILE,
    DotEnvVariableLoader,
    FilterDictPostProcessor,
    LimitStringsPostProcessor,
    ProtocolNotAllowedError,
    RegisterManualResult,
    TagAndDescriptionWordMatchStrategy,
    ToolPostProcessorConfigSerializer,
    UnknownToolError,
    UtcpClient,
    UtcpClientConfig,
    VariableLoaderSerializer,
    dotenv_variables,
    manual_name,
    namespaced_variables,
)
from ._migrate import command_handle_for
from ._models import (
    CliCallTemplate,
    CommandStep,
    LegacyCliProvider,
    SkippedTool,
    ToolNotFoundError,
    UtcpLoadError,
    UtcpManual,
    UtcpTool,
    load,
)
from ._values import utcp_value

__all__ = [
    "MAX_VARIABLES_FILE",
    "DEFAULT_INHERITED",
    "CliCallTemplate",
    "CommandStep",
    "DotEnvVariableLoader",
    "FilterDictPostProcessor",
    "LimitStringsPostProcessor",
    "ProtocolNotAllowedError",
    "RegisterManualResult",
    "TagAndDescriptionWordMatchStrategy",
    "ToolPostProcessorConfigSerializer",
    "UnknownToolError",
    "UtcpClient",
    "UtcpClientConfig",
    "VariableLoaderSerializer",
    "LegacyCliProvider",
    "PlanResult",
    "PreparedCall",
    "SkippedTool",
    "StepResult",
    "ToolNotFoundError",
    "TranslationError",
    "UtcpLoadError",
    "UtcpManual",
    "UtcpTool",
    "call",
    "call_sync",
    "command_handle_for",
    "discover",
    "dotenv_variables",
    "manual_name",
    "namespaced_variables",
    "load",
    "manual_from_output",
    "output_value",
    "prepare",
    "prepare_plan",
    "run",
    "run_sync",
    "translate",
    "utcp_value",
]
