"""Checks of section 3 and 5 of the Command Handle draft: directory, command, environment.

Each function either returns a validated value or raises a HandleError that
says what to fix. Nothing here spawns a process.
"""

from __future__ import annotations

import os
import re
import stat

from .. import _json
from .._ostext import os_text_problem
from ..errors import CommandError, DirectoryError, EnvironmentVariableError, HandleError
from ..policy import Policy

__all__ = ["resolve_command", "resolve_directory", "resolve_environment"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def resolve_directory(directory: str | None, pointer: str = "/directory") -> str:
    """Section 3.1: the directory exists, is a directory and is searchable."""
    if directory is None:
        return os.getcwd()  # 3.1: no directory field, run in the current directory
    if not directory or _CONTROL.search(directory) or os_text_problem(directory):
        raise DirectoryError(
            "the directory must be a non-empty path without control characters or lone surrogates",
            pointer,
        )
    path = os.path.abspath(directory)
    info = _stat(path, f"the directory {directory!r}", DirectoryError, pointer)
    if not stat.S_ISDIR(info.st_mode):
        raise DirectoryError(f"{directory!r} is not a directory", pointer)
    if not os.access(path, os.X_OK):
        raise DirectoryError(f"the directory {directory!r} is not searchable by this user", pointer)
    return path


def _stat(path: str, what: str, error: type[HandleError], pointer: str) -> os.stat_result:
    """``os.stat`` with the refusal a caller can act on: missing, or unreadable."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise error(f"{what} does not exist", pointer) from None
    except OSError as exc:
        raise error(f"{what} cannot be examined: {exc.strerror}", pointer) from None


def _check_executable(path: str, shown: str, policy: Policy, pointer: str) -> str:
    info = _stat(path, f"the command {shown!r}", CommandError, pointer)
    if not stat.S_ISREG(info.st_mode):
        raise CommandError(f"the command {shown!r} is not a regular file", pointer)
    if not os.access(path, os.X_OK):
        raise CommandError(f"the command {shown!r} is not executable by this user", pointer)
    if info.st_mode & (stat.S_ISUID | stat.S_ISGID) and not policy.allow_setuid:
        raise CommandError(
            f"the command {shown!r} is set-user-ID or set-group-ID; the policy does not allow it",
            pointer,
        )
    return path


def resolve_command(command: str, cwd: str, policy: Policy, pointer: str = "/command") -> str:
    """Sections 3.4 and 5.1: return the absolute path of an existing, executable file.

    Absolute paths are used as they are; a path with a slash is relative to the
    validated working directory; a bare name is looked up in the policy's search
    path (absolute entries only: a relative PATH entry would make the lookup
    depend on the directory the handle chose).
    """
    if not command or _CONTROL.search(command) or os_text_problem(command):
        raise CommandError(
            "the command must be a non-empty name without control characters or lone surrogates",
            pointer,
        )
    if "/" in command:
        path = os.path.normpath(os.path.join(cwd, command))
        resolved = _check_executable(path, command, policy, pointer)
    else:
        resolved = ""
        for entry in policy.path_entries():
            if not os.path.isabs(entry):
                continue
            candidate = os.path.join(entry, command)
            try:
                if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                    resolved = _check_executable(candidate, command, policy, pointer)
                    break
            except OSError:
                continue  # an unreadable PATH entry is skipped, like execvp does
        if not resolved:
            raise CommandError(
                f"the command {command!r} was not found in the search path "
                "(use an absolute path, or a path relative to the directory)",
                pointer,
            )
    allowed = policy.allowed_commands
    if (
        allowed is not None
        and resolved not in allowed
        and os.path.basename(resolved) not in allowed
    ):
        raise CommandError(f"the policy does not allow the command {command!r}", pointer)
    return resolved


def _env_value(name: str, value: object, pointer: str) -> str:
    try:
        text = _json.scalar_text(value)
    except _json.NonJSONValueError:
        raise EnvironmentVariableError(f"{name} must be a finite number", pointer) from None
    if text is None:
        kind = "null" if value is None else type(value).__name__
        raise EnvironmentVariableError(
            f"the value of {name} must be a string, number or boolean, not {kind}", pointer
        )
    problem = os_text_problem(text)
    if problem:
        raise EnvironmentVariableError(f"the value of {name} {problem}", pointer)
    return text


def resolve_environment(
    environment: object, policy: Policy, pointer: str = "/environment"
) -> dict[str, str]:
    """Sections 3.2 and 5.2: a clean environment, plus what the policy and handle give."""
    env = {name: os.environ[name] for name in policy.inherit_environment if name in os.environ}
    if environment is None:
        return env
    if not isinstance(environment, dict):
        raise EnvironmentVariableError("the environment must evaluate to an object", pointer)
    for name, value in environment.items():
        where = f"{pointer}/{name}"
        if not _ENV_NAME.fullmatch(name):
            raise EnvironmentVariableError(
                f"{name!r} is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)", where
            )
        if policy.refuses_variable(name):
            raise EnvironmentVariableError(
                f"{name} can make a loader or interpreter run code; the policy does not allow "
                "handles to set it (Policy.allow_environment)",
                where,
            )
        env[name] = _env_value(name, value, where)
    return env
