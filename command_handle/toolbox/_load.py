"""Loading tools from files and folders, recognised by their content.

A Command Handle has ``handle`` or ``handler``; a UTCP manual has ``tools``; a
UTCP tool has ``tool_call_template`` or ``tool_provider``; a UTCP call template
has ``call_template_type``, a 0.x provider ``provider_type``; a bash tool
plugin's ``agent_plugin.json`` has ``bash_tools``, an application config
``plugins`` or ``plugin_policy``; a ``.bash`` file is a bash tool. Folders are
read recursively, in name order, skipping hidden entries; within them
``.json``, ``.yaml``, ``.yml`` and ``.bash`` files are read, the others are
listed as not tools, and a folder holding ``agent_plugin.json`` is a plugin
whose descriptor says what it holds. A folder that yields no tool is an error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._documents import read_document
from ..errors import HandleError, HandleLoadError
from ..handle import CommandHandle
from ..policy import Policy
from ._tool import NAME_PATTERN, Tool, llm_name

if TYPE_CHECKING:
    from ..utcp import CliCallTemplate, LegacyCliProvider, UtcpManual
    from ._bash import BashLoader
    from ._tool import UtcpSource

    # Runs a manual call template's discovery commands (the manual's name, and the
    # other manuals of its file, whose variables it never reads); returns the manual.
    Discover = Callable[[CliCallTemplate | LegacyCliProvider, str, tuple[str, ...]], UtcpManual]

__all__ = ["SUFFIXES", "ToolLoadError", "is_shortcut", "load_tools", "tool_files"]

SUFFIXES = (".json", ".yaml", ".yml")
BASH_SUFFIX = ".bash"
_DESCRIPTOR = "agent_plugin.json"
_SHORTCUTS = ("bash:", "bash+git:")
_LISTED_OTHERS = 5


class ToolLoadError(HandleLoadError):
    """A file could not be loaded as tools; ``path`` names it, ``pointer`` the field."""

    def __init__(self, path: str, message: str, pointer: str = "") -> None:
        super().__init__(message, pointer)
        self.path = path

    def __str__(self) -> str:
        where = f" (at {self.pointer})" if self.pointer else ""
        return f"{self.path}: {self.message}{where}"


def is_shortcut(given: str | os.PathLike[str]) -> bool:
    """Whether ``given`` is ``bash:PATH`` or ``bash+git:URL#REF`` (not a file)."""
    return isinstance(given, str) and given.startswith(_SHORTCUTS) and not os.path.exists(given)


def tool_files(
    paths: Iterable[str | os.PathLike[str]], others: list[str] | None = None
) -> Iterator[Path]:
    """Each file named, and each tool file under each folder named; the other
    files of those folders go to ``others``, each with why. The shortcuts
    ``bash:`` and ``bash+git:`` are no files: :func:`load_tools` reads them."""
    for given in paths:
        if is_shortcut(given):
            continue
        path = Path(given)
        if path.is_dir():
            yield from _walk(path, others)
        elif path.exists():
            yield path
        else:
            raise ToolLoadError(str(path), "no such file or folder")


def _walk(folder: Path, others: list[str] | None) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        if _DESCRIPTOR in files:  # a plugin folder: its descriptor says what it holds
            dirs[:] = []
            yield Path(root) / _DESCRIPTOR
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            if name.endswith((*SUFFIXES, BASH_SUFFIX)):
                yield Path(root) / name
            elif others is not None:
                others.append(
                    f"{Path(root) / name}: not a tool (only .json, .yaml, .yml and .bash "
                    "files are read)"
                )


