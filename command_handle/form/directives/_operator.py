"""A base for Operator Directives that read no other property of their object."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._compiler import Compiler
    from .._registry import Scope


class SimpleOperator:
    category = "operator"

    def claimed_properties(self, compiler: Compiler, obj: Mapping[str, Any]) -> frozenset[str]:
        return frozenset()

    def needs_provenance(self, compiler: Compiler, obj: Mapping[str, Any]) -> bool:
        return False

    def input_scope(self, compiler: Compiler, obj: Mapping[str, Any]) -> Scope | bool | None:
        return False
