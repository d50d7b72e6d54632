"""UTCP documents as pydantic models: CLI call templates (1.x), manuals, tools, and
legacy 0.x CLI providers. Loading errors name the bad field as a JSON Pointer."""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from .. import _jsonschema
from .._documents import read_document
from ..errors import HandleLoadError
from ..handle import check_arguments
from ..plan import Plan

__all__ = [
    "CliCallTemplate",
    "CommandStep",
    "LegacyCliProvider",
    "SkippedTool",
    "UtcpLoadError",
    "UtcpManual",
    "UtcpTool",
    "load",
]


log = logging.getLogger("command_handle")


class UtcpLoadError(HandleLoadError):
    """A UTCP document is malformed or not a CLI template; ``pointer`` names the field."""


class ToolNotFoundError(UtcpLoadError, KeyError):
    """A manual has no tool of that name (or skipped it); also a KeyError."""


class CommandStep(BaseModel):
    """One command of a call template. ``working_dir`` (seen in the wild) is a
    ``cd`` at the start of the step; ``description`` is descriptive."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    append_to_final_output: bool | None = None
    working_dir: str | None = None
    description: str | None = None


def _milliseconds(value: float | None) -> float | None:
    """UTCP timeouts are milliseconds; the plan keeps seconds."""
    if value is None:
        return None
    if value <= 0:
        raise ValueError("timeout must be a positive number of milliseconds")
    return value / 1000


class _Cached(BaseModel):
    _plan: Plan | None = PrivateAttr(default=None)


class CliCallTemplate(_Cached):
    """A UTCP 1.x CLI call template (``call_template_type: "cli"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(default_factory=lambda: uuid.uuid4().hex)
    call_template_type: Literal["cli"]
    commands: list[CommandStep] = Field(min_length=1)
    env_vars: dict[str, str] | None = None
    inherit_env_vars: list[str] | None = None
    working_dir: str | None = None
    auth: None = None
    allowed_communication_protocols: list[str] | None = None
    timeout: float | None = Field(default=None, description="milliseconds; the policy caps it")
    description: str | None = None
    tags: list[str] | None = None

    @field_validator("timeout")
    @classmethod
    def _positive_timeout(cls, value: float | None) -> float | None:
        _milliseconds(value)  # refused at load, not at the first call
        return value

    @property
    def timeout_seconds(self) -> float | None:
        return _milliseconds(self.timeout)


class LegacyCliProvider(_Cached):
    """A UTCP 0.x CLI provider: ``command_name`` with the arguments appended as flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(default_factory=lambda: uuid.uuid4().hex)
    provider_type: Literal["cli"]
    command_name: str = Field(min_length=1)
    env_vars: dict[str, str] | None = None
    working_dir: str | None = None
    auth: None = None
    # Fields seen in the wild (docs/utcp.md, "Fields beyond the documented ones").
    env: dict[str, str] | None = None
    timeout: float | None = Field(default=None, description="milliseconds; the policy caps it")
    output_format: Literal["json", "text"] | None = None
    # UTCP 0.1's documented styles (utcp-cli's 0.x code ignored the field and
    # always ran "named"): how the arguments reach the program.
    param_style: Literal["named", "positional", "json", "json_stdin"] | None = None
    execute_command: None = None
    description: str | None = None
    tags: list[str] | None = None

    @field_validator("execute_command", mode="before")
    @classmethod
    def _execute_command(cls, value: object) -> None:
        if value is not None:
            raise ValueError(
                "execute_command (go-utcp) runs a command whose meaning utcp-cli does not "
                "define; use command_name"
            )
        return None

    @model_validator(mode="after")
    def _one_environment(self) -> LegacyCliProvider:
        both = set(self.env or {}) & set(self.env_vars or {})
        if both:
            raise ValueError(f"env and env_vars both set {sorted(both)[0]!r}; keep one")
        return self

    @property
    def environment(self) -> dict[str, str]:
        """``env_vars``, and 0.x's ``env``, which meant the same."""
        return {**(self.env or {}), **(self.env_vars or {})}

    @field_validator("timeout")
    @classmethod
    def _positive_timeout(cls, value: float | None) -> float | None:
        _milliseconds(value)  # refused at load, not at the first call
        return value

    @property
    def timeout_seconds(self) -> float | None:
        return _milliseconds(self.timeout)


class UtcpTool(BaseModel):
    """A tool of a manual whose call template is a CLI template (1.x or legacy).

    ``inputs`` is checked as a JSON Schema when the tool is loaded, and the
    arguments of every call are validated against it before anything runs.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    inputs: dict[str, Any] = Field(default_factory=dict)
    outputs: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    average_response_size: int | None = None
    tool_call_template: CliCallTemplate | None = None
    tool_provider: LegacyCliProvider | None = None
    _validator: Any = PrivateAttr(default=None)

    @field_validator("inputs", "outputs")
    @classmethod
    def _schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            _jsonschema.check_schema(value)
        except _jsonschema.load().SchemaError as exc:  # evaluated only on a refusal
            where = "".join(f"/{part}" for part in exc.path)
            raise ValueError(f"not a valid JSON Schema at {where or '/'}: {exc.message}") from None
        return value

    @model_validator(mode="after")
    def _one_template(self) -> UtcpTool:
        if (self.tool_call_template is None) == (self.tool_provider is None):
            raise ValueError("give exactly one of tool_call_template or tool_provider")
        self._validator = _jsonschema.ArgumentsValidator(self.inputs, format_assertion=False)
        return self

    @property
    def template(self) -> CliCallTemplate | LegacyCliProvider:
        template = self.tool_call_template or self.tool_provider
        assert template is not None
        return template

    def validate_arguments(self, args: object) -> None:
        """Raise :class:`~command_handle.errors.ArgumentsError` unless ``args`` fits ``inputs``."""
        check_arguments(self._validator, args)


class SkippedTool(BaseModel):
    """A manual's tool that is not run here, and why."""

    model_config = ConfigDict(frozen=True)

    name: str
    call_template_type: str
    reason: str


class UtcpManual(BaseModel):
    """A UTCP manual: its CLI tools, and the tools skipped with the reason."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    manual_version: str = "1.0.0"
    utcp_version: str = "1.0.0"
    tools: list[UtcpTool] = Field(default_factory=list)
    skipped: list[SkippedTool] = Field(default_factory=list)

    def tool(self, name: str) -> UtcpTool:
        """The CLI tool called ``name`` (a ``manual.tool`` prefix is accepted)."""
        short = name.rpartition(".")[2]
        for tool in self.tools:
            if tool.name in (name, short) or tool.name.rpartition(".")[2] == short:
                return tool
        skipped = next((s for s in self.skipped if s.name == name), None)
        if skipped is not None:
            raise ToolNotFoundError(f"the tool {name!r} was skipped: {skipped.reason}")
        raise ToolNotFoundError(f"the manual has no CLI tool named {name!r}")


def _errors(exc: ValidationError, prefix: str = "") -> UtcpLoadError:
    problems = []
    first = ""
    for error in exc.errors():
        loc = [part for part in error["loc"] if not str(part).startswith("function-")]
        pointer = prefix + "".join(f"/{part}" for part in loc)
        first = first or pointer
        if error["type"] == "extra_forbidden":
            message = f"unknown field {str(loc[-1])!r}"
        elif error["type"] == "missing":
            message = f"missing field {str(loc[-1])!r}"
        elif (
            error["type"] == "literal_error"
            and loc
            and loc[-1]
            in (
                "call_template_type",
                "provider_type",
            )
        ):
            message = f"{loc[-1]} must be 'cli'"
        else:
            message = error["msg"].removeprefix("Value error, ")
        problems.append(f"{pointer or '/'}: {message}")
    return UtcpLoadError("invalid UTCP document: " + "; ".join(problems), first)


def _tool(document: dict[str, Any], pointer: str) -> UtcpTool | SkippedTool:
    template = document.get("tool_call_template")
    provider = document.get("tool_provider")
    kind = None
    if isinstance(template, dict):
        kind = template.get("call_template_type")
    elif isinstance(provider, dict):
        kind = provider.get("provider_type") or provider.get("type")
    if kind is not None and kind != "cli":
        return SkippedTool(
            name=str(document.get("name", "")),
            call_template_type=str(kind),
            reason=f"its call template type is {kind!r}; only 'cli' templates run here",
        )
    if isinstance(template, dict) and "command_name" in template and "commands" not in template:
        # utcp-cli 1.0.x: a CLI call template with command_name runs as 0.x did.
        document = {**document, "tool_provider": _legacy_from_v1(template)}
        document.pop("tool_call_template")
        provider = document["tool_provider"]
    elif isinstance(provider, dict) and "commands" in provider:
        # python-utcp's tests emit a tool_provider with commands: utcp-cli reads it
        # as the call template it is.
        converted = {k: v for k, v in provider.items() if k not in ("provider_type", "type")}
        document = {**document, "tool_call_template": {**converted, "call_template_type": "cli"}}
        document.pop("tool_provider")
        provider = None
    if isinstance(provider, dict) and "provider_type" not in provider and "type" in provider:
        provider = {**provider, "provider_type": provider["type"]}
        provider.pop("type")
        document = {**document, "tool_provider": provider}
    try:
        return UtcpTool.model_validate(document)
    except ValidationError as exc:
        raise _errors(exc, pointer) from None


def _legacy_from_v1(template: dict[str, Any]) -> dict[str, Any]:
    """A utcp-cli 1.0.x call template (``command_name``) as the 0.x provider it runs as."""
    converted = {k: v for k, v in template.items() if k != "call_template_type"}
    return {**converted, "provider_type": "cli"}


def _manual(document: dict[str, Any], *, lenient: bool = False) -> UtcpManual:
    """The manual in ``document``. ``lenient`` (for discovered manuals, as utcp-cli
    reads them): a tool that cannot be loaded is skipped with the reason and a
    warning, instead of failing the whole manual."""
    tools_value = document.get("tools")
    if not isinstance(tools_value, list):
        raise UtcpLoadError("invalid UTCP manual: tools must be an array", "/tools")
    tools: list[UtcpTool] = []
    skipped: list[SkippedTool] = []
    for index, item in enumerate(tools_value):
        where = f"/tools/{index}"
        try:
            if not isinstance(item, dict):
                raise UtcpLoadError("invalid UTCP manual: a tool must be an object", where)
            tool = _tool(item, where)
        except UtcpLoadError as exc:
            if not lenient:
                raise
            name = str(item.get("name", "")) if isinstance(item, dict) else ""
            log.warning("skipping the discovered tool %r: %s", name or where, exc)
            skipped.append(SkippedTool(name=name, call_template_type="cli", reason=str(exc)))
            continue
        (skipped if isinstance(tool, SkippedTool) else tools).append(tool)  # type: ignore[arg-type]
    rest = {k: v for k, v in document.items() if k != "tools"}
    try:
        return UtcpManual.model_validate({**rest, "tools": tools, "skipped": skipped})
    except ValidationError as exc:
        raise _errors(exc) from None


Loaded = CliCallTemplate | LegacyCliProvider | UtcpManual | UtcpTool


def load(source: dict[str, Any] | str | os.PathLike[str]) -> Loaded:
    """Load a CLI call template, a legacy CLI provider, a tool or a manual.

    ``source`` is a dict or a ``.json``/``.yaml`` file. The kind is recognised
    by its fields: ``call_template_type``, ``provider_type``, ``tools``, or
    ``tool_call_template``/``tool_provider``.
    """
    document = source if isinstance(source, dict) else read_document(source, UtcpLoadError)
    if "tools" in document:
        return _manual(document)
    if "tool_call_template" in document or "tool_provider" in document:
        tool = _tool(document, "")
        if isinstance(tool, SkippedTool):
            raise UtcpLoadError(f"the tool {tool.name!r} is skipped: {tool.reason}")
        return tool
    try:
        if "provider_type" in document:
            return LegacyCliProvider.model_validate(document)
        if "call_template_type" in document:
            if "command_name" in document and "commands" not in document:
                return LegacyCliProvider.model_validate(_legacy_from_v1(document))
            return CliCallTemplate.model_validate(document)
    except ValidationError as exc:
        raise _errors(exc) from None
    raise UtcpLoadError(
        "not a UTCP document: expected call_template_type (a call template), provider_type "
        "(a 0.x provider), tools (a manual) or tool_call_template (a tool)"
    )
