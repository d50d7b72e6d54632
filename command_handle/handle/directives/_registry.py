"""The tables a handle's fields compile with: Tool Form plus this layer's extensions.

``$credential`` is registered only for ``environment`` and ``io.stdin``;
elsewhere it is a load error that says why. The ``result`` template is shown
to the model, so neither extension may appear there.

The tables are copies of ``DEFAULT_REGISTRY``, made again whenever it has
changed since the last copy: a transform, directive or encoding an
application registers there is known to every handle loaded afterwards. A
handle already loaded keeps the tables it was compiled with.
"""

from __future__ import annotations

from ...form import DEFAULT_REGISTRY, Registry
from . import context, credential
from ._application import Refused

__all__ = ["registry_for"]


def _build(*, credentials: bool, context_values: bool) -> Registry:
    table = DEFAULT_REGISTRY.copy()
    table.add_directive(
        credential.CredentialDirective()
        if credentials
        else Refused(credential.NAME, credential.WHERE)
    )
    table.add_directive(
        context.ContextDirective()
        if context_values
        else Refused(context.NAME, "the result is shown to the model")
    )
    return table


_SECRET_FIELDS = frozenset({"environment", "io/stdin"})


class _Tables:
    """The three tables, and the generation of ``DEFAULT_REGISTRY`` they copy."""

    __slots__ = ("generation", "result", "with_credentials", "without_credentials")

    def __init__(self) -> None:
        # Read the generation first: a registration that lands while the copies
        # are made leaves them marked older than it, so the next load copies again.
        self.generation = DEFAULT_REGISTRY.generation
        self.with_credentials = _build(credentials=True, context_values=True)
        self.without_credentials = _build(credentials=False, context_values=True)
        self.result = _build(credentials=False, context_values=False)


_tables = _Tables()


def registry_for(field: str) -> Registry:
    """The table for the handle field ``field`` (``"arguments"``, ``"io/stdin"``...)."""
    global _tables
    tables = _tables
    if tables.generation != DEFAULT_REGISTRY.generation:
        tables = _tables = _Tables()
    if field == "result":
        return tables.result
    return tables.with_credentials if field in _SECRET_FIELDS else tables.without_credentials
