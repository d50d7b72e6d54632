"""Reading a JSON or YAML document from a file, with errors that say where.

Command Handles and UTCP documents are both read here, so a broken file gets
the same kind of message wherever it is loaded: the file name, what is wrong,
and the line and column when the parser knows them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from . import _json
from .errors import HandleLoadError

__all__ = ["read_document"]


def _yaml_problem(name: str, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "malformed document"
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"{name} is not valid YAML: {problem}{where}"


def _json_problem(name: str, exc: _json.JSONDecodeError) -> str:
    where = f" (line {exc.line}, column {exc.column})" if exc.line else ""
    return f"{name} is not valid JSON: {exc.message}{where}"


def read_document(path: str | os.PathLike[str], error: type[HandleLoadError]) -> dict[str, Any]:
    """The object in a ``.json``, ``.yaml`` or ``.yml`` file; ``error`` if there is none."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise error(f"cannot read {file}: {exc.strerror}") from None
    if file.suffix in (".yaml", ".yml"):
        try:
            document = yaml.safe_load(data)
        except yaml.YAMLError as exc:
            raise error(_yaml_problem(file.name, exc)) from None
    else:
        try:
            document = _json.loads(data)
        except _json.JSONDecodeError as exc:
            raise error(_json_problem(file.name, exc)) from None
    if not isinstance(document, dict):
        raise error(
            f"{file.name} must hold an object, not {_kind(document)} (at the document root)"
        )
    return document


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if value is None:
        return "nothing (the file is empty or null)"
    return f"a {type(value).__name__}"
