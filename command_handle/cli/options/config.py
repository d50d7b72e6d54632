"""``--config FILE``: one TOML file (read with the standard library) for the
toolbox commands; flags given on the command line override it.

The file's values become the defaults of the same options the flags set, so
every group reads one place (its options) whatever the source. A group takes
part by declaring what it reads from the file:

- ``CONFIG_KEYS = {"policy.timeout": "timeout", ...}``: a TOML key (its table
  and name) and the option (argparse ``dest``) it sets; the value is checked
  against that option (a list for a repeatable flag, a boolean for a switch, a
  number for a numeric one, one of the choices);
- ``CONFIG_PATHS = {"policy.workspace", ...}``: those of its keys that are
  paths; in the file, ``~`` is the home directory and a relative path is
  relative to the file's folder (a host starts a server in any directory);
- or, for a table of its own shape, ``CONFIG_SECTION = "credentials"`` and
  ``config_values(table) -> {dest: value}``, which raises
  :class:`ConfigValueError` naming the key it refuses.

A key no group declares is an error naming its line, and so is a value of the
wrong type: nothing runs on a file that says something nobody reads.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...errors import CommandHandleError
from .._common import UsageError
from ._group import Settings

__all__ = ["ConfigValueError", "add", "apply_config", "declare", "settings"]

MAX_CONFIG_BYTES = 1 << 20
# Tables a command declares for its own options (``[mcp]``): "table.key" -> dest.
_COMMAND_KEYS: dict[str, str] = {}


class ConfigValueError(CommandHandleError, ValueError):
    """A group's refusal of a key in its table: ``key`` (dotted below the table)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def declare(keys: Mapping[str, str]) -> None:
    """Declare ``"table.key" -> dest`` for a command's own options."""
    _COMMAND_KEYS.update(keys)


def add(parser: Any) -> None:
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a TOML file of settings (the Policy, credentials, ...); flags override it "
        "(docs/handles.md, 'The configuration file')",
    )


def settings(options: argparse.Namespace) -> Settings:
    return Settings()  # the file's values are already the options' defaults


class _FromFile(list[Any]):
    """A repeatable option's list as the file gave it: flags given for the same
    option replace it instead of adding to it."""

    given = 0


def _line_of(text: str, table: str, key: str) -> int | None:
    """The line (from 1) where ``key`` is written in ``table``, when it can be found."""
    current = ""
    pattern = re.compile(rf"""^\s*(?:"{re.escape(key)}"|'{re.escape(key)}'|{re.escape(key)})\s*=""")
    header = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
    for number, line in enumerate(text.splitlines(), 1):
        found = header.match(line)
        if found:
            current = ".".join(part.strip().strip("\"'") for part in found.group(1).split("."))
            continue
        if current == table and pattern.match(line):
            return number
        if not current and line.strip().startswith(f"{table}.{key}"):
            return number
    return None


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every option of every subcommand, by dest (the first one found)."""
    found: dict[str, argparse.Action] = {}
    pending = [parser]
    while pending:
        current = pending.pop()
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending.extend(action.choices.values())
            elif action.dest not in found and action.option_strings:
                found[action.dest] = action
    return found


def _checked(value: object, action: argparse.Action) -> tuple[object, str | None]:
    """``value`` as the option holds it, or why it cannot be."""
    if isinstance(action, argparse._AppendAction):
        if isinstance(value, str):
            value = [value]
        if not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            return None, "must be a list of strings"
        items = _FromFile(value)
        items.given = len(items)
        return items, None
    if isinstance(action, (argparse._StoreTrueAction, argparse.BooleanOptionalAction)):
        return value, None if isinstance(value, bool) else "must be true or false"
    if action.type in (int, float) and not isinstance(value, bool):
        if isinstance(value, int) or (action.type is float and isinstance(value, float)):
            return action.type(value), None
        return None, "must be a whole number" if action.type is int else "must be a number"
    if not isinstance(value, str):
        return None, "must be a string"
    if action.choices is not None and value not in action.choices:
        return None, f"must be one of {', '.join(map(str, action.choices))}"
    if callable(action.type) and action.type is not str:
        # The flag's own check (``--terminal-size 80x24``), here where the line is known.
        try:
            action.type(value)
        except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
            return None, str(exc) or "is not a valid value"
    return value, None


def _as_path(value: str, folder: str) -> str:
    """A path written in the file: ``~`` expanded, relative to the file's folder."""
    return os.path.join(folder, os.path.expanduser(value))


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, object]]:
    for key, value in table.items():
        yield f"{prefix}{key}", value


def _groups() -> list[Any]:
    from . import GROUPS

    return list(GROUPS)


