"""``UtcpClient``: the documented surface of the ``utcp`` package's client, for
CLI manuals, running on this project's core.

A manual call template is discovered (its commands run under the Policy, and
print a UTCP manual); its CLI tools are registered as ``manual.tool``; a call
is checked and run by :func:`~command_handle.utcp.call`, with no shell.
Variables come from the configuration's ``variables`` and ``dotenv`` files,
read at each call, never from the host environment.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import HandleError
from ..plan import substitute_variables
from ..policy import Policy
from ._models import (
    CliCallTemplate,
    LegacyCliProvider,
    ToolNotFoundError,
    UtcpLoadError,
    UtcpManual,
    UtcpTool,
    load,
)

if TYPE_CHECKING:
    from ..executor import Executor

__all__ = [
    "MAX_VARIABLES_FILE",
    "DotEnvVariableLoader",
    "dotenv_variables",
    "manual_name",
    "namespaced_variables",
    "FilterDictPostProcessor",
    "InMemToolRepository",
    "LimitStringsPostProcessor",
    "ProtocolNotAllowedError",
    "RegisterManualResult",
    "TagAndDescriptionWordMatchStrategy",
    "ToolPostProcessorConfigSerializer",
    "UnknownToolError",
    "UtcpClient",
    "UtcpClientConfig",
    "VariableLoaderSerializer",
]

log = logging.getLogger("command_handle")

ManualTemplate = CliCallTemplate | LegacyCliProvider


class UnknownToolError(ToolNotFoundError, ValueError):
    """No registered tool has that name (a ValueError, as ``utcp`` raises)."""


class ProtocolNotAllowedError(HandleError, ValueError):
    """The tool's communication protocol is not allowed by its manual, or not run here."""


class DotEnvVariableLoader(BaseModel):
    """``{"variable_loader_type": "dotenv", "env_file_path": ".env"}``: variables
    from a dotenv file, read with python-dotenv each time a variable is needed,
    so an edited file takes effect at the next call. A relative path is
    relative to the client's ``root_dir``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    variable_loader_type: Literal["dotenv"] = "dotenv"
    env_file_path: str

    def values(self, root_dir: str = ".") -> dict[str, str]:
        return dotenv_variables(Path(root_dir, self.env_file_path))

    def get(self, key: str) -> str | None:
        return self.values().get(key)


MAX_VARIABLES_FILE = 1 << 20
"""The largest dotenv file read (bytes): it is read at each call."""


def dotenv_variables(path: str | os.PathLike[str]) -> dict[str, str]:
    """The variables of a dotenv file (python-dotenv's format; no interpolation
    from the host environment). Raises :class:`UtcpLoadError` naming the file
    when it cannot be read, is not a regular file (a FIFO would block every
    call, a device never end) or is larger than :data:`MAX_VARIABLES_FILE`."""
    import io
    import stat

    from dotenv import dotenv_values

    where = os.fspath(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(descriptor, "rb") as stream:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                raise UtcpLoadError(f"the variables file {where!r} is not a regular file")
            data = stream.read(MAX_VARIABLES_FILE + 1)
        if len(data) > MAX_VARIABLES_FILE:
            raise UtcpLoadError(
                f"the variables file {where!r} is larger than {MAX_VARIABLES_FILE} bytes"
            )
        values = dotenv_values(stream=io.StringIO(data.decode("utf-8")), interpolate=False)
    except OSError as exc:
        raise UtcpLoadError(
            f"cannot read the variables file {where!r}: {exc.strerror or exc}"
        ) from None
    except UnicodeDecodeError as exc:
        raise UtcpLoadError(f"cannot read the variables file {where!r}: {exc}") from None
    return {key: value for key, value in values.items() if value is not None}


class InMemToolRepository(BaseModel):
    """``{"tool_repository_type": "in_memory"}``: the only repository: the client's own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_repository_type: Literal["in_memory"] = "in_memory"


