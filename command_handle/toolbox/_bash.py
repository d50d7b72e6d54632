"""Loading bash tool plugins: a ``.bash`` file, a folder with
``agent_plugin.json``, an application config's ``plugins``, a git repository.

Bash tools are off unless the application allows them (``allow_bash_tools``,
or a config's own ``plugin_policy.allow_bash_tools``); finding one without
the permission is a load error naming the file and the switch. The schema is
what ``bash FILE schema`` prints, run on the executor under the Policy (its
timeout and output cap), and cached by the file's content so that a server
restarts without running it again. A git plugin is cloned with the ``git``
program, also on the executor, into a cache folder per URL and ref.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._documents import read_regular_file
from ..errors import HandleError, HandleLoadError
from ..policy import Policy
from ._printable import printable
from ._tool import Tool

if TYPE_CHECKING:
    from ..call import CommandResult, PreparedCall
    from ..executor import Executor
    from ..plugins import BashTool, PluginSource

__all__ = ["BashLoader", "default_cache"]

_MAX_SCRIPT = 1 << 20  # a bash tool is a script, not a data file
_MAX_SCHEMA = 1 << 20
_SWITCH = (
    "bash tools are off: pass --allow-bash-tools (Toolbox.load(..., allow_bash_tools=True)), "
    "or set plugin_policy.allow_bash_tools in the application config that lists it"
)


def default_cache() -> Path:
    """``$XDG_CACHE_HOME/command-handle`` (``~/.cache/command-handle``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "command-handle"


@dataclass
class BashLoader:
    """What loading bash tools needs: the permission, the Policy the schema
    runs under, and the cache folder."""

    allow: bool = False
    policy: Policy = field(default_factory=Policy)
    cache: Path | None = None
    _executors: dict[int, Executor] = field(default_factory=dict)

    # -- the forms -----------------------------------------------------------

    def file(self, path: Path, *, allowed: bool = False, timeout: float | None = None) -> Tool:
        """The tool in one ``.bash`` file."""
        source = str(path)
        if not (self.allow or allowed):
            raise _error(source, f"a bash tool; {_SWITCH}")
        from ..plugins import BashToolError, parse_schema

        script = read_regular_file(path, _MAX_SCRIPT, HandleLoadError)
        absolute = str(path.resolve())
        info = os.stat(absolute)
        if info.st_mode & stat.S_IWOTH:
            raise _error(
                source,
                "every user of this machine may write this file, and so choose what runs; "
                "remove that permission (chmod o-w)",
            )
        if info.st_uid not in (0, os.geteuid()):
            raise _error(
                source,
                f"the file belongs to another user (uid {info.st_uid}), who may change what "
                "runs as this one; a tool file is this user's or root's (chown it)",
            )
        cached = self._cached(script)
        text = self._schema_text(absolute, timeout) if cached is None else cached
        try:
            tool = parse_schema(
                text, absolute, timeout=timeout, digest=hashlib.sha256(script).hexdigest()
            )
        except BashToolError as exc:
            raise _error(source, f"schema: {exc.message}", exc.pointer) from None
        if cached is None:
            self._remember(script, text)
        return tool_of(tool, source)

    def folder(
        self, folder: Path, *, allowed: bool = False, timeout: float | None = None
    ) -> list[Tool]:
        """The tools a plugin folder's ``agent_plugin.json`` lists."""
        from ..plugins import DESCRIPTOR

        descriptor = folder / DESCRIPTOR
        if not descriptor.is_file():
            raise _error(
                str(folder), f"a bash tool plugin folder has an {DESCRIPTOR}; this one has none"
            )
        from .._documents import read_document

        try:
            document = read_document(descriptor, HandleLoadError)
        except HandleError as exc:
            raise _error(str(descriptor), exc.message, exc.pointer) from None
        return self.descriptor(document, descriptor, allowed=allowed, timeout=timeout)

    def descriptor(
        self,
        document: dict[str, Any],
        file: Path,
        *,
        allowed: bool = False,
        timeout: float | None = None,
    ) -> list[Tool]:
        """The tools an ``agent_plugin.json`` lists, relative to its folder."""
        from ..plugins import BashToolError, descriptor_files

        try:
            listed = descriptor_files(document, str(file.parent))
        except BashToolError as exc:
            raise _error(str(file), exc.message, exc.pointer) from None
        tools = []
        root = os.path.realpath(file.parent)
        for script, pointer in listed:
            # A plugin (a git clone, say) names its own files: not a path of this
            # machine through "..", an absolute path or a symbolic link.
            real = os.path.realpath(script)
            if os.path.commonpath([root, real]) != root:
                raise _error(
                    str(file),
                    f"lists {script}, which is outside the plugin's folder {file.parent} "
                    f"(it resolves to {real}); a plugin's tools are files in its folder",
                    pointer,
                )
            if not Path(script).is_file():
                raise _error(str(file), f"lists {script}, which is no file", pointer)
            tools.append(self.file(Path(script), allowed=allowed, timeout=timeout))
        return tools

    def config(
        self, document: dict[str, Any], file: Path, skipped: list[str], *, named: bool = True
    ) -> list[Tool]:
        """The bash tools of an application config, with its ``plugin_policy``;
        its other plugins are listed in ``skipped``, with why. Its own
        ``allow_bash_tools`` counts only when the config was ``named`` by the
        application: one found in a folder of tools is like a ``.bash`` file
        found there, and needs the application's switch."""
        from ..plugins import BashToolError, config_plugins

        try:
            found = config_plugins(document, str(file.parent))
        except BashToolError as exc:
            raise _error(str(file), exc.message, exc.pointer) from None
        skipped += [f"{file}{other}" for other in found.others]
        allowed = found.policy.allow_bash_tools and named
        if found.sources and not (self.allow or allowed):
            why = _SWITCH
            if found.policy.allow_bash_tools:
                why = (
                    "its plugin_policy.allow_bash_tools counts only for a config named "
                    "itself, not one found in a folder; pass --allow-bash-tools "
                    "(Toolbox.load(..., allow_bash_tools=True)) or name the config"
                )
            raise _error(str(file), f"lists bash tools; {why}", found.sources[0].pointer)
        tools: list[Tool] = []
        for plugin in found.sources:
            tools += self.source(
                plugin, str(file), allowed=True, timeout=found.policy.bash_timeout_seconds
            )
        return tools

    def source(
        self,
        plugin: PluginSource,
        named_in: str,
        *,
        allowed: bool = False,
        timeout: float | None = None,
    ) -> list[Tool]:
        """The tools of one plugin entry (``file``, ``path`` or ``git``)."""
        if not (self.allow or allowed):
            raise _error(named_in, f"names a bash tool; {_SWITCH}", plugin.pointer)
        if plugin.kind == "git":
            folder = self.clone(plugin, named_in)
            return self.folder(folder, allowed=True, timeout=timeout)
        location = Path(plugin.location)
        if not location.exists():
            raise _error(named_in, f"{location}: no such file or folder", plugin.pointer)
        if location.is_dir():
            return self.folder(location, allowed=True, timeout=timeout)
        return [self.file(location, allowed=True, timeout=timeout)]

    # -- running the loader's programs ---------------------------------------

    def _run(self, prepared: PreparedCall[CommandResult], policy: Policy) -> CommandResult:
        executor = self._executors.get(id(policy))
        if executor is None:
            from ..executor import Executor

            executor = self._executors[id(policy)] = Executor(policy)
        return executor.run_sync(prepared)

    def _schema_text(self, file: str, timeout: float | None) -> str:
        """What ``bash FILE schema`` prints, run on the executor under the Policy."""
        from ..plugins import program_call

        policy = self.policy
        try:
            prepared = program_call(
                "bash",
                [file, "schema"],
                policy,
                cwd=os.path.dirname(file),
                environment={"AGENT_TOOL_PYTHON": sys.executable},
                timeout=timeout,
            )
            result = self._run(prepared, policy)
        except HandleError as exc:
            raise _error(file, f"`bash {file} schema` was refused: {exc}") from None
        limit = prepared.timeout
        if result.timed_out:
            raise _error(file, f"`schema` did not finish within {limit:g} s")
        if result.exit_code != 0:
            why = _text(result.stderr).strip().splitlines()[-1:] or ["no message"]
            raise _error(
                file,
                f"`schema` failed with exit status {result.exit_code}: {printable(why[0][:300])}",
            )
        text = _text(result.stdout)
        if result.stdout_truncated or len(text) > _MAX_SCHEMA:
            raise _error(file, "`schema` printed more than the output cap")
        return text

    def clone(self, plugin: PluginSource, named_in: str) -> Path:
        """The checkout of ``plugin.location`` at ``plugin.ref``, cloned once."""
        from ..plugins import git_checkout_argv, git_folder_name, program_call

        root = self._cache_root() / "git"
        folder = root / git_folder_name(plugin.location, plugin.ref)
        try:
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
            # A private root is enough for its entries' modes (git makes a clone
            # with the umask's): no one else can reach them. Their owner is checked.
            unsafe = _not_private(root) or (
                os.path.lexists(folder) and _not_private(folder, mode=False)
            )
        except OSError as exc:
            raise _error(
                named_in,
                f"the plugin cache {root} cannot be used ({exc.strerror}); set XDG_CACHE_HOME "
                "or pass plugin_cache to Toolbox.load",
                plugin.pointer,
            ) from None
        if unsafe:
            raise _error(
                named_in,
                f"the plugin cache {unsafe} is not private (another user owns it or may "
                "write it, and could plant a plugin there); use a cache folder of your own",
                plugin.pointer,
            )
        if folder.is_dir():
            return folder
        # The application's config asks for the clone, not the model: git runs
        # unconfined (it writes the cache and may reach the network), with the
        # Policy's search path, variables and timeout.
        policy = Policy(
            search_path=self.policy.search_path,
            inherit_environment=self.policy.inherit_environment,
            timeout=self.policy.timeout,
        )
        work = tempfile.mkdtemp(prefix=".clone-", dir=root)
        checkout = os.path.join(work, "repo")
        try:
            for argv in git_checkout_argv(plugin.location, plugin.ref, checkout):
                try:
                    result = self._run(program_call("git", argv, policy, cwd=str(root)), policy)
                except HandleError as exc:
                    raise _error(named_in, f"git was refused: {exc}", plugin.pointer) from None
                if result.exit_code != 0:
                    why = _text(result.stderr).strip().splitlines()[-1:] or ["no message"]
                    raise _error(
                        named_in,
                        f"git could not get {plugin.location} at {plugin.ref!r}: "
                        f"{printable(why[0][:300])}",
                        plugin.pointer,
                    )
            with contextlib.suppress(FileExistsError, OSError):
                os.rename(checkout, folder)  # another loader may have won the race
            if not folder.is_dir():
                raise _error(named_in, f"could not keep the clone in {folder}", plugin.pointer)
            return folder
        finally:
            import shutil

            shutil.rmtree(work, ignore_errors=True)

    # -- the schema cache ----------------------------------------------------

    def _cache_root(self) -> Path:
        return self.cache if self.cache is not None else default_cache()

    def _cache_file(self, script: bytes) -> Path:
        digest = hashlib.sha256(script).hexdigest()  # the file's content, nothing else
        return self._cache_root() / "bash-schemas" / f"{digest}.json"

    def _cached(self, script: bytes) -> str | None:
        file = self._cache_file(script)
        try:
            if _not_private(file.parent) or _not_private(file):
                return None  # another user's text is no schema of ours: run it again
            return file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def _remember(self, script: bytes, text: str) -> None:
        """Keep a schema that passed every check; a cache that cannot be
        written costs only speed."""
        target = self._cache_file(script)
        with contextlib.suppress(OSError):
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if _not_private(target.parent):
                return
            handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".schema-")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, target)


def tool_of(tool: BashTool, source: str) -> Tool:
    return Tool(
        name=tool.id,
        description=tool.description,
        parameters=tool.parameters,
        source=source,
        handle=tool.handle,
        bash_tool=tool,
        session=None if tool.handle.session is None else tool.handle.session.settings(),
    )


def _not_private(path: Path, *, mode: bool = True) -> str:
    """``path`` when it is a symbolic link, another user owns it, or (with
    ``mode``) another user may write it: a cache entry someone else could have
    planted. Else "". Raises OSError."""
    info = path.lstat()
    writable = mode and info.st_mode & 0o022
    if info.st_uid != os.geteuid() or writable or stat.S_ISLNK(info.st_mode):
        return str(path)
    return ""


def _text(value: str | bytes | None) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value or ""


def _error(path: str, message: str, pointer: str = "") -> HandleLoadError:
    from ._load import ToolLoadError

    return ToolLoadError(path, message, pointer)
