"""Every check of a call against the Policy, in one place.

Handles (sections 3 and 5 of the Command Handle draft), plans translated from
UTCP and legacy providers all come through here, so the directory, program
lookup, set-user-ID and allowlist checks, environment names and the argv size
are written once, with one error type each and one way of numbering.

Refusals say what is wrong and where (a JSON Pointer), and never quote a
value that may have come from the model: a directory or a computed program
is named by its field, not by its text. Nothing here spawns a process.
"""

from __future__ import annotations

import functools
import os
import re
import stat

from .. import _json
from .._ostext import exec_size_problem, os_text_problem
from ..errors import CommandError, DirectoryError, EnvironmentVariableError, HandleError
from ..form.extend import is_data, type_name
from ._policy import Policy

__all__ = [
    "argv_problem",
    "check_program",
    "check_variable_name",
    "inherited_environment",
    "resolve_command",
    "resolve_directory",
    "resolve_environment",
]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def resolve_directory(directory: str | None, pointer: str = "/directory") -> str:
    """Section 3.1: the directory exists, is a directory and is searchable."""
    if directory is None:
        return os.getcwd()  # 3.1: no directory field, run in the current directory
    # Printable ASCII (the usual path) has no control character, NUL or surrogate.
    if not (directory.isascii() and directory.isprintable() and directory) and (
        not directory or _CONTROL.search(directory) or os_text_problem(directory)
    ):
        raise DirectoryError(
            "the directory must be a non-empty path without control characters or lone surrogates",
            pointer,
        )
    path = os.path.abspath(directory)
    info = _stat(path, "the directory", DirectoryError, pointer)
    if not stat.S_ISDIR(info.st_mode):
        raise DirectoryError("the directory is not a directory", pointer)
    if not os.access(path, os.X_OK):
        raise DirectoryError("the directory is not searchable by this user", pointer)
    return path


def _stat(path: str, what: str, error: type[HandleError], pointer: str) -> os.stat_result:
    """``os.stat`` with the refusal a caller can act on: missing, or unreadable."""
    try:
        return os.stat(path)
    except OSError as exc:
        raise _stat_refusal(exc, what, error, pointer) from None


def _stat_refusal(exc: OSError, what: str, error: type[HandleError], pointer: str) -> HandleError:
    if isinstance(exc, FileNotFoundError):
        return error(f"{what} does not exist", pointer)
    return error(f"{what} cannot be examined: {exc.strerror}", pointer)


def _what(shown: str | None) -> str:
    return "the command" if shown is None else f"the command {shown!r}"


def check_program(
    path: str, policy: Policy, pointer: str = "/command", shown: str | None = None
) -> str:
    """A resolved program: a regular, executable file that the policy allows.

    ``shown`` is the command as the handle author wrote it, quoted in messages;
    None when it may hold model data.
    """
    try:
        info = os.stat(path)
    except OSError as exc:  # the message is built only for a refusal
        raise _stat_refusal(exc, _what(shown), CommandError, pointer) from None
    return _check_program_file(path, info, policy, pointer, shown)


def _check_program_file(
    path: str, info: os.stat_result, policy: Policy, pointer: str, shown: str | None
) -> str:
    """:func:`check_program` on the ``os.stat`` of ``path`` just taken."""
    if not stat.S_ISREG(info.st_mode):
        raise CommandError(f"{_what(shown)} is not a regular file", pointer)
    if not os.access(path, os.X_OK):
        raise CommandError(f"{_what(shown)} is not executable by this user", pointer)
    if info.st_mode & _SET_ID and not policy.allow_setuid:
        raise CommandError(
            f"{_what(shown)} is set-user-ID or set-group-ID; the policy does not allow it",
            pointer,
        )
    if policy.allowed_commands is not None and not policy.allows_program(path):
        raise CommandError(f"the policy does not allow {_what(shown)}", pointer)
    return path


_SET_ID = stat.S_ISUID | stat.S_ISGID


def resolve_command(
    command: str,
    cwd: str,
    policy: Policy,
    pointer: str = "/command",
    shown: str | None = None,
) -> str:
    """Sections 3.4 and 5.1: return the absolute path of an existing, executable file.

    Absolute paths are used as they are; a path with a slash is relative to the
    validated working directory; a bare name is looked up in the policy's search
    path (absolute entries only: a relative PATH entry would make the lookup
    depend on the directory the handle chose).
    """
    # Printable ASCII (the usual name) has no control character, NUL or surrogate.
    if not (command.isascii() and command.isprintable() and command) and (
        not command or _CONTROL.search(command) or os_text_problem(command)
    ):
        raise CommandError(
            "the command must be a non-empty name without control characters or lone surrogates",
            pointer,
        )
    if "/" in command:
        path = command if command[0] == "/" else os.path.join(cwd, command)
        # An absolute path without "//", "/." or a final "/" is already normal.
        if path[0] != "/" or "//" in path or "/." in path or path.endswith("/"):
            path = os.path.normpath(path)
        try:  # check_program, inline: one function fewer on every call's path
            info = os.stat(path)
        except OSError as exc:
            raise _stat_refusal(exc, _what(shown), CommandError, pointer) from None
        return _check_program_file(path, info, policy, pointer, shown)
    for prefix in _search_prefixes(policy):
        candidate = prefix + command
        try:
            info = os.stat(candidate)
        except (OSError, ValueError):
            continue  # absent, or an unreadable PATH entry: skipped, like execvp does
        # The first regular file this user may execute is the program; its
        # other checks (set-user-ID, the allowlist) refuse it rather than look on.
        if stat.S_ISREG(info.st_mode) and os.access(candidate, os.X_OK):
            return _check_program_file(candidate, info, policy, pointer, shown)
    raise CommandError(
        f"{_what(shown)} was not found in the search path "
        "(use an absolute path, or a path relative to the directory)",
        pointer,
    )


