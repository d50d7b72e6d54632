"""jsonschema, imported with its format libraries deferred to their first check.

``jsonschema._format`` imports every format library it finds when jsonschema
is imported, to register its checks: about 30 ms here (``arrow`` through
``isoduration``, ``rfc3986_validator``'s large regular expressions,
``webcolors``...), for schemas that mostly use no ``format`` at all. While
jsonschema imports, each library not yet imported is replaced by a stand-in
module: every function or class jsonschema takes from it is a proxy that
imports the library on its first call; the exception classes it names in
``raises=`` are stand-ins too, and a proxy turns the library's own exception
into the stand-in (the library's is its ``__cause__``), so a failed check is
still a format failure. jsonschema registers the same checks either way;
only the libraries that are installed get a stand-in, so a missing one is
still skipped as jsonschema skips it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["import_jsonschema"]

# Each library jsonschema._format imports, with the exception classes it
# reads at import time (for ``raises=``).
LIBRARIES: dict[str, tuple[str, ...]] = {
    "fqdn": (),
    "idna": ("IDNAError",),
    "rfc3987": (),
    "rfc3986_validator": (),
    "rfc3339_validator": (),
    "webcolors": (),
    "jsonpointer": ("JsonPointerException",),
    "uri_template": (),
    "isoduration": ("DurationParsingException",),
}


class _Deferred(ModuleType):
    """A format library, imported on the first call of anything taken from it."""

    def __init__(self, name: str, exceptions: tuple[str, ...]) -> None:
        super().__init__(name)
        self._real: ModuleType | None = None
        self._exceptions = {
            attribute: type(attribute, (ValueError,), {"__module__": __name__})
            for attribute in exceptions
        }

    def _library(self) -> ModuleType:
        if self._real is None:
            self._real = importlib.import_module(self.__name__)
        return self._real

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):  # the import system's probes
            raise AttributeError(attribute)
        if attribute in self._exceptions:
            return self._exceptions[attribute]
        proxy = self._proxy(attribute)
        setattr(self, attribute, proxy)
        return proxy

    def _proxy(self, attribute: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            library = self._library()
            try:
                return getattr(library, attribute)(*args, **kwargs)
            except Exception as exc:
                for name, stand_in in self._exceptions.items():
                    if isinstance(exc, getattr(library, name)):
                        raise stand_in(str(exc)) from exc
                raise

        call.__name__ = call.__qualname__ = attribute
        return call


def import_jsonschema() -> ModuleType:
    """``import jsonschema``, with the format libraries not yet imported deferred."""
    if "jsonschema" in sys.modules:
        return sys.modules["jsonschema"]
    stand_ins = {
        name: _Deferred(name, exceptions)
        for name, exceptions in LIBRARIES.items()
        if name not in sys.modules and importlib.util.find_spec(name) is not None
    }
    sys.modules.update(stand_ins)
    try:
        import jsonschema
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
    return jsonschema
