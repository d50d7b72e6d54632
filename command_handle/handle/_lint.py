"""Warnings about a handle that loads but is likely wrong (``command-handle validate``).

Load errors are certain; these are not, so they are warnings, each with the
JSON Pointer of what it is about and a suggested fix (``--strict`` turns them
into failures):

- the program is not on this machine (a bare name not on PATH, or a path
  that is not an executable file);
- model data reaches an interpreter's code string (``sh -c``, ``python -c``,
  ``node -e``...), where a value such as ``hi; id`` is code;
- ``--`` given to a program that prints it instead of ending its options
  (``echo``), or written before options the template means as options;
- a parameter whose name says it is a path, without a ``paths`` rule.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..form import read_names

if TYPE_CHECKING:
    from ._model import CommandHandle

__all__ = ["LintWarning", "lint"]


@dataclass(frozen=True)
class LintWarning:
    """One warning: where (a JSON Pointer into the handle), what, and the fix."""

    pointer: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.message} (fix: {self.fix})"


_SHELL_CODE = ("-c",)
# Each interpreter (by its name without a version) and the options whose next
# value is code it runs.
CODE_OPTIONS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox"), ("-c",)
    ),
    **dict.fromkeys(("python", "pypy"), ("-c",)),
    **dict.fromkeys(("node", "nodejs"), ("-e", "--eval", "-p", "--print")),
    "deno": ("eval",),
    "bun": ("-e", "--eval"),
    **dict.fromkeys(("perl",), ("-e", "-E")),
    "ruby": ("-e",),
    "php": ("-r",),
    **dict.fromkeys(("lua", "luajit"), ("-e",)),
    "Rscript": ("-e",),
    **dict.fromkeys(("pwsh", "powershell"), ("-c", "-Command", "-command")),
    "osascript": ("-e",),
    "tclsh": ("-c",),
}
# Programs that run the program named in their arguments (``env sh -c ...``).
WRAPPERS = frozenset(
    {
        "env",
        "nice",
        "nohup",
        "timeout",
        "stdbuf",
        "setsid",
        "sudo",
        "doas",
        "chroot",
        "ionice",
        "taskset",
        "flock",
        "unshare",
        "xargs",
        "time",
        "chrt",
        "runuser",
        "prlimit",
    }
)
# Programs that print ``--`` rather than take it as the end of their options.
NO_END_OF_OPTIONS = frozenset({"echo"})
_LITERAL_OPTION = re.compile(r"^--?[A-Za-z][A-Za-z0-9-]*=?$")
_PATH_NAME = re.compile(
    r"(?:^|_)(?:path|paths|file|files|filename|filenames|filepath|dir|dirs|directory|"
    r"directories|folder|folders)(?:$|_)",
    re.IGNORECASE,
)


def _program_name(command: str) -> str:
    """``/usr/bin/python3.12`` as ``python``: the base name without a version."""
    base = os.path.basename(command)
    return re.sub(r"[0-9.]+$", "", base) or base


def _dynamic(value: object) -> bool:
    """Whether a template reads the arguments (any name, at any depth)."""
    names, _bound = read_names(value)
    return bool(names)


def _is_code_option(token: str, options: tuple[str, ...]) -> bool:
    if token in options:
        return True
    # A cluster of short shell options ending in c: sh -ec, bash -lc.
    return options == _SHELL_CODE and re.fullmatch(r"-[a-zA-Z]*c", token) is not None


def _code_strings(node: object, pointer: str, options: tuple[str, ...]) -> list[str]:
    """The pointers of templates over the arguments placed right after a code option."""
    found: list[str] = []
    if isinstance(node, list):
        for index, item in enumerate(node[:-1]):
            code_option = isinstance(item, str) and _is_code_option(item, options)
            if code_option and _dynamic(node[index + 1]):
                found.append(f"{pointer}/{index + 1}")
        for index, item in enumerate(node):
            found.extend(_code_strings(item, f"{pointer}/{index}", options))
    elif isinstance(node, dict):
        for key, value in node.items():
            here = f"{pointer}/{json_pointer_token(key)}"
            if _is_code_option(key, options) and _dynamic(value):
                found.append(here)
            else:
                found.extend(_code_strings(value, here, options))
    return found


def json_pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _double_dashes(node: object, pointer: str) -> list[str]:
    found: list[str] = []
    if node == "--":
        found.append(pointer)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found.extend(_double_dashes(item, f"{pointer}/{index}"))
    elif isinstance(node, dict):
        for key, value in node.items():
            here = f"{pointer}/{json_pointer_token(key)}"
            found.extend([here] if key == "--" else _double_dashes(value, here))
    return found


def _options_after_end(node: object, pointer: str) -> list[tuple[str, str]]:
    """``(pointer, option)`` for each option the template writes after its own
    ``--``, which the program then reads as an operand."""
    found: list[tuple[str, str]] = []
    if isinstance(node, list):
        ended = False
        for index, item in enumerate(node):
            if item == "--":
                ended = True
            elif ended and isinstance(item, str) and _LITERAL_OPTION.match(item):
                found.append((f"{pointer}/{index}", item))
            found.extend(_options_after_end(item, f"{pointer}/{index}"))
    elif isinstance(node, dict):
        ended = False
        for key, value in node.items():
            here = f"{pointer}/{json_pointer_token(key)}"
            if key == "--":
                ended = True
            elif ended and _LITERAL_OPTION.match(key):
                found.append((here, key))
            found.extend(_options_after_end(value, here))
    return found


def _wrapped_code_strings(
    arguments: list[object], wrapper: str
) -> tuple[str, tuple[str, ...] | None, list[str]]:
    """For ``env sh -c {{x}}``, ``timeout 5 bash -c ...``: the interpreter the
    wrapper runs, its code options, and the pointers of model data after them."""
    for index, item in enumerate(arguments):
        if not isinstance(item, str) or "{{" in item:
            continue
        options = CODE_OPTIONS.get(_program_name(item))
        if options is None:
            continue
        found = []
        for later in range(index + 1, len(arguments) - 1):
            token = arguments[later]
            if (
                isinstance(token, str)
                and _is_code_option(token, options)
                and _dynamic(arguments[later + 1])
            ):
                found.append(f"/arguments/{later + 1}")
        return _program_name(item), options, found
    return wrapper, None, []


def _program_problem(command: str) -> str | None:
    if "/" not in command:
        if shutil.which(command) is None:
            return f"the program `{command}` is not on this machine's PATH"
        return None
    if os.path.isabs(command) and not (os.path.isfile(command) and os.access(command, os.X_OK)):
        return f"the program `{command}` is not an executable file on this machine"
    return None


def lint(handle: CommandHandle) -> list[LintWarning]:
    """The warnings about ``handle`` (empty when there is nothing to say)."""
    warnings: list[LintWarning] = []
    command = handle.command if isinstance(handle.command, str) else None
    if command is not None and "{{" not in command:
        problem = _program_problem(command)
        if problem:
            warnings.append(
                LintWarning(
                    "/command",
                    problem,
                    "install it, or write the path of the program this tool needs",
                )
            )
        name = _program_name(command)
        options = CODE_OPTIONS.get(name)
        found = (
            _code_strings(handle.arguments, "/arguments", options)
            if options and handle.arguments is not None
            else []
        )
        if name in WRAPPERS and isinstance(handle.arguments, list):
            name, options, found = _wrapped_code_strings(handle.arguments, name)
        if options:
            for pointer in found:
                warnings.append(
                    LintWarning(
                        pointer,
                        f"model data reaches the code string of `{name}` "
                        f"({'/'.join(options)}), where a value such as `hi; id` is code",
                        "run the program itself with the data as separate arguments, or pass "
                        "the data in the environment or on stdin and keep the code written",
                    )
                )
        if name in NO_END_OF_OPTIONS and handle.arguments is not None:
            for pointer in _double_dashes(handle.arguments, "/arguments"):
                warnings.append(
                    LintWarning(
                        pointer,
                        f"`{name}` does not take `--` as the end of its options: it prints it",
                        "remove the `--`; the args encoding already refuses values that "
                        "begin like an option",
                    )
                )
    if handle.arguments is not None:
        for pointer, option in _options_after_end(handle.arguments, "/arguments"):
            warnings.append(
                LintWarning(
                    pointer,
                    f"`{option}` is written after `--`, so the program reads it as an operand, "
                    "not an option",
                    "move the `--` after the options, right before the values from the model",
                )
            )
    properties = handle.parameters.get("properties")
    kept = set(handle.paths)
    if handle.directory_within is not None and handle.directory is not None:
        kept.update(name for _, name in read_names(handle.directory)[0])
    directories = (
        {name for _, name in read_names(handle.directory)[0]}
        if handle.directory is not None
        else set()
    )
    if isinstance(properties, dict):
        for name in properties:
            if _PATH_NAME.search(name) and name not in kept:
                fix = (
                    'add "directory_within": "workspace"'
                    if name in directories
                    else f'add "paths": {{"{name}": {{"within": "workspace"}}}}'
                )
                warnings.append(
                    LintWarning(
                        f"/parameters/properties/{json_pointer_token(name)}",
                        f"the parameter `{name}` looks like a path but has no `paths` rule, "
                        "so the model may name any file the program can reach",
                        fix,
                    )
                )
    return warnings