def load_tools(
    paths: Iterable[str | os.PathLike[str]],
    *,
    allow_bash_tools: bool = False,
    policy: Policy | None = None,
    plugin_cache: str | os.PathLike[str] | None = None,
    discover: Discover | None = None,
    in_folder: bool = False,
) -> tuple[list[Tool], list[str]]:
    """The tools in ``paths``, and a note for each thing that was not loaded
    (a UTCP tool of another protocol, a file that is no tool), with why.

    A UTCP client configuration (``manual_call_templates``) has each manual
    discovered with ``discover`` (its commands run; they print the manual).

    In a folder (or with ``in_folder``, for files found in one), a JSON or
    YAML document with none of the fields of a tool (``package.json``, a
    ``tsconfig.json``) is noted as not a tool; named alone, it is an error.

    Raises :class:`ToolLoadError` naming the file (and the JSON Pointer) for the
    first file that cannot be loaded, for two tools with one name, and for a
    folder that yields no tool. Bash tools load only with ``allow_bash_tools``
    (or the ``plugin_policy`` of a config named in ``paths`` itself, not found
    in a folder); their schema runs under ``policy``. ``in_folder`` says that
    ``paths`` were found in a folder (``validate`` loads them one by one).
    """
    from ._bash import BashLoader

    loader = BashLoader(
        allow_bash_tools, policy or Policy(), None if plugin_cache is None else Path(plugin_cache)
    )
    tools: list[Tool] = []
    skipped: list[str] = []
    seen: dict[str, str] = {}
    for given in paths:
        found: list[Tool] = []
        if is_shortcut(given):
            found = _shortcut_tools(str(given), loader)
        else:
            others: list[str] = []
            notes: list[str] = []
            folder = in_folder or Path(given).is_dir()
            for file in tool_files([given], others):
                # Found in a folder (or loaded as if it were): a document that is
                # no tool is passed over, and a config's own permission to run
                # bash tools does not count (only one the application names does).
                found += _tools_in(file, notes, loader, discover, folder)
            skipped += notes + others
            if not found and Path(given).is_dir():
                raise ToolLoadError(str(given), _no_tool(notes + others))
        for tool in found:
            if tool.name in seen:
                raise ToolLoadError(
                    tool.source,
                    f"a tool named {tool.name!r} is also defined in {seen[tool.name]}; "
                    "tool names must be unique",
                    "/name",
                )
            seen[tool.name] = tool.source
            tools.append(tool)
    return tools, skipped


def _no_tool(notes: list[str]) -> str:
    """Why a folder gave no tool: what was in it."""
    if not notes:
        return "no tool in this folder (it holds no .json, .yaml, .yml or .bash file)"
    shown = "; ".join(notes[:_LISTED_OTHERS])
    more = f"; and {len(notes) - _LISTED_OTHERS} more" if len(notes) > _LISTED_OTHERS else ""
    return f"no tool in this folder: {shown}{more}"


def _shortcut_tools(text: str, loader: BashLoader) -> list[Tool]:
    from ..plugins import BashToolError, shortcut

    try:
        plugin = shortcut(text, os.getcwd())
    except BashToolError as exc:
        raise ToolLoadError(text, exc.message) from None
    assert plugin is not None
    return loader.source(plugin, text)


def _tools_in(
    file: Path,
    skipped: list[str],
    loader: BashLoader,
    discover: Discover | None,
    in_folder: bool = False,
) -> list[Tool]:
    source = str(file)
    try:
        if file.suffix == BASH_SUFFIX:
            return [loader.file(file)]
        document = read_document(file, HandleLoadError)
        if "manual_call_templates" in document:
            return _discovered(document, file, skipped, discover)
        if in_folder and not any(key in document for key in (*_TOOL_FIELDS, *_UTCP_KEYS)):
            skipped.append(
                f"{source}: not a tool (no field of a Command Handle, a UTCP document "
                "or a plugin: it is passed over)"
            )
            return []
        return _from_document(document, file, skipped, loader, named=not in_folder)
    except ToolLoadError:
        raise
    except HandleError as exc:
        raise ToolLoadError(source, exc.message, exc.pointer) from None


# The top-level fields by which a document is meant as a tool, even a broken
# one (a handle that lacks "handler" is an error, not a file to pass over).
_TOOL_FIELDS = (
    "handle",
    "handler",
    "command",
    "arguments",
    "parameters",
    "io",
    "environment",
    "bash_tools",
    "plugins",
    "plugin_policy",
    "manual_call_templates",
    "commands",
    "inputs",
)


def _from_document(
    document: dict[str, Any], file: Path, skipped: list[str], loader: BashLoader, named: bool
) -> list[Tool]:
    source = str(file)
    if "handle" in document or "handler" in document:
        return [Tool.from_handle(CommandHandle.from_dict(document), source)]
    if "bash_tools" in document:
        return loader.descriptor(document, file)
    if "plugins" in document or "plugin_policy" in document:
        return loader.config(document, file, skipped, named=named)
    if not any(key in document for key in _UTCP_KEYS):
        raise ToolLoadError(
            source,
            'not a tool: a Command Handle has "handler": "command"; a UTCP manual has '
            '"tools"; a UTCP tool has "tool_call_template"; a call template has '
            '"call_template_type"; a bash tool plugin\'s agent_plugin.json has "bash_tools"; '
            'an application config has "plugins"; a UTCP client configuration has '
            '"manual_call_templates"',
        )
    from .. import utcp  # the translator (and tree-sitter) loads with the first UTCP file

    loaded = utcp.load(document)
    if isinstance(loaded, utcp.UtcpManual):
        manual = utcp.manual_name(file.stem)
        return _manual_tools(loaded, manual, file.stem, file, skipped, "/tools")
    name = document.get("name")
    return [_utcp_tool(loaded, file, "", name if isinstance(name, str) else None)]


