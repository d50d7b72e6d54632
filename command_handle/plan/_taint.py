"""Which values in a plan depend on data: a tool argument or a step's output.

A program chosen by data is refused (red-team finding 8): not only a
placeholder written as the program, but one reached through a variable
(``T=UTCP_ARG_x_UTCP_END; $T``), a substitution (``$(echo UTCP_ARG_...)``,
backticks), a step's output (``X=$CMD_0_OUTPUT; $X``) or ``HOME`` (``~``).
The translator uses :func:`data_variables` to refuse what it can see before
anything runs; the executor tracks the same property at run time, with the
values in hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ._model import Arg, Plan, Sequence, Subst, Tilde, Var, Word, iter_parts
from ._walk import command_words

__all__ = ["STEP_OUTPUT", "data_variables", "sequence_uses_data", "word_uses_data"]

STEP_OUTPUT = re.compile(r"CMD_\d+_OUTPUT")


def word_uses_data(word: Word, tainted: set[str] | frozenset[str]) -> bool:
    """Whether the word's value depends on data, given the variables that do."""
    for part in word:
        if isinstance(part, Arg):
            return True
        if isinstance(part, Var) and (part.name in tainted or STEP_OUTPUT.fullmatch(part.name)):
            return True
        if isinstance(part, Var) and part.word and word_uses_data(part.word, tainted):
            return True
        if isinstance(part, Tilde) and "HOME" in tainted:
            return True
        if isinstance(part, Subst) and sequence_uses_data(part.body, tainted):
            return True
    return False


def sequence_uses_data(sequence: Sequence, tainted: set[str] | frozenset[str]) -> bool:
    """Whether a substitution's output may carry data: any of its words use it."""
    return any(
        word_uses_data(word, tainted)
        for pipeline in sequence.pipelines
        for command in pipeline.commands
        for word in command_words(command)
    )


def _assignments(sequence: Sequence) -> Iterator[tuple[str, Word]]:
    for pipeline in sequence.pipelines:
        for command in pipeline.commands:
            for assignment in command.assignments:
                if assignment.value is not None:
                    yield assignment.name, assignment.value
            for word in command_words(command):
                for part in iter_parts(word):
                    if isinstance(part, Subst):
                        yield from _assignments(part.body)
                    elif isinstance(part, Var) and part.op in (":=", "="):
                        yield part.name, part.word  # ${X:=word} assigns X


def data_variables(plan: Plan) -> frozenset[str]:
    """The variables some assignment in the plan may give a value that depends on
    data (a fixed point: ``A=UTCP_ARG_x_UTCP_END; B=$A`` makes both). Order is
    ignored, which can only add names."""
    pairs = [pair for step in plan.steps for pair in _assignments(step.body)]
    tainted: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, value in pairs:
            if name not in tainted and word_uses_data(value, tainted):
                tainted.add(name)
                changed = True
    return frozenset(tainted)