class TagAndDescriptionWordMatchStrategy(BaseModel):
    """``utcp``'s default search: each tag found in the query scores ``tag_weight``,
    each description word (over two letters) found in it ``description_weight``;
    tools are ranked by score (zero included, last), the order kept among equals."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_search_strategy_type: Literal["tag_and_description_word_match"] = (
        "tag_and_description_word_match"
    )
    description_weight: float = 1
    tag_weight: float = 3

    def search(
        self, tools: list[UtcpTool], query: str, limit: int, tags: list[str] | None
    ) -> list[UtcpTool]:
        if limit < 0:
            raise ValueError("limit must be non-negative")
        lowered = query.lower()
        words = set(re.findall(r"\w+", lowered))
        if tags:
            wanted = {tag.lower() for tag in tags}
            tools = [tool for tool in tools if any(tag.lower() in wanted for tag in tool.tags)]
        scored: list[tuple[float, int, UtcpTool]] = []
        for order, tool in enumerate(tools):
            score = 0.0
            for tag in tool.tags:
                tag = tag.lower()
                if tag in lowered or set(re.findall(r"\w+", tag)) & words:
                    score += self.tag_weight
            for word in set(re.findall(r"\w+", tool.description.lower())):
                if word in words and len(word) > 2:
                    score += self.description_weight
            scored.append((-score, order, tool))
        return [tool for _, _, tool in sorted(scored, key=lambda item: item[:2])][:limit]


class _Selection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    exclude_tools: list[str] | None = None
    only_include_tools: list[str] | None = None
    exclude_manuals: list[str] | None = None
    only_include_manuals: list[str] | None = None

    def applies(self, tool: str, manual: str) -> bool:
        if self.exclude_tools and tool in self.exclude_tools:
            return False
        if self.only_include_tools and tool not in self.only_include_tools:
            return False
        if self.exclude_manuals and manual in self.exclude_manuals:
            return False
        return not (self.only_include_manuals and manual not in self.only_include_manuals)


class FilterDictPostProcessor(_Selection):
    """``filter_dict``: keys removed from (``exclude_keys``) or kept in
    (``only_include_keys``) a JSON result, at every depth, as ``utcp`` does."""

    tool_post_processor_type: Literal["filter_dict"] = "filter_dict"
    exclude_keys: list[str] | None = None
    only_include_keys: list[str] | None = None

    def post_process(self, tool: str, manual: str, result: Any) -> Any:
        if not self.applies(tool, manual):
            return result
        if self.exclude_keys:
            result = self._exclude(result, set(self.exclude_keys))
        if self.only_include_keys:
            result = self._include(result, set(self.only_include_keys))
        return result

    def _exclude(self, value: Any, keys: set[str]) -> Any:
        if isinstance(value, dict):
            return {k: self._exclude(v, keys) for k, v in value.items() if k not in keys}
        if isinstance(value, list):
            items = [self._exclude(item, keys) for item in value]
            return [item for item in items if not (isinstance(item, (dict, list)) and not item)]
        return value

    def _include(self, value: Any, keys: set[str]) -> Any:
        if isinstance(value, dict):
            kept: dict[str, Any] = {}
            for key, item in value.items():
                if key in keys:
                    kept[key] = self._include(item, keys) if isinstance(item, dict) else item
                else:
                    inner = self._include(item, keys)
                    if isinstance(inner, (dict, list)) and inner:
                        kept[key] = inner
            return kept
        if isinstance(value, list):
            items = [self._include(item, keys) for item in value]
            return [item for item in items if isinstance(item, (dict, list)) and item]
        return value


class LimitStringsPostProcessor(_Selection):
    """``limit_strings``: every string of the result cut to ``limit`` characters."""

    tool_post_processor_type: Literal["limit_strings"] = "limit_strings"
    limit: int = Field(default=10000, ge=0)

    def post_process(self, tool: str, manual: str, result: Any) -> Any:
        if not self.applies(tool, manual):
            return result
        return self._cut(result)

    def _cut(self, value: Any) -> Any:
        if isinstance(value, str):
            return value[: self.limit]
        if isinstance(value, list):
            return [self._cut(item) for item in value]
        if isinstance(value, dict):
            return {key: self._cut(item) for key, item in value.items()}
        return value


PostProcessor = Annotated[
    FilterDictPostProcessor | LimitStringsPostProcessor,
    Field(discriminator="tool_post_processor_type"),
]


def _manual_template(value: object, where: str) -> ManualTemplate:
    """A manual call template: a CLI template (or utcp-cli 1.0's ``command_name``
    form). Another protocol is refused by name, not skipped."""
    if isinstance(value, (CliCallTemplate, LegacyCliProvider)):
        return value
    if isinstance(value, BaseModel):  # a template object of another package
        value = value.model_dump()
    if not isinstance(value, dict):
        raise UtcpLoadError("a manual call template must be an object", where)
    kind = value.get("call_template_type", value.get("provider_type"))
    if kind != "cli":
        raise UtcpLoadError(
            f"the manual call template {value.get('name')!r} uses the communication protocol "
            f"{kind!r}; only 'cli' manuals run here",
            f"{where}/call_template_type",
        )
    try:
        loaded = load(value)
    except UtcpLoadError as exc:
        raise UtcpLoadError(exc.message, where + exc.pointer) from None
    assert isinstance(loaded, (CliCallTemplate, LegacyCliProvider))
    return loaded


class UtcpClientConfig(BaseModel):
    """The client's configuration, as ``utcp``'s ``UtcpClientConfig``. Unknown
    fields and other kinds of repository, search strategy, loader or post
    processor are refused with their pointer."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    variables: dict[str, str] | None = Field(default_factory=dict)
    load_variables_from: list[DotEnvVariableLoader] | None = None
    tool_repository: InMemToolRepository = Field(default_factory=InMemToolRepository)
    tool_search_strategy: TagAndDescriptionWordMatchStrategy = Field(
        default_factory=TagAndDescriptionWordMatchStrategy
    )
    post_processing: list[PostProcessor] = Field(default_factory=list)
    manual_call_templates: list[Any] = Field(default_factory=list)

    @field_validator("manual_call_templates", mode="before")
    @classmethod
    def _templates(cls, value: object) -> list[ManualTemplate]:
        if not isinstance(value, list):
            raise ValueError("manual_call_templates must be an array")
        return [
            _manual_template(item, f"/manual_call_templates/{index}")
            for index, item in enumerate(value)
        ]

    @classmethod
    def from_source(cls, config: object) -> UtcpClientConfig:
        """The configuration from an object, a dict or a JSON file's path."""
        if config is None:
            return cls()
        if isinstance(config, UtcpClientConfig):
            return config
        if isinstance(config, (str, os.PathLike)):
            path = Path(config)
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise UtcpLoadError(
                    f"cannot read the client configuration {str(path)!r}: {exc}"
                ) from None
            config = document
        if not isinstance(config, dict):
            raise UtcpLoadError("the client configuration must be an object")
        try:
            return cls.model_validate(config)
        except UtcpLoadError:
            raise
        except ValidationError as exc:
            error = exc.errors()[0]
            pointer = "".join(f"/{part}" for part in error["loc"])
            cause = (error.get("ctx") or {}).get("error")
            if isinstance(cause, UtcpLoadError):
                raise UtcpLoadError(cause.message, cause.pointer) from None
            message = str(error["msg"]).removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                message = "unknown field"
            raise UtcpLoadError(f"invalid client configuration: {message}", pointer) from None


