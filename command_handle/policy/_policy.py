"""The application's policy: the trusted side of every call.

A Command Handle is written by a tool author and only partly trusted; the
model's arguments are untrusted. The Policy, set by the application, decides
what the handle may reach: where commands are looked up, which host variables
reach the child, which loader-injection variables may be set, and the caps on
time, output and concurrency. A handle can lower the caps, never raise them.
"""

from __future__ import annotations

import fnmatch
import functools
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import PolicyError, PolicyTypeError

__all__ = ["DANGEROUS_ENVIRONMENT", "OPTION_ENVIRONMENT", "Policy", "is_dangerous_name"]

# Variables that make loaders, shells or interpreters run code the handle chose.
DANGEROUS_ENVIRONMENT: tuple[str, ...] = (
    "LD_*",  # glibc loader: LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, LD_DEBUG_OUTPUT...
    "DYLD_*",  # macOS loader
    "GLIBC_TUNABLES",  # CVE-2023-4911
    "GCONV_PATH",
    "LOCPATH",
    "HOSTALIASES",
    "MALLOC_*",
    "BASH_ENV",
    "ENV",
    "BASH_FUNC_*",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "IFS",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONINSPECT",
    "PYTHONBREAKPOINT",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "LUA_INIT",
    "LUA_INIT_*",
    "PHPRC",
    "PHP_INI_SCAN_DIR",
    "TCLLIBPATH",
    "GIT_EXEC_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_CONFIG_*",
    "GIT_PROXY_COMMAND",
    "EDITOR",
    "VISUAL",
    "PAGER",
)


# Variables whose value a program reads as options or commands: a handle may set
# them to text it writes itself, but not to a value taken from the model's
# arguments (MAKEFLAGS="-j{{jobs}}" let a model run a command through make).
OPTION_ENVIRONMENT: tuple[str, ...] = (
    "*_OPTIONS",  # TAR_OPTIONS, GREP_OPTIONS, LESS_OPTIONS...
    "*_OPTS",  # PERLDB_OPTS, JAVA_OPTS, GRADLE_OPTS...
    "*FLAGS",  # MAKEFLAGS, MFLAGS, GNUMAKEFLAGS, CFLAGS, LDFLAGS...
    "GIT_*",  # GIT_EXTERNAL_DIFF, GIT_PAGER, GIT_ASKPASS, GIT_EDITOR...
    "LESS*",  # LESSOPEN, LESSCLOSE, LESSKEY...
    "*PAGER",  # PAGER, MANPAGER, SYSTEMD_PAGER...
    "MANOPT",
    "BROWSER",
    "EDITOR",
    "VISUAL",
    "*_ASKPASS",  # SSH_ASKPASS, SUDO_ASKPASS
    "PYTHONWARNINGS",  # with BROWSER: python3 ran a command
    "PATH",  # which programs the child's own lookups find
    "HOME",  # where configuration files (.gitconfig, .lessfilter...) are read
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "ZDOTDIR",
    "INPUTRC",
    "TERMINFO",
    "CURL_HOME",
    "WGETRC",
    "NPM_CONFIG_*",
    "PIP_*",
)


SANDBOX_MODES = ("off", "read-only", "workspace-write")


def is_dangerous_name(name: str, patterns: Iterable[str] = DANGEROUS_ENVIRONMENT) -> bool:
    matches = _matcher(tuple(patterns))
    return matches is not None and matches(name) is not None


@functools.lru_cache(maxsize=64)
def _matcher(patterns: tuple[str, ...]) -> Callable[[str], object] | None:
    """One regular expression matching a name against all ``patterns`` at once
    (``fnmatch.fnmatchcase``'s translation of each, in one alternation): a name
    is checked in one call instead of one per pattern. None when there are none."""
    if not patterns:
        return None
    return re.compile("|".join(fnmatch.translate(pattern) for pattern in patterns)).match


_DANGEROUS = _matcher(DANGEROUS_ENVIRONMENT)
_OPTIONS = _matcher(OPTION_ENVIRONMENT)


