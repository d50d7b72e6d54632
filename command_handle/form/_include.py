"""The ``$include`` resolution policy (Tool Form sections 4.4 and 8.2).

What may be included, by default:

- ``#/json/pointer``: a part of the template's own document;
- ``path/to/file.json`` (optionally with ``#/pointer``): a file under the
  configured include base directory, after resolving ``..`` and symbolic
  links, at most ``Limits.max_include_bytes`` long, parsed as strict JSON.

Nothing else: no URI scheme (so no network), no absolute paths, nothing outside
the base directory, and no files at all when no base directory is configured.
An application that wants other sources passes ``include_resolver``, a function
from the reference (without its fragment) to a JSON value; the fragment is then
applied by this module. Included content is not transformed (section 4.4 step
5), so includes cannot chain and cycles cannot arise.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .. import _json
from . import _pointer
from ._errors import IncludeError

__all__ = ["IncludeResolver", "Includer"]

IncludeResolver = Callable[[str], object]


class Includer:
    def __init__(
        self,
        document: object,
        base_dir: str | os.PathLike[str] | None,
        resolver: IncludeResolver | None,
        max_bytes: int,
    ) -> None:
        self.document = document
        self.base_dir = Path(base_dir).resolve() if base_dir is not None else None
        self.resolver = resolver
        self.max_bytes = max_bytes

    def load(self, reference: str, pointer: str, *, computed: bool = False) -> object:
        """Load ``reference``. A ``computed`` reference came from the arguments and is
        never quoted in error messages."""
        name = _COMPUTED if computed else _describe(reference)
        parts = urlsplit(reference)
        fragment = unquote(parts.fragment)
        if parts.scheme or parts.netloc:
            raise IncludeError(
                f"$include of {name} refused: only relative file references "
                "and '#' fragments are allowed (no URI schemes, no network)",
                pointer,
            )
        if parts.query:
            raise IncludeError("$include references may not carry a query component", pointer)
        path = unquote(parts.path)
        if path == "":
            resource = self.document
        elif self.resolver is not None:
            try:
                resource = self.resolver(path)
            except IncludeError as exc:
                raise exc.at(pointer) from None
            except Exception as exc:
                raise IncludeError(
                    f"include resolver failed for {name}: {type(exc).__name__}", pointer
                ) from None
        else:
            resource = self._load_file(path, pointer, _COMPUTED if computed else _describe(path))
        if parts.fragment or reference.endswith("#"):
            try:
                return _pointer.resolve(resource, fragment)
            except LookupError as exc:
                shown = "of the computed reference" if computed else repr(fragment)
                raise IncludeError(
                    f"$include fragment {shown} does not resolve: {exc}", pointer
                ) from None
        return resource

    def _load_file(self, path: str, pointer: str, name: str) -> object:
        if path.startswith("/") or "\x00" in path:
            raise IncludeError(
                f"$include of {name} refused: absolute paths are not allowed; "
                "use a path relative to the include base or a '#' fragment",
                pointer,
            )
        if self.base_dir is None:
            raise IncludeError(
                f"$include of file {name} refused: no include base directory is "
                "configured (pass include_base to compile_template)",
                pointer,
            )
        target = (self.base_dir / path).resolve()
        if not target.is_relative_to(self.base_dir):
            raise IncludeError(
                f"$include of {name} refused: it resolves outside the include base",
                pointer,
            )
        try:
            # Non-blocking, so that opening a FIFO (or a device) returns at once;
            # anything but a regular file is then refused before it is read.
            fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            with open(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise IncludeError(f"$include target {name} is not a regular file", pointer)
                data = handle.read(self.max_bytes + 1)
        except FileNotFoundError:
            raise IncludeError(f"$include file {name} does not exist", pointer) from None
        except IsADirectoryError:
            raise IncludeError(f"$include target {name} is a directory", pointer) from None
        except OSError as exc:
            raise IncludeError(
                f"$include file {name} cannot be read: {exc.strerror}", pointer
            ) from None
        if len(data) > self.max_bytes:
            raise IncludeError(
                f"$include file {name} is larger than {self.max_bytes} bytes", pointer
            )
        try:
            return _json.loads(data)
        except _json.JSONDecodeError as exc:
            raise IncludeError(
                f"$include file {name} is not valid JSON: {exc.message} "
                f"(line {exc.line}, column {exc.column})",
                pointer,
            ) from None


_COMPUTED = "the computed reference"


def _describe(reference: str) -> str:
    # References are written by the template author, not the model; still, keep them short.
    return repr(reference if len(reference) <= 200 else reference[:200] + "...")
