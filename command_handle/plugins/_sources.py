"""Where bash tools come from: a plugin folder's ``agent_plugin.json``, an
application config's ``plugins`` and ``plugin_policy``, and the string
shortcuts ``bash:PATH`` and ``bash+git:URL#REF``. Pure: paths are resolved
against the document's folder, nothing is read or run here.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._errors import BashToolError

__all__ = [
    "DESCRIPTOR",
    "PluginPolicy",
    "PluginSource",
    "config_plugins",
    "descriptor_files",
    "git_checkout_argv",
    "git_folder_name",
    "shortcut",
]

DESCRIPTOR = "agent_plugin.json"


@dataclass(frozen=True)
class PluginSource:
    """One plugin entry: a bash ``file``, a plugin folder (``path``), or a
    ``git`` repository at ``ref``; ``pointer`` is where the document names it."""

    kind: Literal["file", "path", "git"]
    location: str
    ref: str = ""
    pointer: str = ""


@dataclass(frozen=True)
class PluginPolicy:
    """An application config's ``plugin_policy``."""

    allow_bash_tools: bool = False
    bash_timeout_seconds: float | None = None


@dataclass(frozen=True)
class ConfigPlugins:
    """What a config document asks for: its bash plugins, its policy, and the
    entries that are other kinds of plugin (with why they are not loaded)."""

    sources: list[PluginSource]
    policy: PluginPolicy
    others: list[str] = field(default_factory=list)


def descriptor_files(document: Mapping[str, Any], folder: str) -> list[tuple[str, str]]:
    """The bash files ``agent_plugin.json`` lists, as (absolute path, pointer)."""
    tools = document.get("bash_tools")
    if not isinstance(tools, list):
        raise BashToolError('bash_tools must be a list of {"file": ...}', "/bash_tools")
    if not tools:
        raise BashToolError(
            'bash_tools lists no tool: a plugin has at least one {"file": ...}', "/bash_tools"
        )
    files: list[tuple[str, str]] = []
    for index, entry in enumerate(tools):
        pointer = f"/bash_tools/{index}"
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("file"), str)
            or not entry["file"]
        ):
            raise BashToolError('each entry is {"file": "tool.bash"}', pointer)
        files.append((_within(folder, entry["file"]), f"{pointer}/file"))
    return files


def config_plugins(document: Mapping[str, Any], folder: str) -> ConfigPlugins:
    """An application config's bash plugins and ``plugin_policy``, paths
    resolved against ``folder`` (the config file's)."""
    entries = document.get("plugins", [])
    if not isinstance(entries, list):
        raise BashToolError("plugins must be a list", "/plugins")
    if not entries:  # loaded as tools, it would load nothing and say nothing
        raise BashToolError("the config lists no plugin (plugins is absent or empty)", "/plugins")
    sources: list[PluginSource] = []
    others: list[str] = []
    for index, entry in enumerate(entries):
        pointer = f"/plugins/{index}"
        if isinstance(entry, str):
            found = shortcut(entry, folder, pointer)
            if found is None:
                others.append(
                    f"{pointer}: {entry!r} is not a bash tool (bash:PATH or bash+git:URL#REF)"
                )
            else:
                sources.append(found)
        elif isinstance(entry, dict) and "bash_tool" in entry:
            sources.append(_bash_tool(entry["bash_tool"], folder, f"{pointer}/bash_tool"))
        elif isinstance(entry, dict) and len(entry) == 1:
            others.append(f"{pointer}: a {next(iter(entry))!r} plugin is not a bash tool")
        else:
            raise BashToolError('a plugin is a string or {"bash_tool": {...}}', pointer)
    return ConfigPlugins(sources, _policy(document.get("plugin_policy", {})), others)


