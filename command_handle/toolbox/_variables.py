"""The Toolbox's UTCP variables (a mapping and dotenv files, read at each call)
and the discovery of manuals when a Toolbox loads."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import HandleError
from ..policy import Policy

__all__ = ["Variables", "check_descriptions", "discover", "manual_discovery"]


class Variables:
    """The Toolbox's UTCP variables: a mapping and dotenv files, read when asked."""

    def __init__(
        self,
        mapping: Mapping[str, str] | None,
        files: Sequence[str | os.PathLike[str]],
        manuals: Iterable[str] = (),
    ) -> None:
        self.mapping = {str(k): str(v) for k, v in (mapping or {}).items()}
        self.files = tuple(files)
        self.manuals = tuple(manuals)  # whose namespaced variables others never see

    def resolve(self, manual: str | None) -> dict[str, str]:
        """All variables; for a manual's tool, ``<manual with _ doubled>_NAME`` also as ``NAME``."""
        if not self.files and not self.mapping:
            return {}
        from .. import utcp

        loaded = [utcp.dotenv_variables(path) for path in self.files]
        if manual is None:  # a bare template or a 0.x provider file: no namespace of its own
            return utcp.namespaced_variables("", self.mapping, loaded, self.manuals)
        return utcp.namespaced_variables(manual, self.mapping, loaded, self.manuals)


def discover(
    policy: Policy, variables: Variables, template: Any, manual: str, others: Iterable[str] = ()
) -> Any:
    """Run a manual call template's discovery under ``policy`` (its timeout) and
    return the manual it prints. It never reads the variables namespaced for
    ``others``, the other manuals loaded with it."""
    from .. import utcp
    from ..executor import Executor

    executor = Executor(policy)
    scoped = Variables(variables.mapping, variables.files, (*variables.manuals, *others))
    prepared = utcp.prepare(template, {}, variables=scoped.resolve(manual), policy=policy)
    result = executor.run_sync(prepared)
    if result.timed_out:
        raise HandleError(f"the discovery commands timed out after {prepared.timeout:g} s")
    found = utcp.manual_from_output(result.output)
    if found is None:
        raise HandleError("the discovery commands printed no UTCP manual")
    return found


def manual_discovery(
    policy: Policy,
    variables: Mapping[str, str] | None = None,
    variable_files: Sequence[str | os.PathLike[str]] = (),
) -> Any:
    """The ``discover`` that :func:`load_tools` takes, as ``Toolbox.load`` makes
    it: a manual's discovery commands run under ``policy`` with these variables."""
    from functools import partial

    return partial(discover, policy, Variables(variables, variable_files))


def check_descriptions(tools: Iterable[Any], variables: Variables, secret: Iterable[str]) -> None:
    """A discovered manual is another program's output: refuse a tool whose
    description or schema holds the value of a secret variable, which the
    model would be shown."""
    from .._secrets import MIN_REDACTED
    from ._load import ToolLoadError

    names = set(secret)
    if not names:
        return
    every = variables.resolve(None)
    values = {
        value
        for key, value in every.items()
        if len(value) >= MIN_REDACTED
        and (key in names or any(key.endswith("_" + name) for name in names))
    }
    for tool in tools:
        # Each text as the model reads it: in JSON text a value with a quote or
        # a backslash is escaped, and would not be found there.
        texts = list(_texts([tool.name, tool.description, tool.parameters]))
        if any(value in text for value in values for text in texts):
            raise ToolLoadError(
                tool.source,
                f"the description of the tool {tool.name!r} holds the value of a secret "
                "variable; it would be shown to the model",
            )


def _texts(value: Any) -> Iterable[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
