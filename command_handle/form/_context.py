"""Per-evaluation state: the Template Arguments in scope and the resource counters."""

from __future__ import annotations

from collections.abc import Mapping

from ._errors import LimitError
from ._limits import Limits

__all__ = ["EvalContext"]


class EvalContext:
    """State of one ``Template.evaluate`` call. Not shared between calls."""

    __slots__ = (
        "application",
        "args",
        "evaluations",
        "expansion",
        "limits",
        "mark_data",
        "option_values",
        "output",
    )

    def __init__(
        self,
        args: object,
        limits: Limits,
        application: Mapping[str, object] | None = None,
        mark_data: bool = False,
        option_values: frozenset[str] = frozenset(),
    ) -> None:
        self.args = args
        # Values the application supplies for extension directives (a handle's
        # $credential and $context); never the model's, never in args.
        self.application: Mapping[str, object] = application or {}
        self.limits = limits
        self.evaluations = 0
        self.expansion = 0
        self.output = 0
        # Set while evaluating input of an encoding that needs to know which
        # values came from the arguments (the args encoding's flag guard).
        self.mark_data = mark_data
        # Strings from the arguments that the application lets look like options
        # (a handle's options_allowed parameters); the args encoding admits them.
        self.option_values = option_values

    def count_evaluation(self, pointer: str) -> None:
        self.evaluations += 1
        if self.evaluations > self.limits.max_evaluations:
            raise self.too_many_evaluations(pointer)

    def too_many_evaluations(self, pointer: str) -> LimitError:
        return LimitError(f"more than {self.limits.max_evaluations} directive evaluations", pointer)

    def count_expansion(self, nodes: int, pointer: str) -> None:
        self.expansion += nodes
        if self.expansion > self.limits.max_expansion:
            raise LimitError(
                f"expansion produced more than {self.limits.max_expansion} nodes", pointer
            )

    def count_output(self, chars: int, pointer: str) -> None:
        self.output += chars
        if self.output > self.limits.max_output:
            raise LimitError(f"output exceeds {self.limits.max_output} characters", pointer)
