"""The extension API of the Tool Form layer: what a new directive, transform or
encoding needs, published so that other layers (the args encoding) and
applications never import the evaluator's private modules.

A directive is an object with ``name`` and ``category`` registered with
:meth:`Registry.add_directive`; an encoding is registered with
:meth:`Registry.add_encoding`. See docs/tool-form.md, "Extending".
"""

from . import _pointer as json_pointer
from ._compiler import Compiler
from ._context import EvalContext
from ._nodes import Node, Operator, materialize
from ._provenance import DataDict, DataList, DataStr, is_data, mark
from ._registry import (
    DomainDirective,
    EncodeFunction,
    ModifierDirective,
    OperatorDirective,
    Scope,
)
from ._values import type_name

__all__ = [
    "Compiler",
    "DataDict",
    "DataList",
    "DataStr",
    "DomainDirective",
    "EncodeFunction",
    "EvalContext",
    "ModifierDirective",
    "Node",
    "Operator",
    "OperatorDirective",
    "Scope",
    "is_data",
    "json_pointer",
    "mark",
    "materialize",
    "type_name",
]
