"""jsonschema, imported when first needed and without its IRI grammar.

Importing jsonschema with the ``format-nongpl`` extra costs about 0.1 s of
format-checker imports, plus about a second more for ``rfc3987_syntax``,
which builds a grammar at import time. ``import command_handle`` and the CLI
pay neither: :func:`load` imports jsonschema on the first schema compiled,
with ``rfc3987_syntax`` hidden, and registers the ``iri`` and
``iri-reference`` format checks itself, importing ``rfc3987_syntax`` the
first time one of them is used. Every other format check is jsonschema's own.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import ModuleType

__all__ = ["load"]

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
