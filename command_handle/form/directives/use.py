"""``$use`` (section 4.2): the transformed value, so operators can apply to literals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _pointer
from .._nodes import Node
from ._common import refuse_plain

if TYPE_CHECKING:
    from .._compiler import Compiler


class UseDirective:
    name = "$use"
    category = "domain"
    properties: frozenset[str] = frozenset()

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node:
        refuse_plain(self.name, plain, pointer)
        return compiler.compile(obj[self.name], _pointer.child(pointer, self.name))
