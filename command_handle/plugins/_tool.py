"""A bash tool: what its ``schema`` subcommand printed, checked, and the
prepared calls of its ``run``, ``preview`` and ``error`` subcommands.

The tool is one generated Command Handle: ``bash`` (found on the Policy's
search path) with an argv, stdin and variables the plugin layer computes per
call and hands over as ``$context`` values. So a bash tool gets every check a
handle gets (arguments against the schema, the program under the Policy, the
environment rules, credentials masked in the plan, the sandbox), and the
executor runs it like any other call.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .. import _json
from ..errors import CommandError, HandleError
from ..handle import CommandHandle
from . import modes
from ._errors import BashToolError
from ._program import ARGV, CWD, STDIN

if TYPE_CHECKING:
    from ..call import CommandResult, PreparedCall
    from ..policy import Policy

__all__ = ["BashTool", "BashToolError", "config_variable", "parse_schema"]

Subcommand = Literal["run", "preview", "error"]

# What a tool's name may be: the names models accept (Tool Handle 2.1).
_NAME = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")
_VARIABLE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = "AGENT_TOOL_"


def config_variable(key: str) -> str:
    """``AGENT_TOOL_CONFIG_<UPPER_SNAKE_CASE_KEY>``: ``smtpUser`` and
    ``smtp-user`` both give ``AGENT_TOOL_CONFIG_SMTP_USER``."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key)
    return "AGENT_TOOL_CONFIG_" + re.sub(r"[^A-Za-z0-9]+", "_", snake).strip("_").upper()


