"""The tables a handle's fields compile with: Tool Form plus this layer's extensions.

``$credential`` is registered only for ``environment`` and ``io.stdin``;
elsewhere it is a load error that says why. The ``result`` template is shown
to the model, so neither extension may appear there.
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
_WITH_CREDENTIALS = _build(credentials=True, context_values=True)
_WITHOUT_CREDENTIALS = _build(credentials=False, context_values=True)
_RESULT = _build(credentials=False, context_values=False)


def registry_for(field: str) -> Registry:
    """The table for the handle field ``field`` (``"arguments"``, ``"io/stdin"``...)."""
    if field == "result":
        return _RESULT
    return _WITH_CREDENTIALS if field in _SECRET_FIELDS else _WITHOUT_CREDENTIALS