def _manual_tools(
    manual: UtcpManual, name: str, prefix: str, file: Path, skipped: list[str], pointer: str
) -> list[Tool]:
    """A manual's CLI tools, as ``<prefix>_<tool>`` (``utcp_name``: ``<name>.<tool>``)."""
    source = str(file)
    skipped += [f"{source}: {tool.name}: {tool.reason}" for tool in manual.skipped]
    return [
        _utcp_tool(tool, file, f"{pointer}/{index}", manual=name, prefix=prefix)
        for index, tool in enumerate(manual.tools)
    ]


# A UTCP client configuration's fields that a Toolbox takes from its own options.
_CLIENT_ONLY = {
    "variables": "Toolbox.load(variables=...) or --variable NAME=VALUE",
    "load_variables_from": "Toolbox.load(variable_files=[...]) or --variables-file FILE",
    "post_processing": "nothing: the Toolbox shapes results for the model itself",
}


def _discovered(
    document: dict[str, Any], file: Path, skipped: list[str], discover: Discover | None
) -> list[Tool]:
    """The tools of each manual of a UTCP client configuration, discovered now."""
    from .. import utcp

    source = str(file)
    for field, instead in _CLIENT_ONLY.items():
        if document.get(field):
            raise ToolLoadError(
                source,
                f"{field} in a client configuration is for UtcpClient; a Toolbox takes "
                f"it from {instead}",
                f"/{field}",
            )
    config = utcp.UtcpClientConfig.from_source(document)
    if discover is None:
        raise ToolLoadError(source, "manuals need discovery, which this loader cannot run")
    tools: list[Tool] = []
    names = tuple(utcp.manual_name(template.name) for template in config.manual_call_templates)
    for index, template in enumerate(config.manual_call_templates):
        pointer = f"/manual_call_templates/{index}"
        name = names[index]
        try:
            manual = discover(template.model_copy(update={"name": name}), name, names)
        except HandleError as exc:
            raise ToolLoadError(
                source, f"the discovery of manual {name!r} failed: {exc.message}", pointer
            ) from None
        allowed = getattr(template, "allowed_communication_protocols", None) or ["cli"]
        if "cli" not in allowed:  # as UtcpClient filters them at registration
            skipped += [
                f"{source}: {name}.{tool.name}: its protocol 'cli' is not in the manual's "
                f"allowed_communication_protocols {allowed}"
                for tool in manual.tools
            ]
            continue
        tools += _manual_tools(manual, name, name, file, skipped, f"{pointer}/tools")
    return tools


_UTCP_KEYS = ("tools", "tool_call_template", "tool_provider", "call_template_type", "provider_type")


def _utcp_tool(
    item: UtcpSource,
    file: Path,
    pointer: str,
    name: str | None = None,
    manual: str | None = None,
    prefix: str | None = None,
) -> Tool:
    from .. import utcp

    source = str(file)
    try:
        plan = utcp.translate(item)  # a command that is not run is a load error
    except HandleError as exc:
        raise ToolLoadError(source, exc.message, pointer + exc.pointer) from None
    if isinstance(item, utcp.UtcpTool):
        parameters = dict(item.inputs) or {"type": "object", "properties": {}}
        parameters.setdefault("type", "object")
        if parameters["type"] != "object":
            raise ToolLoadError(
                source, 'inputs must be a JSON Schema with type: "object"', pointer + "/inputs"
            )
        tool_name = llm_name(file.stem, item.name)
        description = item.description
    else:
        # A bare template: its placeholders are its parameters, all text, all needed.
        # A bare 0.x provider declares none, and each argument's name would become
        # a flag the model chose (--output PATH): it takes no arguments here;
        # declare them in a manual's inputs.
        names = list(plan.arguments)
        parameters = {
            "type": "object",
            "properties": {arg: {"type": "string"} for arg in names},
            "required": names,
            "additionalProperties": False,
        }
        tool_name = name if name and NAME_PATTERN.fullmatch(name) else llm_name(name or file.stem)
        description = ""
    qualified = None
    if manual is not None and isinstance(item, utcp.UtcpTool):
        short = item.name.removeprefix(manual + ".")
        qualified = f"{manual}.{short}"
        tool_name = llm_name(prefix or manual, short)
    return Tool(
        name=tool_name,
        description=description,
        parameters=parameters,
        source=source,
        utcp=item,
        utcp_manual=manual,
        utcp_name=qualified,
    )