class VariableLoaderSerializer:
    """``utcp``'s serializer for ``load_variables_from`` entries."""

    def validate_dict(self, data: dict[str, Any]) -> DotEnvVariableLoader:
        if data.get("variable_loader_type") != "dotenv":
            raise UtcpLoadError(
                f"variable_loader_type {data.get('variable_loader_type')!r}: only 'dotenv' "
                "is supported",
                "/variable_loader_type",
            )
        return DotEnvVariableLoader.model_validate(data)

    def to_dict(self, obj: DotEnvVariableLoader) -> dict[str, Any]:
        return obj.model_dump()


class ToolPostProcessorConfigSerializer:
    """``utcp``'s serializer for ``post_processing`` entries."""

    def validate_dict(
        self, data: dict[str, Any]
    ) -> FilterDictPostProcessor | LimitStringsPostProcessor:
        kind = data.get("tool_post_processor_type")
        if kind == "filter_dict":
            return FilterDictPostProcessor.model_validate(data)
        if kind == "limit_strings":
            return LimitStringsPostProcessor.model_validate(data)
        raise UtcpLoadError(
            f"tool_post_processor_type {kind!r}: 'filter_dict' and 'limit_strings' are supported",
            "/tool_post_processor_type",
        )

    def to_dict(self, obj: BaseModel) -> dict[str, Any]:
        return obj.model_dump()