def shortcut(text: str, folder: str, pointer: str = "") -> PluginSource | None:
    """``bash:PATH`` or ``bash+git:URL#REF``; None for any other string."""
    if text.startswith("bash+git:"):
        url, _, ref = text[len("bash+git:") :].rpartition("#")
        if not url or not ref:
            raise BashToolError(f"{text!r} needs a ref: bash+git:URL#REF", pointer)
        return _git(url, ref, pointer, folder)
    if text.startswith("bash:"):
        path = text[len("bash:") :]
        if not path:
            raise BashToolError("bash: needs a path", pointer)
        location = _within(folder, path)
        kind: Literal["file", "path"] = "file" if location.endswith(".bash") else "path"
        return PluginSource(kind, location, pointer=pointer)
    return None


def git_folder_name(url: str, ref: str) -> str:
    """The cache folder of a clone: one per URL and ref."""
    return hashlib.sha256(f"{url}\0{ref}".encode()).hexdigest()[:32]


def git_checkout_argv(url: str, ref: str, folder: str) -> list[list[str]]:
    """The ``git`` argv that clone ``url`` into ``folder`` and check out ``ref``
    (a tag, branch or commit; a missing ref fails the checkout)."""
    return [
        ["clone", "--quiet", "--no-checkout", "--", url, folder],
        [
            "-C",
            folder,
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "--quiet",
            "--detach",
            ref,
            "--",
        ],
    ]


def _bash_tool(spec: object, folder: str, pointer: str) -> PluginSource:
    if not isinstance(spec, dict):
        raise BashToolError('bash_tool is {"file"}, {"path"} or {"git", "ref"}', pointer)
    given = [key for key in ("file", "path", "git") if key in spec]
    if len(given) != 1:
        raise BashToolError("bash_tool takes exactly one of file, path and git", pointer)
    key = given[0]
    value = spec[key]
    if not isinstance(value, str) or not value:
        raise BashToolError(f"{key} must be a non-empty string", f"{pointer}/{key}")
    if key == "git":
        ref = spec.get("ref")
        if not isinstance(ref, str) or not ref:
            raise BashToolError(
                "a git plugin needs a ref (a tag, branch or commit)", f"{pointer}/ref"
            )
        return _git(value, ref, pointer, folder)
    return PluginSource(
        "file" if key == "file" else "path", _within(folder, value), pointer=pointer
    )


def _git(url: str, ref: str, pointer: str, folder: str) -> PluginSource:
    if url.startswith("-") or ref.startswith("-"):
        raise BashToolError("a git URL or ref must not begin with '-'", pointer)
    if url.startswith("ext::") or "::" in url.split("/", 1)[0]:
        raise BashToolError("git remote helpers (TRANSPORT::ADDRESS) are not allowed", pointer)
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in url + ref):
        raise BashToolError("a git URL or ref must not hold control characters", pointer)
    if _local(url):
        # A path is the document's, like its other paths: git itself runs in the
        # cache folder, and the cache is keyed by what names one repository.
        url = _within(folder, url)
    return PluginSource("git", url, ref, pointer)


def _local(url: str) -> bool:
    """Whether git reads ``url`` as a path: no ``scheme://``, and no
    ``host:path`` (a colon before the first slash)."""
    if "://" in url:
        return False
    colon, slash = url.find(":"), url.find("/")
    return colon < 0 or 0 <= slash < colon


def _within(folder: str, path: str) -> str:
    return os.path.normpath(os.path.join(folder, os.path.expanduser(path)))


def _policy(value: object) -> PluginPolicy:
    if not isinstance(value, dict):
        raise BashToolError("plugin_policy must be an object", "/plugin_policy")
    allow = value.get("allow_bash_tools", False)
    if not isinstance(allow, bool):
        raise BashToolError(
            "allow_bash_tools must be true or false", "/plugin_policy/allow_bash_tools"
        )
    timeout = value.get("bash_timeout_seconds")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
    ):
        raise BashToolError(
            "bash_timeout_seconds must be a positive number", "/plugin_policy/bash_timeout_seconds"
        )
    return PluginPolicy(allow, None if timeout is None else float(timeout))
