"""Reading a JSON or YAML document from a file, with errors that say where.

Command Handles and UTCP documents are both read here, so a broken file gets
the same kind of message wherever it is loaded: the file name, what is wrong,
and the line and column when the parser knows them. Both formats refuse a key
written twice in one object, which a dict would silently reduce to one.

Only a regular file is read, and only up to :data:`MAX_DOCUMENT_BYTES`: a
FIFO in a folder of tools would block the load forever, and a device (a link
named ``x.json`` to ``/dev/zero``) would be read until memory ran out.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _json
from .errors import HandleLoadError
from .form.extend import json_pointer

if TYPE_CHECKING:
    import yaml  # imported on the first YAML file: a folder of JSON never pays for it

__all__ = ["MAX_DOCUMENT_BYTES", "read_document", "read_regular_file"]

# A tool document is a few kilobytes; the largest UTCP manuals seen are well
# under a megabyte. Past this a file is refused, not read.
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024


def _yaml_problem(name: str, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "malformed document"
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"{name} is not valid YAML: {problem}{where}"


_MERGE = "tag:yaml.org,2002:merge"


def _load_yaml(name: str, data: bytes, error: type[HandleLoadError]) -> object:
    """``yaml.safe_load``, refusing (with ``error``) a mapping that holds one key twice."""
    import yaml

    loader = yaml.SafeLoader(data)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        duplicate = _duplicate_key(loader, root)
        if duplicate is not None:
            key, pointer, mark = duplicate
            raise error(
                f"{name} is not valid YAML: duplicate mapping key {key!r}: YAML mappings "
                f"here must have unique keys (at {pointer}, "
                f"line {mark.line + 1}, column {mark.column + 1})"
            )
        return loader.construct_document(root)
    finally:
        loader.dispose()


def _duplicate_key(loader: yaml.SafeLoader, root: yaml.Node) -> tuple[str, str, yaml.Mark] | None:
    """The first key written twice in one mapping, in document order: its text, its
    JSON Pointer and where it is written. Keys are compared as YAML reads them
    (``1`` and ``0x1`` are one key); a key that a ``<<`` merge brings in may be
    written again, which is what merging is for."""
    import yaml

    visited: set[int] = set()  # an anchored node is checked once, however often it is used
    pending: list[tuple[yaml.Node, str]] = [(root, "")]
    while pending:
        node, pointer = pending.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        children: list[tuple[yaml.Node, str]] = []
        if isinstance(node, yaml.MappingNode):
            seen: set[object] = set()
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE or not isinstance(key_node, yaml.ScalarNode):
                    children.append((value_node, pointer))
                    continue
                child = json_pointer.child(pointer, key_node.value)
                key = loader.construct_object(key_node)
                if key in seen:
                    return key_node.value, child, key_node.start_mark
                seen.add(key)
                children.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            children = [(item, f"{pointer}/{index}") for index, item in enumerate(node.value)]
        pending.extend(reversed(children))
    return None


def _json_problem(name: str, exc: _json.JSONDecodeError) -> str:
    where = f" (line {exc.line}, column {exc.column})" if exc.line else ""
    return f"{name} is not valid JSON: {exc.message}{where}"


def read_document(path: str | os.PathLike[str], error: type[HandleLoadError]) -> dict[str, Any]:
    """The object in a ``.json``, ``.yaml`` or ``.yml`` file; ``error`` if there is none."""
    file = Path(path)
    data = read_regular_file(file, MAX_DOCUMENT_BYTES, error)
    if file.suffix in (".yaml", ".yml"):
        import yaml

        try:
            document = _load_yaml(file.name, data, error)
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


def read_regular_file(
    file: Path, limit: int, error: type[HandleLoadError] = HandleLoadError
) -> bytes:
    """The bytes of ``file``, which must be a regular file of at most ``limit`` bytes.

    It is opened without blocking (a FIFO opens at once, a terminal does not
    become ours), and anything but a regular file is refused before a byte is
    read; a file that grows past ``limit`` while it is read is refused too.
    """
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"cannot read {file}: {exc.strerror}") from None
    with open(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"cannot read {file.name}: {_file_kind(mode)}, not a regular file")
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise error(f"cannot read {file}: {exc.strerror}") from None
    if len(data) > limit:
        raise error(f"cannot read {file.name}: it is larger than {_size(limit)}")
    return data


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "it is a folder"
    if stat.S_ISFIFO(mode):
        return "it is a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "it is a device"
    if stat.S_ISSOCK(mode):
        return "it is a socket"
    return "it is a special file"


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if value is None:
        return "nothing (the file is empty or null)"
    return f"a {type(value).__name__}"
