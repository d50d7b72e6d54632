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
    if not directory or _CONTROL.search(directory) or os_text_problem(directory):
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
    except FileNotFoundError:
        raise error(f"{what} does not exist", pointer) from None
    except OSError as exc:
        raise error(f"{what} cannot be examined: {exc.strerror}", pointer) from None


def _what(shown: str | None) -> str:
    return "the command" if shown is None else f"the command {shown!r}"


def check_program(
    path: str, policy: Policy, pointer: str = "/command", shown: str | None = None
) -> str:
    """A resolved program: a regular, executable file that the policy allows.

    ``shown`` is the command as the handle author wrote it, quoted in messages;
    None when it may hold model data.
    """
    what = _what(shown)
    info = _stat(path, what, CommandError, pointer)
    if not stat.S_ISREG(info.st_mode):
        raise CommandError(f"{what} is not a regular file", pointer)
    if not os.access(path, os.X_OK):
        raise CommandError(f"{what} is not executable by this user", pointer)
    if info.st_mode & (stat.S_ISUID | stat.S_ISGID) and not policy.allow_setuid:
        raise CommandError(
            f"{what} is set-user-ID or set-group-ID; the policy does not allow it", pointer
        )
    if not policy.allows_program(path):
        raise CommandError(f"the policy does not allow {what}", pointer)
    return path


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
    if not command or _CONTROL.search(command) or os_text_problem(command):
        raise CommandError(
            "the command must be a non-empty name without control characters or lone surrogates",
            pointer,
        )
    if "/" in command:
        return check_program(os.path.normpath(os.path.join(cwd, command)), policy, pointer, shown)
    for entry in policy.path_entries():
        if not os.path.isabs(entry):
            continue
        candidate = os.path.join(entry, command)
        try:
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return check_program(candidate, policy, pointer, shown)
        except OSError:
            continue  # an unreadable PATH entry is skipped, like execvp does
    raise CommandError(
        f"{_what(shown)} was not found in the search path "
        "(use an absolute path, or a path relative to the directory)",
        pointer,
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
    env = inherited_environment(policy.inherit_environment)
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
    for index, token in enumerate(argv[1:], 1):
        problem = os_text_problem(token)
        if problem:
            return f"argv[{index}] {problem}"
    too_big = exec_size_problem(argv, env)
    if too_big is not None:
        problem, position = too_big
        which = "the arguments" if position is None else f"argv[{position}]"
        return f"{which} {problem}"
    return None
