"""Walking a plan: every command, including those inside command substitutions."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from ._model import Arg, Command, Plan, Sequence, Subst, Word, iter_parts

__all__ = ["command_words", "iter_commands", "substitute_variables", "word_arguments"]

_REFERENCE = re.compile(r"\$\{([A-Za-z0-9_]+)\}|\$([A-Za-z0-9_]+)")


def command_words(command: Command) -> Iterator[Word]:
    """Every word of a command: its words, assignment values, redirection targets."""
    yield from command.words
    for assignment in command.assignments:
        if assignment.value is not None:
            yield assignment.value
    for redirect in command.redirects:
        yield redirect.target


def _sequence_commands(sequence: Sequence) -> Iterator[Command]:
    for pipeline in sequence.pipelines:
        for command in pipeline.commands:
            yield command
            for word in command_words(command):
                for part in iter_parts(word):
                    if isinstance(part, Subst):
                        yield from _sequence_commands(part.body)


def iter_commands(plan: Plan) -> Iterator[tuple[int, Command]]:
    """Every command of every step, with the step's index."""
    for step in plan.steps:
        for command in _sequence_commands(step.body):
            yield step.index, command


def word_arguments(command: Command) -> Iterator[str]:
    """Names of the tool arguments the command's own words use."""
    for word in command_words(command):
        for part in iter_parts(word):
            if isinstance(part, Arg):
                yield part.name


def substitute_variables(
    value: str, variables: Mapping[str, str], namespace: str | None
) -> tuple[str, list[str]]:
    """UTCP variable substitution in an ``env_vars`` value: ``${NAME}`` and ``$NAME``.

    A name is looked up namespaced first (the template name with ``_`` doubled,
    then ``_NAME``, as the UTCP client does), then as written. Returns the value
    and the names that were not found.
    """
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        keys = [name]
        if namespace:
            keys.insert(0, namespace.replace("_", "__") + "_" + name)
        for key in keys:
            if key in variables:
                return variables[key]
        missing.append(name)
        return ""

    return _REFERENCE.sub(replace, value), missing
