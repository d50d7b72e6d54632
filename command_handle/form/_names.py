"""The argument names a template reads at its top level, found in its source.

Used to find a template that reads a name its arguments cannot hold (a typo,
``{{nmae}}`` for ``name``), which evaluates to nothing rather than failing.
Only names that are certain are reported: the first member of a query
(``user.name``, ``$.user``, ``$['user']``), a ``{{...}}`` expression, a
``$each``/``$spread`` query, and the variables of a ``$uri`` template that no
plain property of its object defines. Filters, logical conditions and names
bound by ``$as`` are never reported; a template that reads ``$as`` names is
checked for the others.
"""

from __future__ import annotations

import re

from ._errors import FormError
from ._expressions import expand_abbreviation, split_pipes
from ._pointer import child
from ._strings import parse_string_template

__all__ = ["read_names"]

_MEMBER = re.compile(
    r"^\$(?:\.([A-Za-z_][A-Za-z0-9_\-]*)|\[\s*'([^'\\]*)'\s*\]|\[\s*\"([^\"\\]*)\"\s*\])"
)
_URI_EXPRESSION = re.compile(r"\{([+#./;?&=,!@|]?)([^{}]*)\}")
# Keys whose values are queries or templates of the domain, not literal data.
_QUERY_KEYS = ("$each", "$spread")


def _root_name(expression: str) -> str | None:
    """The first member name an expression reads, or None when it reads none
    for certain (``$``, ``@``, a filter, a function)."""
    split = split_pipes(expression)
    query = (split[0] if split is not None else expression).strip()
    expanded = expand_abbreviation(query)
    if expanded is None:
        return None
    found = _MEMBER.match(expanded)
    if found is None:
        return None
    return next(group for group in found.groups() if group is not None)


def _uri_variables(template: str) -> list[str]:
    names: list[str] = []
    for _operator, variables in _URI_EXPRESSION.findall(template):
        for variable in variables.split(","):
            name = variable.strip().rstrip("*").split(":", 1)[0]
            if name:
                names.append(name)
    return names


def read_names(source: object, pointer: str = "") -> tuple[list[tuple[str, str]], frozenset[str]]:
    """``([(pointer, name), ...], bound)``: each top-level name ``source`` reads
    from its arguments, with the JSON Pointer of the node that reads it, and the
    names ``$as`` binds anywhere in it (which a reader may also read)."""
    found: list[tuple[str, str]] = []
    bound: set[str] = set()
    pending: list[tuple[object, str]] = [(source, pointer)]
    while pending:
        node, where = pending.pop()
        if isinstance(node, str):
            if "{{" not in node:
                continue  # literal text (the common case): nothing to parse
            try:
                parts = parse_string_template(node, where)
            except FormError:
                continue  # compiling reports it
            for part in parts:
                if isinstance(part, tuple):
                    name = _root_name(part[0])
                    if name is not None:
                        found.append((where, name))
        elif isinstance(node, list):
            pending.extend((item, child(where, str(index))) for index, item in enumerate(node))
        elif isinstance(node, dict):
            if "$include" in node or ("$comment" in node and len(node) == 1):
                continue
            if isinstance(node.get("$as"), str):
                bound.add(node["$as"])
            for key, value in node.items():
                here = child(where, key)
                if (key == "$" and isinstance(value, str)) or (
                    key in _QUERY_KEYS and isinstance(value, str)
                ):
                    name = _root_name(value)
                    if name is not None:
                        found.append((here, name))
                elif key == "$uri" and isinstance(value, str):
                    given = {k for k in node if not k.startswith("$")}
                    found.extend((here, n) for n in _uri_variables(value) if n not in given)
                elif (
                    key in ("$comment", "$meta", "$include", "$as", "$key")
                    or (key == "$if" and isinstance(value, str))
                    or (key == "$when" and isinstance(value, str))
                ):
                    continue
                elif key in ("$matches", "$case"):
                    continue  # JSON Schemas, not templates over the arguments
                else:
                    pending.append((value, here))
    return sorted(found), frozenset(bound)