class RegisterManualResult(BaseModel):
    """What registering a manual gave: its tools (named ``manual.tool``), and errors."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    manual_call_template: Any
    manual: UtcpManual
    success: bool
    errors: list[str] = Field(default_factory=list)


def manual_name(name: str) -> str:
    """The name a manual is registered under, as ``utcp`` makes it: every
    character other than a letter, digit or ``_`` becomes ``_``."""
    return re.sub(r"[^\w]", "_", name)


def namespaced_variables(
    namespace: str,
    variables: Mapping[str, str],
    loaded: Sequence[Mapping[str, str]],
    others: Iterable[str] = (),
) -> dict[str, str]:
    """The variables a manual's templates see: ``<manual with _ doubled>_NAME``
    from the configuration (first) or a dotenv file, as ``NAME``; then the
    other names as they are, except those namespaced for the ``others``
    manuals: one manual never reads another's.

    UTCP's doubling is not one-to-one on prefixes: ``a__b_TOKEN`` is manual
    ``a_b``'s ``TOKEN`` and also manual ``a``'s ``_b_TOKEN``. A name belongs to
    the known manual with the longest prefix it starts with, so ``a`` never
    reads ``a_b``'s variables."""
    prefixes = {name: name.replace("_", "__") + "_" for name in {*others, namespace} if name}

    def owner(key: str) -> str | None:
        matching = [name for name, prefix in prefixes.items() if key.startswith(prefix)]
        matching = [name for name in matching if len(key) > len(prefixes[name])]
        return max(matching, key=lambda name: len(prefixes[name]), default=None)

    sources = [variables, *loaded]
    out: dict[str, str] = {}
    for source in reversed(sources):  # earlier sources win
        out.update({key: value for key, value in source.items() if owner(key) in (None, namespace)})
    if not namespace:
        return out
    own = prefixes[namespace]
    for source in reversed(sources):  # and a namespaced name wins over a bare one
        for key, value in source.items():
            if owner(key) == namespace:
                out[key[len(own) :]] = value
    return out


class _Registered:
    """A registered manual: its template, its tools, and its foreign tools' protocols."""

    def __init__(
        self,
        name: str,
        template: ManualTemplate,
        tools: dict[str, UtcpTool],
        foreign: dict[str, str],
    ) -> None:
        self.name = name
        self.template = template
        self.tools = tools
        self.foreign = foreign

    @property
    def allowed(self) -> list[str]:
        own = (
            self.template.allowed_communication_protocols
            if isinstance(self.template, CliCallTemplate)
            else None
        )
        return list(own or ["cli"])