def _read(path: str) -> tuple[str, dict[str, Any]]:
    import stat
    import tomllib

    try:
        # O_NONBLOCK: opening a FIFO does not wait for a writer; it is refused below.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(descriptor, "rb") as file:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                raise UsageError(f"--config: {path} is not a regular file")
            if info.st_size > MAX_CONFIG_BYTES:
                raise UsageError(f"--config: {path} is larger than {MAX_CONFIG_BYTES} bytes")
            text = file.read(MAX_CONFIG_BYTES + 1).decode("utf-8")
    except OSError as exc:
        raise UsageError(f"--config: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--config: {path} is not UTF-8 text") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise UsageError(f"{path}: nested too deeply to read") from None


def _values(path: str, parser: argparse.ArgumentParser) -> dict[str, object]:
    """The options the file sets, by dest, checked."""
    text, document = _read(path)
    keys = dict(_COMMAND_KEYS)
    paths: set[str] = set()
    folder = os.path.dirname(os.path.abspath(path))
    tables: dict[str, Callable[[dict[str, Any]], dict[str, object]]] = {}
    for group in _groups():
        keys.update(getattr(group, "CONFIG_KEYS", {}))
        paths.update(getattr(group, "CONFIG_PATHS", ()))
        section = getattr(group, "CONFIG_SECTION", None)
        if section is not None:
            tables[section] = group.config_values
    known_tables = {key.split(".", 1)[0] for key in keys} | set(tables)
    actions = _actions(parser)

    def fail(table: str, key: str, message: str) -> UsageError:
        line = _line_of(text, table, key.split(".", 1)[0])
        if line is None and table:  # a table of its own: [policy.sub]
            line = _header_line(text, f"{table}.{key.split('.', 1)[0]}")
        where = f"{path}:{line}" if line is not None else path
        return UsageError(f"{where}: {f'[{table}] ' if table else ''}{key}: {message}")

    values: dict[str, object] = {}
    for table, content in document.items():
        if table not in known_tables:
            line = _line_of(text, "", table) or _header_line(text, table)
            where = f"{path}:{line}" if line is not None else path
            known = ", ".join(f"[{name}]" for name in sorted(known_tables))
            raise UsageError(f"{where}: unknown table [{table}] (the tables are {known})")
        if not isinstance(content, dict):
            raise fail("", table, "must be a table")
        if table in tables:
            try:
                values.update(tables[table](content))
            except ConfigValueError as exc:
                raise fail(table, exc.key, exc.message) from None
            continue
        for key, value in _flatten(content):
            dest = keys.get(f"{table}.{key}")
            if dest is None:
                names = sorted(k.split(".", 1)[1] for k in keys if k.startswith(f"{table}."))
                close = difflib.get_close_matches(key, names, n=1)
                hint = f"did you mean {close[0]}?" if close else f"the keys are {', '.join(names)}"
                raise fail(table, key, f"unknown key ({hint})")
            action = actions.get(dest)
            if action is None:
                values[dest] = value
                continue
            checked, problem = _checked(value, action)
            if problem:
                raise fail(table, key, problem)
            if f"{table}.{key}" in paths and isinstance(checked, list):
                checked[:] = [_as_path(item, folder) for item in checked]
            elif f"{table}.{key}" in paths and isinstance(checked, str):
                checked = _as_path(checked, folder)
            values[dest] = checked
    return values


def _header_line(text: str, table: str) -> int | None:
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(rf"^\s*\[\[?\s*{re.escape(table)}\s*[\].]", line):
            return number
    return None


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_parsers(sub))
    return found


def apply_config(
    parser: argparse.ArgumentParser, argv: list[str] | None, options: argparse.Namespace
) -> argparse.Namespace:
    """``options`` parsed again with the file's values as the defaults: a flag
    given on the command line wins, and a repeated flag replaces the file's list."""
    path = getattr(options, "config", None)
    if not path:
        return options
    values = _values(path, parser)
    for each in _parsers(parser):
        dests = {action.dest for action in each._actions}
        given = {dest: value for dest, value in values.items() if dest in dests}
        if given:
            each.set_defaults(**given)
    again = parser.parse_args(argv)
    for dest, value in vars(again).items():
        if isinstance(value, _FromFile):
            kept = value[value.given :] if len(value) > value.given else list(value)
            setattr(again, dest, kept)
    # Settings only the file can give (no command has a flag for them) reach the
    # groups too; a flag's value stays off a command that lacks the flag.
    flags = _actions(parser)
    for dest, value in values.items():
        if dest not in flags and not hasattr(again, dest):
            setattr(again, dest, value)
    return again