def _search_prefixes(policy: Policy) -> tuple[str, ...]:
    """The absolute directories of the policy's search path, each ending in "/"."""
    if policy.search_path is not None:
        return _absolute_prefixes(policy.search_path)
    return _host_prefixes(os.environ.get("PATH", os.defpath))


@functools.lru_cache(maxsize=16)
def _host_prefixes(path: str) -> tuple[str, ...]:
    """The host PATH's, keyed on its text at call time (Policy.path_entries)."""
    return _absolute_prefixes(tuple(entry for entry in path.split(os.pathsep) if entry))


@functools.lru_cache(maxsize=16)
def _absolute_prefixes(entries: tuple[str, ...]) -> tuple[str, ...]:
    """Keyed on the search path itself (the Policy's, or the host PATH at call
    time): a relative entry would make the lookup depend on the directory."""
    return tuple(
        entry if entry.endswith("/") else entry + "/" for entry in entries if os.path.isabs(entry)
    )


def check_variable_name(name: str, policy: Policy, pointer: str) -> None:
    """A valid name that the policy lets a handle or template set."""
    if not _ENV_NAME.fullmatch(name):
        raise EnvironmentVariableError(
            f"{name!r} is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)",
            pointer,
        )
    if policy.refuses_variable(name):
        raise EnvironmentVariableError(
            f"{name} can make a loader, interpreter or the shell run code; the policy does "
            "not allow templates to set it (Policy.allow_environment)",
            pointer,
        )


def check_variable_value(name: str, value: str, pointer: str) -> str:
    problem = os_text_problem(value)
    if problem:
        raise EnvironmentVariableError(f"the value of {name} {problem}", pointer)
    return value


def inherited_environment(names: tuple[str, ...]) -> dict[str, str]:
    """The host variables named, where set."""
    if not names:  # the default: a child inherits nothing
        return {}
    return {name: os.environ[name] for name in names if name in os.environ}


def _env_value(name: str, value: object, pointer: str) -> str:
    try:
        text = _json.scalar_text(value)
    except _json.NonJSONValueError:
        raise EnvironmentVariableError(f"{name} must be a finite number", pointer) from None
    if text is None:
        kind = type_name(value)
        raise EnvironmentVariableError(
            f"the value of {name} must be a string, number or boolean, not {kind}", pointer
        )
    return check_variable_value(name, text, pointer)


def resolve_environment(
    environment: object,
    policy: Policy,
    pointer: str = "/environment",
    written: frozenset[str] | None = None,
) -> dict[str, str]:
    """Sections 3.2 and 5.2: a clean environment, plus what the policy and handle give.

    ``written`` names the variables whose values the handle writes itself (None:
    all of them); the others hold model data, which the variables of
    :data:`OPTION_ENVIRONMENT` may not receive. Names computed from the model's
    arguments (marked data) are refused: a name must be written in the handle.
    """
    names = policy.inherit_environment
    env = inherited_environment(names) if names else {}
    if environment is None:
        return env
    if not isinstance(environment, dict):
        raise EnvironmentVariableError("the environment must evaluate to an object", pointer)
    for name, value in environment.items():
        if is_data(name):
            raise EnvironmentVariableError(
                "environment variable names must be written in the handle, not taken from "
                "the arguments",
                pointer,
            )
        where = f"{pointer}/{name}"
        check_variable_name(name, policy, where)
        if written is not None and name not in written and policy.refuses_model_value(name):
            raise EnvironmentVariableError(
                f"{name} is read as options or commands by the programs that use it, so its "
                "value must be written in the handle, not built from the arguments "
                "(Policy.allow_environment can allow it)",
                where,
            )
        env[str(name)] = str(_env_value(name, value, where))
    return env


def argv_problem(argv: list[str], env: dict[str, str]) -> str | None:
    """Why execve cannot take this argv: text with no byte form, or too large
    (E2BIG). Names the token as ``argv[N]`` (``argv[0]`` is the program)."""
    for index in range(1, len(argv)):
        token = argv[index]
        # os_text_problem's own fast answer for the usual token, without the call.
        if "\x00" in token or not token.isascii():
            problem = os_text_problem(token)
            if problem:
                return f"argv[{index}] {problem}"
    too_big = exec_size_problem(argv, env)
    if too_big is not None:
        problem, position = too_big
        which = "the arguments" if position is None else f"argv[{position}]"
        return f"{which} {problem}"
    return None
