"""Toolbox: tools as data. Load folders of Command Handles and UTCP templates,
describe them for any LLM, call them by name with the model's arguments.

:class:`Toolbox` is the entry point::

    toolbox = Toolbox.load("tools/", policy=Policy(sandbox="read-only"))
    definitions = toolbox.describe("openai-strict")
    result = await toolbox.call("list_directory", {"path": "."})
    result.is_error, result.content, result.structured
"""

from ._arguments import drop_nulls, model_message, parameter_name
from ._credentials import (
    CredentialLookupError,
    CredentialOptionError,
    environment_credentials,
    parse_credential_option,
)
from ._events import AuditEvent, EventSink
from ._formats import FORMATS, describe_tool
from ._load import ToolLoadError, is_shortcut, load_tools, tool_files
from ._result import ToolResult, head_and_tail
from ._strict import StrictSchemaError, strict_schema
from ._tool import NAME_PATTERN, Tool, llm_name
from ._toolbox import (
    ApprovalRequest,
    Approver,
    CredentialResolver,
    Denied,
    Toolbox,
    ToolPreview,
)
from ._variables import manual_discovery

__all__ = [
    "FORMATS",
    "NAME_PATTERN",
    "ApprovalRequest",
    "Approver",
    "Denied",
    "AuditEvent",
    "CredentialLookupError",
    "CredentialOptionError",
    "CredentialResolver",
    "EventSink",
    "StrictSchemaError",
    "Tool",
    "ToolLoadError",
    "ToolPreview",
    "ToolResult",
    "Toolbox",
    "describe_tool",
    "environment_credentials",
    "is_shortcut",
    "head_and_tail",
    "drop_nulls",
    "llm_name",
    "load_tools",
    "manual_discovery",
    "model_message",
    "parameter_name",
    "parse_credential_option",
    "strict_schema",
    "tool_files",
]
