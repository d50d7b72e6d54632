"""``{"$credential": FIELD}``: a field of the Credential Object resolved for this call.

Tool Handle sections 3.2 and 4.3: the application's resolver maps the
handle's Security Object to a Credential Object per call. The value is the
application's, not the model's, so it is not marked as argument data.
"""

from __future__ import annotations

from ...form import EvaluationError
from ...form.extend import EvalContext
from ._application import FieldDirective, FieldNode, application_value

NAME = "$credential"
# Argv, the working directory and the command line are readable by every local
# user through /proc/PID/cmdline; the environment and stdin are not.
WHERE = "credentials may be read only in environment and io.stdin"


class CredentialNode(FieldNode):
    __slots__ = ()

    def evaluate(self, ctx: EvalContext) -> object:
        credential = application_value(ctx, "credential")
        if credential is None:
            raise EvaluationError("no credential was resolved for this call", self.pointer)
        if self.field not in credential:
            # The field's name is the handle author's; the values stay unsaid.
            raise EvaluationError(
                f"the Credential Object has no field {self.field!r}", self.pointer
            )
        return credential[self.field]


class CredentialDirective(FieldDirective):
    name = NAME
    node = CredentialNode