class UtcpClient:
    """``utcp``'s ``UtcpClient`` for CLI manuals: ``await UtcpClient.create(config=...)``,
    then ``call_tool("manual.tool", args)``. Every call is checked and run under
    ``policy`` (the default :class:`~command_handle.Policy` unless given), with
    no shell. Works under asyncio and trio."""

    def __init__(
        self,
        config: UtcpClientConfig,
        root_dir: str | None = None,
        *,
        policy: Policy | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.config = config
        self.root_dir = root_dir or os.getcwd()
        self.policy = executor.policy if executor is not None else policy or Policy()
        self._executor = executor
        self._manuals: dict[str, _Registered] = {}

    @classmethod
    async def create(
        cls,
        root_dir: str | None = None,
        config: str | os.PathLike[str] | dict[str, Any] | UtcpClientConfig | None = None,
        *,
        policy: Policy | None = None,
        executor: Executor | None = None,
    ) -> UtcpClient:
        """A client from ``config`` (an object, a dict or a JSON file's path), with
        every manual of ``manual_call_templates`` registered. Raises
        :class:`UtcpLoadError` (naming the field, or the manual and why) when the
        configuration is wrong or a manual cannot be registered."""
        client = cls(
            UtcpClientConfig.from_source(config), root_dir, policy=policy, executor=executor
        )
        for template in client.config.manual_call_templates:
            result = await client.register_manual(template)
            if not result.success:
                raise UtcpLoadError(
                    f"the manual {result.manual_call_template.name!r} could not be registered: "
                    + "; ".join(result.errors)
                )
        return client

    @property
    def executor(self) -> Executor:
        if self._executor is None:
            from ..executor import Executor

            self._executor = Executor(self.policy)
        return self._executor

    # -- variables ---------------------------------------------------------------

    def _variables(self, manual: str) -> dict[str, str]:
        loaded = [loader.values(self.root_dir) for loader in self.config.load_variables_from or []]
        others = {*self._manuals, *(manual_name(t.name) for t in self.config.manual_call_templates)}
        return namespaced_variables(manual, self.config.variables or {}, loaded, others)

    # -- manuals -----------------------------------------------------------------

    async def register_manual(self, manual_call_template: Any) -> RegisterManualResult:
        """Run the template's discovery commands under the Policy and register the
        CLI tools of the manual they print, as ``<manual>.<tool>``. Tools of a
        protocol the manual does not allow (``allowed_communication_protocols``,
        by default its own) are left out with a warning, as in ``utcp``; tools of
        an allowed protocol other than ``cli`` are registered by name only, and
        calling one raises an error naming its protocol. Raises when the name is
        taken or a check refuses the discovery (a missing variable, the Policy);
        a discovery that prints no manual gives ``success=False`` and the reason."""
        template = _manual_template(manual_call_template, "")
        name = manual_name(template.name)
        template = template.model_copy(update={"name": name})
        if name in self._manuals:
            raise UtcpLoadError(
                f"Manual {name} already registered, please use a different name or "
                "deregister the existing manual"
            )
        from ._api import manual_from_output, run

        variables = self._variables(name)
        _check_variables(template, name, variables)
        result = await run(template, {}, variables=variables, executor=self.executor)
        found = manual_from_output(result.output)
        if found is None:
            own = template.timeout_seconds
            limit = self.policy.timeout if own is None else min(self.policy.timeout, own)
            why = (
                f"the discovery commands timed out after {limit:g} s"
                if result.timed_out
                else "the discovery commands printed no UTCP manual or tool"
            )
            return RegisterManualResult(
                manual_call_template=template,
                manual=UtcpManual(manual_version="0.0.0"),
                success=False,
                errors=[why],
            )
        manual = found
        registered = _Registered(name, template, {}, {})
        allowed = registered.allowed
        errors: list[str] = []
        for skipped in manual.skipped:
            full = _full_name(name, skipped.name)
            if skipped.call_template_type not in allowed:
                log.warning(
                    "Tool %r uses communication protocol %r which is not in allowed protocols "
                    "%s for manual %r. Tool will not be registered.",
                    skipped.name,
                    skipped.call_template_type,
                    allowed,
                    name,
                )
                continue
            registered.foreign[full] = skipped.call_template_type
            errors.append(f"{full}: {skipped.reason}")
        for tool in manual.tools:
            if "cli" not in allowed:
                log.warning(
                    "Tool %r uses communication protocol 'cli' which is not in allowed "
                    "protocols %s for manual %r. Tool will not be registered.",
                    tool.name,
                    allowed,
                    name,
                )
                continue
            full = _full_name(name, tool.name)
            registered.tools[full] = tool.model_copy(update={"name": full})
        self._manuals[name] = registered
        shown = manual.model_copy(update={"tools": list(registered.tools.values())})
        return RegisterManualResult(
            manual_call_template=template, manual=shown, success=True, errors=errors
        )

    async def register_manuals(
        self, manual_call_templates: list[Any]
    ) -> list[RegisterManualResult]:
        return [await self.register_manual(template) for template in manual_call_templates]

    async def deregister_manual(self, manual_call_template_name: str) -> bool:
        """Remove a manual and its tools; False when no manual has that name."""
        return self._manuals.pop(manual_name(manual_call_template_name), None) is not None

    # -- tools -------------------------------------------------------------------

    def _find(self, tool_name: str) -> tuple[_Registered, UtcpTool]:
        manual = self._manuals.get(tool_name.split(".")[0])
        if manual is not None:
            tool = manual.tools.get(tool_name)
            if tool is not None:
                return manual, tool
            protocol = manual.foreign.get(tool_name)
            if protocol is not None:
                raise ProtocolNotAllowedError(
                    f"Tool '{tool_name}' uses communication protocol '{protocol}', which is not "
                    "run here: only 'cli' tools run"
                )
        raise UnknownToolError(f"Tool not found: {tool_name}")

    async def call_tool(self, tool_name: str, tool_args: dict[str, Any]) -> Any:
        """Call ``manual.tool`` with ``tool_args``: validated against its ``inputs``,
        checked under the Policy, run with no shell; the output text or its
        parsed JSON, after ``post_processing``. Raises :class:`UnknownToolError`
        (a ValueError) for an unknown tool, a
        :class:`~command_handle.errors.HandleError` when a check refuses the call
        (nothing ran), and :class:`TimeoutError` when the call times out."""
        manual, tool = self._find(tool_name)
        protocol = "cli"  # the only protocol a registered tool can have
        if protocol not in manual.allowed:  # a manual changed after registration
            raise ProtocolNotAllowedError(
                f"Tool '{tool_name}' uses communication protocol '{protocol}' which is not "
                f"allowed by manual '{manual.name}'. Allowed protocols: {manual.allowed}"
            )
        from ._api import call

        variables = self._variables(manual.name)
        _check_variables(tool.template, manual.name, variables)
        result = await call(tool, tool_args, variables=variables, executor=self.executor)
        for processor in self.config.post_processing:
            result = processor.post_process(tool_name, manual.name, result)
        return result

    async def call_tool_streaming(
        self, tool_name: str, tool_args: dict[str, Any]
    ) -> AsyncGenerator[Any, None]:
        """As utcp-cli: the whole result, once."""
        yield await self.call_tool(tool_name, tool_args)

    async def search_tools(
        self, query: str, limit: int = 10, any_of_tags_required: list[str] | None = None
    ) -> list[UtcpTool]:
        """The registered tools ranked by ``tool_search_strategy`` for ``query``."""
        tools = [tool for manual in self._manuals.values() for tool in manual.tools.values()]
        return self.config.tool_search_strategy.search(tools, query, limit, any_of_tags_required)

    async def get_required_variables_for_manual_and_tools(
        self, manual_call_template: Any
    ) -> list[str]:
        """The variables a manual template's ``env_vars`` read, namespaced as looked up."""
        template = _manual_template(manual_call_template, "")
        return _required(template, manual_name(template.name))

    async def get_required_variables_for_registered_tool(self, tool_name: str) -> list[str]:
        manual, tool = self._find(tool_name)
        return _required(tool.template, manual.name)

    async def close(self) -> None:
        """Nothing stays open between calls: every process of a call ends with it."""
        self._manuals.clear()


def _check_variables(
    template: CliCallTemplate | LegacyCliProvider, manual: str, variables: Mapping[str, str]
) -> None:
    """Refuse, before anything runs, a template whose ``env_vars`` read a variable
    that is not given, naming it as this client looks it up (namespaced)."""
    from ..errors import EnvironmentVariableError

    values = (
        template.env_vars or {} if isinstance(template, CliCallTemplate) else template.environment
    )
    own = template.name or None  # a template's own name namespaces its lookups too
    for key, value in values.items():
        _, missing = substitute_variables(value, variables, own)
        if missing:
            name = manual.replace("_", "__") + "_" + missing[0]
            raise EnvironmentVariableError(
                f"env_vars/{key} of manual {manual!r} reads the variable {missing[0]!r}, "
                f"which is not given: give {name} (or {missing[0]}) in the configuration's "
                "variables or a load_variables_from file",
                f"/env_vars/{key}",
            )


def _full_name(manual: str, tool: str) -> str:
    return tool if tool.startswith(manual + ".") else f"{manual}.{tool}"


def _required(template: CliCallTemplate | LegacyCliProvider, namespace: str) -> list[str]:
    values = (
        template.env_vars or {} if isinstance(template, CliCallTemplate) else template.environment
    )
    names: list[str] = []
    for value in values.values():
        _, missing = substitute_variables(value, {}, None)
        names += [namespace.replace("_", "__") + "_" + name for name in missing]
    return list(dict.fromkeys(names))