@dataclass(frozen=True)
class Policy:
    """What the application allows. The defaults are the safe ones.

    - ``search_path``: directories for bare command names; None means the host
      ``PATH`` at call time.
    - ``inherit_environment``: names of host variables passed to every child
      (default: none). A handle cannot add to this list.
    - ``allow_environment``: patterns from :data:`DANGEROUS_ENVIRONMENT` a handle
      may nevertheless set (default: none).
    - ``allow_setuid``: run set-user-ID or set-group-ID executables.
    - ``keep_capabilities``: let children of a root application keep root's
      capabilities. Off by default: every child starts with none, its bounding
      set empty and root's implicit capabilities off and locked (docs/sandbox.md).
    - ``allowed_commands``: if set, the programs that may run: absolute paths,
      compared after resolving symbolic links on both sides. Bare names are
      accepted only with ``match_command_names``.
    - ``match_command_names``: let bare names in ``allowed_commands`` match the
      name of the resolved program (after symbolic links, so a link named
      ``grep`` to ``/bin/sh`` is ``sh``).
    - ``allow_computed_command``: run a program whose path depends on the
      model's arguments (a computed ``command``, or a relative one in a
      computed ``directory``). Off by default.
    - ``allow_environment`` also lets a handle set the variables of
      :data:`OPTION_ENVIRONMENT` to values from the model's arguments.
    - ``allow_utcp_options``: let a UTCP tool argument begin a word (or a 0.x
      flag's value) with ``-``, ``+`` or ``@``, as utcp-cli does. Off by
      default: such a value is refused, as the flag guard refuses it in handles.
    - ``timeout``: seconds per call, and the cap on a handle's ``timeout``.
    - ``max_output``: bytes kept per stream, and the cap on a handle's ``max_output``.
    - ``kill_grace``: seconds between SIGTERM and SIGKILL to the process group.
    - ``max_concurrency``: children an :class:`Executor` runs at once.
    - ``sandbox``: ``"off"`` (default), ``"read-only"`` or ``"workspace-write"``
      (docs/sandbox.md). Confined children read the filesystem except
      ``deny_read`` and write only devices, a private ``TMPDIR`` and, with
      ``workspace-write``, the ``workspace`` and ``writable_roots``.
    - ``workspace``: a directory; also the working directory of handles and
      templates that name none, and the root of ``within: "workspace"`` paths.
    - ``network``: TCP connect and bind allowed; default on without a sandbox,
      off with one.
    - ``writable_roots``, ``deny_read``: more writable directories; paths a
      confined child may not read (``~`` is the home directory).
    - ``sandbox_required``: refuse to run when the kernel cannot enforce the
      sandbox (default); with False, run unconfined and log a warning.
    - ``sandbox_backend``: ``"landlock"`` (default) or ``"bubblewrap"``, which
      starts each confined child in new PID and network namespaces when
      ``bwrap`` is installed (docs/sandbox.md).
    - ``cgroup_per_call``: put each child in a cgroup of its own whose kill at
      the end of the call also catches descendants that left the process group
      (cgroup v2 with ``cgroup.kill``; refused where unavailable).
    - ``max_cpu_seconds``, ``max_memory`` (bytes of address space),
      ``max_processes``: optional limits on each child (RLIMIT_CPU, RLIMIT_AS,
      RLIMIT_NPROC; the last counts all processes of the user, and root is
      exempt from it).
    - ``max_sessions``, ``max_sessions_per_owner``: processes that outlive
      their call (a handle's ``session``) alive at once, in all and per owner
      (a principal, an MCP session); ``session_output``: bytes kept per stream
      between two reads of such a process (head and tail; the middle is
      counted and dropped); ``session_idle``: seconds without a read or a
      write after which one is stopped; ``session_lifetime``: seconds after
      which one is stopped, and the cap on a handle's ``max_lifetime``
      (docs/processes.md).
    """

    search_path: tuple[str, ...] | None = None
    inherit_environment: tuple[str, ...] = ()
    allow_environment: tuple[str, ...] = ()
    allow_setuid: bool = False
    keep_capabilities: bool = False
    allowed_commands: frozenset[str] | None = None
    match_command_names: bool = False
    allow_computed_command: bool = False
    allow_utcp_options: bool = False
    sandbox: str = "off"
    workspace: str | None = None
    network: bool | None = None
    writable_roots: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    sandbox_required: bool = True
    sandbox_backend: str = "landlock"
    cgroup_per_call: bool = False
    max_cpu_seconds: int | None = None
    max_memory: int | None = None
    max_processes: int | None = None
    timeout: float = 60.0
    max_output: int = 10 * 1024 * 1024
    kill_grace: float = 2.0
    max_concurrency: int = 16
    max_sessions: int = 16
    max_sessions_per_owner: int = 4
    session_output: int = 1024 * 1024
    session_idle: float = 1800.0
    session_lifetime: float = 4 * 3600.0

    def __post_init__(self) -> None:
        # A str is an iterable of one-character names: Policy(allow_environment="NODE_*")
        # would allow every name made of N, O, D, E, _ and *. Refuse it loudly.
        for name in ("inherit_environment", "allow_environment"):
            object.__setattr__(self, name, _names(name, getattr(self, name)))
        if self.search_path is not None:
            object.__setattr__(self, "search_path", _names("search_path", self.search_path))
        for flag in (
            "allow_setuid",
            "keep_capabilities",
            "match_command_names",
            "allow_computed_command",
            "allow_utcp_options",
        ):
            if not isinstance(getattr(self, flag), bool):
                raise PolicyTypeError(
                    f"Policy.{flag} must be a bool, not {type(getattr(self, flag)).__name__}"
                )
        if self.allowed_commands is not None:
            allowed = frozenset(_names("allowed_commands", self.allowed_commands))
            names = sorted(entry for entry in allowed if "/" not in entry)
            if names and not self.match_command_names:
                raise PolicyError(
                    f"Policy.allowed_commands holds bare names ({', '.join(names)}): give "
                    "absolute paths, or set match_command_names=True to match names"
                )
            object.__setattr__(self, "allowed_commands", allowed)
            real: dict[str, set[str]] = {}
            for entry in allowed:
                if "/" in entry:
                    real.setdefault(os.path.realpath(entry), set()).add(os.path.basename(entry))
            object.__setattr__(self, "_real_commands", real)
        self._check_sandbox()
        for name in ("max_cpu_seconds", "max_memory", "max_processes"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise PolicyTypeError(f"Policy.{name} must be an int or None")
            if value <= 0:
                raise PolicyError(f"Policy.{name} must be at least 1")
        for name in ("timeout", "kill_grace", "session_idle", "session_lifetime"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise PolicyTypeError(
                    f"Policy.{name} must be a number of seconds, not {type(value).__name__}"
                )
            if not (value > 0 and math.isfinite(value)):
                raise PolicyError(f"Policy.{name} must be a positive, finite number of seconds")
            object.__setattr__(self, name, float(value))
        for name in (
            "max_output",
            "max_concurrency",
            "max_sessions",
            "max_sessions_per_owner",
            "session_output",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise PolicyTypeError(f"Policy.{name} must be an int, not {type(value).__name__}")
            if value <= 0:
                raise PolicyError(f"Policy.{name} must be at least 1")

    def _check_sandbox(self) -> None:
        if self.sandbox_backend not in ("landlock", "bubblewrap"):
            raise PolicyError(
                f'Policy.sandbox_backend must be "landlock" or "bubblewrap", not '
                f"{self.sandbox_backend!r}"
            )
        if self.sandbox not in SANDBOX_MODES:
            raise PolicyError(
                f"Policy.sandbox must be one of {', '.join(SANDBOX_MODES)}, not {self.sandbox!r}"
            )
        for flag in ("sandbox_required", "cgroup_per_call"):
            if not isinstance(getattr(self, flag), bool):
                raise PolicyTypeError(f"Policy.{flag} must be a bool")
        if self.network is not None and not isinstance(self.network, bool):
            raise PolicyTypeError("Policy.network must be a bool or None")
        if self.workspace is not None:
            if not isinstance(self.workspace, (str, os.PathLike)):
                raise PolicyTypeError("Policy.workspace must be a path")
            workspace = os.path.realpath(os.fspath(self.workspace))
            if not os.path.isdir(workspace):
                raise PolicyError(f"Policy.workspace {workspace!r} is not a directory")
            object.__setattr__(self, "workspace", workspace)
        roots = tuple(
            os.path.realpath(root) for root in _names("writable_roots", self.writable_roots)
        )
        denied = tuple(
            os.path.realpath(os.path.expanduser(path))
            for path in _names("deny_read", self.deny_read)
        )
        object.__setattr__(self, "writable_roots", roots)
        object.__setattr__(self, "deny_read", denied)
        if self.sandbox == "off":
            if self.network is False:
                raise PolicyError(
                    "Policy.network=False needs a sandbox (read-only or workspace-write)"
                )
            if roots or denied:
                raise PolicyError("writable_roots and deny_read need a sandbox")
            return
        if self.sandbox == "workspace-write" and self.workspace is None:
            raise PolicyError('Policy.sandbox="workspace-write" needs a workspace directory')
        if self.sandbox == "read-only" and roots:
            # read-only writes only devices and TMPDIR; more roots are workspace-write's.
            raise PolicyError(
                'Policy.writable_roots needs sandbox="workspace-write"; "read-only" '
                "writes only devices and the call's TMPDIR"
            )
        writable = [*roots, self.workspace] if self.sandbox == "workspace-write" else [*roots]
        for path in denied:
            for root in writable:
                if root is not None and (path == root or path.startswith(root.rstrip("/") + "/")):
                    raise PolicyError(
                        f"deny_read {path!r} lies inside the writable {root!r}: a confined "
                        "child could not be kept from reading it"
                    )

    @functools.cached_property
    def child_limits(self) -> tuple[tuple[int, int], ...]:
        """The resource limits to set on each child, as ``(RLIMIT_*, value)``
        (computed once: a Policy is frozen)."""
        import resource

        pairs = (
            (resource.RLIMIT_CPU, self.max_cpu_seconds),
            (resource.RLIMIT_AS, self.max_memory),
            (resource.RLIMIT_NPROC, self.max_processes),
        )
        return tuple((kind, value) for kind, value in pairs if value is not None)

    @functools.cached_property
    def _allowed_variables(self) -> Callable[[str], object] | None:
        """``allow_environment`` as one matcher, built once per Policy."""
        return _matcher(self.allow_environment)

    @property
    def network_allowed(self) -> bool:
        """Whether children may connect and bind (the default depends on the sandbox)."""
        return self.network if self.network is not None else self.sandbox == "off"

    def path_entries(self) -> tuple[str, ...]:
        if self.search_path is not None:
            return self.search_path
        return tuple(p for p in os.environ.get("PATH", os.defpath).split(os.pathsep) if p)

    def refuses_variable(self, name: str) -> bool:
        return _DANGEROUS is not None and _DANGEROUS(name) is not None and not self._allows(name)

    def refuses_model_value(self, name: str) -> bool:
        """Whether a value from the model's arguments may not go into ``name``."""
        return _OPTIONS is not None and _OPTIONS(name) is not None and not self._allows(name)

    def _allows(self, name: str) -> bool:
        """Whether ``allow_environment`` admits the variable ``name``."""
        allowed = self._allowed_variables
        return allowed is not None and allowed(name) is not None

    def allows_program(self, path: str) -> bool:
        """Whether the allowlist (if any) admits the program at ``path``, run
        under the name ``path`` ends with. The program gets that name as
        ``argv[0]``, and a multi-call program (busybox, coreutils built as one
        file) does what it names: a link ``rm`` to the file that an allowed
        ``ls`` also links to is the same file but not the same program. So the
        name must be the file's own or that of an allowed entry for it."""
        if self.allowed_commands is None:
            return True
        real = os.path.realpath(path)
        name = os.path.basename(path)
        names: dict[str, set[str]] = self.__dict__.get("_real_commands", {})
        if real in names and (name == os.path.basename(real) or name in names[real]):
            return True
        return (
            self.match_command_names
            and os.path.basename(real) in self.allowed_commands
            and (name == os.path.basename(real) or name in self.allowed_commands)
        )


def _names(field: str, value: object) -> tuple[str, ...]:
    """A sequence of names as a tuple; a bare string is a mistake, not a sequence."""
    if isinstance(value, (str, bytes)):
        raise PolicyTypeError(
            f"Policy.{field} takes a sequence of strings, not a single string: "
            f"write ({value!r},) for one entry"
        )
    if not isinstance(value, Iterable):
        raise PolicyTypeError(
            f"Policy.{field} takes a sequence of strings, not {type(value).__name__}"
        )
    names = tuple(value)
    for item in names:
        if not isinstance(item, str):
            raise PolicyTypeError(f"Policy.{field} takes strings; it holds a {type(item).__name__}")
    return names