@dataclass(frozen=True)
class BashTool:
    """One bash tool file and its checked schema. ``handle`` is the generated
    Command Handle every subcommand is prepared with."""

    file: str
    id: str
    version: str
    args_mode: str
    description: str
    parameters: dict[str, Any]
    positional: tuple[Mapping[str, Any], ...]
    config_keys: tuple[str, ...]
    options_allowed: frozenset[str]
    handle: CommandHandle = field(repr=False)
    schema: Mapping[str, Any] = field(repr=False)
    digest: str = ""  # SHA-256 of the file as loaded; a call checks it is still that

    def prepare(
        self,
        subcommand: Subcommand,
        args: Mapping[str, Any],
        policy: Policy,
        *,
        config: Mapping[str, Any] | None = None,
        credential: Mapping[str, Any] | None = None,
        exit_code: int | None = None,
        timed_out: float | None = None,
    ) -> PreparedCall[CommandResult]:
        """``bash FILE SUBCOMMAND ...`` with the model's ``args`` in this tool's
        argument mode, checked under ``policy``; spawns nothing. ``config`` is
        the application's (``working_directory`` and the ``config_keys``
        values); ``exit_code`` and ``timed_out`` (the timeout, in seconds) are
        for ``error``. Raises a :class:`~command_handle.errors.HandleError`."""
        self.handle.validate_arguments(args)  # the schema's words first, then the mode's
        self.check_unchanged()
        tokens, stdin = modes.MODES[self.args_mode](self, args)
        head = [self.file, subcommand]
        if subcommand == "error":
            head.append(str(1 if exit_code is None else exit_code))
        context: dict[str, object] = {ARGV: [*head, *tokens]}
        if stdin is not None:
            context[STDIN] = stdin
        config = config or {}
        directory = config.get(CWD)
        if isinstance(directory, str) and directory:
            context[CWD] = directory
        for key in self.config_keys:
            value = config.get(key)
            if isinstance(value, bool):
                context[f"env:{config_variable(key)}"] = "true" if value else "false"
            elif isinstance(value, (str, int, float)):  # lists and objects are not passed
                context[f"env:{config_variable(key)}"] = str(value)
        if timed_out is not None:
            context["env:AGENT_TOOL_TIMED_OUT"] = "1"
            context["env:AGENT_TOOL_TIMEOUT_SECONDS"] = f"{timed_out:g}"
        return self.handle.prepare(args, policy, context=context, credential=credential)

    def check_unchanged(self) -> None:
        """What runs is the file whose schema was checked (and whose plan an
        approver saw): an edited or replaced file is refused until reloaded.
        Checked when a call is prepared and again right before it runs, after
        the approver's answer. Raises a :class:`~command_handle.errors.CommandError`."""
        if not self.digest:
            return
        try:
            # Without blocking: a FIFO put in the file's place must not hang the call.
            fd = os.open(self.file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
            with open(fd, "rb") as script:
                regular = stat.S_ISREG(os.fstat(fd).st_mode)
                read = script.read(_MAX_SCRIPT + 1) if regular else b""
                current = hashlib.sha256(read).hexdigest() if regular else ""
        except OSError:
            current = ""
        if current != self.digest:
            raise CommandError(
                "the tool's file changed or went away since it was loaded; load the tools "
                "again to run the new version",
                "/command",
            )


_MAX_SCRIPT = 1 << 20


def parse_schema(
    text: str,
    file: str,
    *,
    timeout: float | None = None,
    python: str | None = None,
    digest: str = "",
) -> BashTool:
    """The tool ``file`` describes with ``text`` (what ``bash FILE schema``
    printed), every rule of the contract checked. ``timeout`` is the
    configuration's ``bash_timeout_seconds``. Raises :class:`BashToolError`."""
    if not text.strip():
        raise BashToolError("`schema` printed nothing; it must print the tool's JSON object")
    try:
        schema = _json.loads(text)
    except _json.JSONDecodeError as exc:
        raise BashToolError(f"`schema` did not print valid JSON: {exc.message}") from None
    if not isinstance(schema, dict):
        raise BashToolError("`schema` must print a JSON object")
    for key in ("id", "version", "args_mode", "tools"):
        if key not in schema:
            raise BashToolError(f"the schema has no {key!r}, which is required", f"/{key}")
    tool_id, version, args_mode = schema["id"], schema["version"], schema["args_mode"]
    if not isinstance(tool_id, str) or not _NAME.fullmatch(tool_id):
        raise BashToolError("id must be a tool name: 1 to 64 of A-Z a-z 0-9 _ -", "/id")
    if not isinstance(version, str):
        raise BashToolError("version must be a string", "/version")
    if args_mode not in modes.MODES:
        raise BashToolError(
            f"args_mode must be one of {', '.join(sorted(modes.MODES))}", "/args_mode"
        )
    function = _function(schema["tools"], tool_id)
    parameters = function.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        raise BashToolError(
            'parameters must be a JSON Schema with type: "object"', "/tools/0/function/parameters"
        )
    description = function.get("description", "")
    if not isinstance(description, str):
        raise BashToolError("description must be a string", "/tools/0/function/description")
    properties = parameters.get("properties", {})
    names = frozenset(properties) if isinstance(properties, dict) else frozenset()
    positional = modes.check_schema(args_mode, schema, names)
    config_keys = _strings(schema, "config_keys")
    options_allowed = frozenset(_strings(schema, "options_allowed"))
    for index, name in enumerate(sorted(options_allowed - names)):
        raise BashToolError(
            f"options_allowed names {name!r}, which is no parameter", f"/options_allowed/{index}"
        )
    document: dict[str, Any] = {
        "name": tool_id,
        "description": description,
        "handle": "command",
        "parameters": parameters,
        "command": "bash",
        "arguments": {"$context": ARGV},
        "directory": {"$context": CWD},
        "environment": _environment(schema, config_keys, python or sys.executable),
        "io": {"stdin": {"$context": STDIN}},
    }
    if timeout is not None:
        document["timeout"] = timeout
    if "security" in schema:
        document["security"] = schema["security"]
    if "session" in schema:  # an extension: the script may outlive its call
        document["session"] = schema["session"]
    try:
        handle = CommandHandle.from_dict(document)
    except HandleError as exc:
        pointer = exc.pointer
        if pointer.startswith("/parameters"):
            pointer = "/tools/0/function" + pointer
        raise BashToolError(exc.message, pointer) from None
    return BashTool(
        file=file,
        id=tool_id,
        version=version,
        args_mode=args_mode,
        description=description,
        parameters=parameters,
        positional=positional,
        config_keys=config_keys,
        options_allowed=options_allowed,
        handle=handle,
        schema=schema,
        digest=digest,
    )


def _function(tools: object, tool_id: str) -> dict[str, Any]:
    if not isinstance(tools, list) or len(tools) != 1:
        count = len(tools) if isinstance(tools, list) else "no list of"
        raise BashToolError(
            f"a bash tool file describes exactly one tool; tools has {count}", "/tools"
        )
    tool = tools[0]
    if not isinstance(tool, dict) or tool.get("type") != "function":
        raise BashToolError('the tool must be {"type": "function", "function": {...}}', "/tools/0")
    function = tool.get("function")
    if not isinstance(function, dict):
        raise BashToolError("the tool has no function object", "/tools/0/function")
    name = function.get("name")
    if name != tool_id:
        raise BashToolError(
            f"the function's name {name!r} must equal the schema's id {tool_id!r}",
            "/tools/0/function/name",
        )
    return function


def _strings(schema: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = schema.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise BashToolError(f"{key} must be a list of non-empty strings", f"/{key}")
    return tuple(value)


def _environment(
    schema: Mapping[str, Any], config_keys: Sequence[str], python: str
) -> dict[str, Any]:
    """The variables every subcommand gets: ``AGENT_TOOL_*`` from the plugin
    layer, and the schema's ``environment`` (an extension): text it writes, or
    ``{"$credential": FIELD}`` from the application's resolver."""
    environment: dict[str, Any] = {"AGENT_TOOL_PYTHON": python}
    for name in ("AGENT_TOOL_TIMED_OUT", "AGENT_TOOL_TIMEOUT_SECONDS"):
        environment[name] = {"$context": f"env:{name}"}
    for index, key in enumerate(config_keys):
        variable = config_variable(key)
        if not _VARIABLE.fullmatch(variable) or variable == "AGENT_TOOL_CONFIG_":
            raise BashToolError(
                f"config key {key!r} gives no variable name", f"/config_keys/{index}"
            )
        environment[variable] = {"$context": f"env:{variable}"}
    declared = schema.get("environment", {})
    if not isinstance(declared, dict):
        raise BashToolError("environment must be an object of variables", "/environment")
    for name, value in declared.items():
        pointer = f"/environment/{name}"
        if not isinstance(name, str) or not _VARIABLE.fullmatch(name) or name.startswith(_RESERVED):
            raise BashToolError(
                f"{name!r} is not a variable a tool may set (a name, not AGENT_TOOL_*)", pointer
            )
        credential = isinstance(value, dict) and list(value) == ["$credential"]
        if not ((isinstance(value, str) and "{{" not in value) or credential):
            raise BashToolError(
                'a variable is text (without "{{"), or {"$credential": FIELD} from the application',
                pointer,
            )
        environment[name] = value
    return environment
