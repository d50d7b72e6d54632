"""``{"$context": NAME}``: a value the application gives the call (the workspace, the
user, the tenant), which the model can neither see nor set.

A name the application did not give evaluates to the Undefined Value, as a
missing argument does with ``$``, so a template can supply a default.
"""

from __future__ import annotations

from ...form import UNDEFINED
from ...form.extend import EvalContext
from ._application import FieldDirective, FieldNode, application_value

NAME = "$context"


class ContextNode(FieldNode):
    __slots__ = ()

    def evaluate(self, ctx: EvalContext) -> object:
        context = application_value(ctx, "context")
        if context is None:
            return UNDEFINED
        return context.get(self.field, UNDEFINED)


class ContextDirective(FieldDirective):
    name = NAME
    node = ContextNode
