"""jsonschema, imported when first needed and without its IRI grammar.

Importing jsonschema with the ``format-nongpl`` extra costs about 0.1 s of
format-checker imports, plus about a second more for ``rfc3987_syntax``,
which builds a grammar at import time. ``import command_handle`` and the CLI
pay neither: :func:`load` imports jsonschema on the first schema compiled,
with ``rfc3987_syntax`` hidden, and registers the ``iri`` and
``iri-reference`` format checks itself, importing ``rfc3987_syntax`` the
first time one of them is used. Every other format check is jsonschema's own.

:func:`check_schema` checks a schema against the Draft 2020-12 meta-schema
once per distinct schema: that check costs about a millisecond, and a folder
of tools, a reload or a dict handle passed to every call repeats the same
schemas.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from types import ModuleType

from ._json import cache_key

__all__ = ["check_schema", "load"]

# Distinct valid schemas remembered; the least recently seen is forgotten first.
CHECKED_SCHEMAS = 4096

_GRAMMAR = "rfc3987_syntax"


def _iri_check(rule: str) -> Callable[[object], bool]:
    def check(instance: object) -> bool:
        if not isinstance(instance, str):
            return True
        try:
            from rfc3987_syntax import is_valid_syntax  # type: ignore[import-untyped]
        except ImportError:  # not installed: jsonschema would not check it either
            return True
        return bool(is_valid_syntax(rule, instance))

    return check


@functools.cache
def load() -> ModuleType:
    """The jsonschema module, with lazy IRI format checks registered."""
    if _GRAMMAR in sys.modules:
        import jsonschema
    else:
        sys.modules[_GRAMMAR] = None  # type: ignore[assignment]  # its import fails: skipped
        try:
            import jsonschema
        finally:
            del sys.modules[_GRAMMAR]
    # The drafts that define the IRI formats.
    for draft in (
        jsonschema.Draft7Validator,
        jsonschema.Draft201909Validator,
        jsonschema.Draft202012Validator,
    ):
        checker = draft.FORMAT_CHECKER
        if "iri" not in checker.checkers:
            checker.checks("iri", raises=ValueError)(_iri_check("iri"))
            checker.checks("iri-reference", raises=ValueError)(_iri_check("iri_reference"))
    return jsonschema


_checked: OrderedDict[str, None] = OrderedDict()
_checked_lock = threading.Lock()


def check_schema(schema: object) -> None:
    """``Draft202012Validator.check_schema(schema)``, run once per distinct schema.

    Raises jsonschema's ``SchemaError`` as it does. Only schemas that passed
    are remembered, keyed by their JSON text (the meta-schema check
    depends on nothing else), so a refusal is always the check's own, with
    its path. A schema that is not plain JSON is checked every time.
    """
    key = cache_key(schema)
    if key is not None:
        with _checked_lock:
            if key in _checked:
                _checked.move_to_end(key)
                return
    load().Draft202012Validator.check_schema(schema)
    if key is not None:
        with _checked_lock:
            _checked[key] = None
            while len(_checked) > CHECKED_SCHEMAS:
                _checked.popitem(last=False)
