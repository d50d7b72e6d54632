"""Query, Singular and Logical Expressions (Tool Form sections 2.5-2.7).

JSONPath itself is RFC 9535, provided by ``jsonpath_rfc9535``. This module adds
Tool Form's abbreviated forms (``user.name``, ``.user``, ``*``) and pipes
(``| transform``). Pipes are found with the query grammar: outside brackets
and string literals an RFC 9535 query contains no ``|``, so the first ``|``
there starts the pipe list, and ``$[?@.a || @.b]`` or ``$['a|b']`` are left
intact. Every query is parsed once, at compile time.

A query that is only member names (``$.user.name``, written ``user.name``),
the commonest by far, is read without the library: its steps are the names.
``jsonpath_rfc9535`` (and the ``regex`` package it imports) loads on the
first other query, so a folder of such templates never imports it
(docs/decisions.md, "Start-up").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from ._errors import EvaluationError, FormError, LimitError, TemplateSyntaxError
from ._values import UNDEFINED

if TYPE_CHECKING:
    import jsonpath_rfc9535 as jsonpath
    from jsonpath_rfc9535.filter_expressions import FilterExpression

__all__ = [
    "MISSING",
    "LogicalExpression",
    "QueryExpression",
    "SingularExpression",
    "Transform",
    "split_pipes",
    "walk",
]

Transform = Callable[[object], object]

MISSING = object()
# RFC 9535's member-name-shorthand, ASCII only: ``$`` then ``.name`` steps.
# Such a query is singular and its steps are its names; anything else is
# parsed by the library.
_NAMES_ONLY = re.compile(r"\$(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


@functools.cache
def _library() -> ModuleType:
    import jsonpath_rfc9535

    return jsonpath_rfc9535


@functools.cache
def _env() -> Any:
    return _library().JSONPathEnvironment()


def _is_name_first(c: str) -> bool:
    return (c.isascii() and (c.isalpha() or c == "_")) or (not c.isascii() and _non_surrogate(c))


def _is_name_char(c: str) -> bool:
    return _is_name_first(c) or (c.isdigit() and c.isascii())


def _non_surrogate(c: str) -> bool:
    return not 0xD800 <= ord(c) <= 0xDFFF


def _skip_string(text: str, start: int) -> int:
    """Index just past the quoted string literal that starts at ``start``."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i + 1
        i += 1
    return len(text)


def split_pipes(source: str) -> tuple[str, list[str]] | None:
    """Split ``query *(S "|" transform-name)`` into the query text and transform names.

    Returns None when the pipe list is malformed. Whitespace after ``|`` is
    accepted (the draft's examples write ``x | length``; see docs/spec-notes.md).
    """
    depth = 0
    i = 0
    n = len(source)
    while i < n:
        c = source[i]
        if c in "'\"" and depth > 0:
            i = _skip_string(source, i)
            continue
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "|" and depth <= 0:
            break
        i += 1
    query = source[:i].strip()
    names: list[str] = []
    rest = source[i:]
    while rest:
        rest = rest.lstrip()
        if not rest:
            break
        if rest[0] != "|":
            return None
        rest = rest[1:].lstrip()
        j = 0
        while j < len(rest) and (_is_name_char(rest[j]) if j else _is_name_first(rest[j])):
            j += 1
        if j == 0:
            return None
        names.append(rest[:j])
        rest = rest[j:]
    return query, names


def expand_abbreviation(query: str) -> str | None:
    """The RFC 9535 form of an abbreviated query, or None if it is not a query start."""
    if query == "":
        return "$"
    first = query[0]
    if first == "$":
        return query
    if first in ".[":
        return "$" + query
    if first == "*" or _is_name_first(first):
        return "$." + query
    return None


def _syntax_message(exc: Exception) -> str:
    text = str(exc)
    return text.replace(", line 1, column", " at column")


@functools.lru_cache(maxsize=4096)
def _parse(source: str) -> jsonpath.JSONPathQuery:
    """Parsing dominates compile time; queries are immutable, so equal text shares one."""
    query: jsonpath.JSONPathQuery = _env().compile(source)
    return query


def compile_query(source: str, pointer: str, max_length: int) -> jsonpath.JSONPathQuery:
    if len(source) > max_length:
        raise TemplateSyntaxError(
            f"JSONPath expression is longer than {max_length} characters", pointer
        )
    try:
        return _parse(source)
    except _library().JSONPathError as exc:
        raise TemplateSyntaxError(
            f"invalid JSONPath expression {source!r}: {_syntax_message(exc)}", pointer
        ) from None


def _compile_singular(
    source: str, pointer: str, max_length: int
) -> tuple[jsonpath.JSONPathQuery | None, tuple[str | int, ...] | None]:
    """The parsed query (None for names only) and its steps (None unless singular)."""
    if _NAMES_ONLY.match(source):
        if len(source) > max_length:
            compile_query(source, pointer, max_length)  # raises: too long
        return None, tuple(source.split(".")[1:])
    query = compile_query(source, pointer, max_length)
    return query, _singular_steps(query)


def _singular_steps(query: jsonpath.JSONPathQuery) -> tuple[str | int, ...] | None:
    from jsonpath_rfc9535.selectors import IndexSelector, NameSelector

    if not query.singular_query():
        return None
    steps: list[str | int] = []
    for segment in query.segments:
        selector = segment.selectors[0]
        if isinstance(selector, NameSelector):
            steps.append(selector.name)
        elif isinstance(selector, IndexSelector):
            steps.append(selector.index)
        else:  # pragma: no cover - singular_query() admits only these two
            return None
    return tuple(steps)


def _run_query(query: jsonpath.JSONPathQuery | None, args: object, pointer: str) -> list[object]:
    assert query is not None  # a query without steps was parsed
    library = _library()
    try:
        return [node.value for node in query.finditer(args)]  # type: ignore[arg-type]
    except library.JSONPathRecursionError:
        raise LimitError("JSONPath recursive descent went too deep", pointer) from None
    except library.JSONPathError as exc:
        raise EvaluationError(
            f"JSONPath evaluation failed: {_syntax_message(exc)}", pointer
        ) from None


def walk(steps: tuple[str | int, ...], value: object) -> object:
    """The value at ``steps`` (member names and indexes) in ``value``, or :data:`MISSING`."""
    for step in steps:
        if type(step) is str:
            if not isinstance(value, dict):
                return MISSING
            value = value.get(step, MISSING)
            if value is MISSING:
                return MISSING
        else:
            if not isinstance(value, list):
                return MISSING
            step = cast(int, step)
            index = step if step >= 0 else len(value) + step
            if not 0 <= index < len(value):
                return MISSING
            value = value[index]
    return value


def _wildcard_steps(query: jsonpath.JSONPathQuery) -> tuple[str | int, ...] | None:
    """The steps before the final ``[*]`` of a query made of singular steps and
    then one wildcard (``files[*]``, ``$.a.b.*``), or None for any other query."""
    from jsonpath_rfc9535.segments import JSONPathChildSegment
    from jsonpath_rfc9535.selectors import IndexSelector, NameSelector, WildcardSelector

    *leading, last = query.segments or [None]
    if type(last) is not JSONPathChildSegment or len(last.selectors) != 1:
        return None
    if type(last.selectors[0]) is not WildcardSelector:
        return None
    steps: list[str | int] = []
    for segment in leading:
        if type(segment) is not JSONPathChildSegment or len(segment.selectors) != 1:
            return None
        selector = segment.selectors[0]
        if type(selector) is NameSelector:
            steps.append(selector.name)
        elif type(selector) is IndexSelector:
            steps.append(selector.index)
        else:
            return None
    return tuple(steps)


class QueryExpression:
    """A Query Expression: evaluates to the Node List's values (section 2.5)."""

    __slots__ = ("pointer", "query", "source", "steps", "wildcard_steps")

    def __init__(self, source: str, pointer: str, max_length: int) -> None:
        self.source = source
        self.pointer = pointer
        expanded = expand_abbreviation(source.strip())
        if expanded is None:
            raise TemplateSyntaxError(f"{source!r} is not a JSONPath query", pointer)
        self.query, self.steps = _compile_singular(expanded, pointer, max_length)
        # Every member of one value (``files[*]``), the commonest other query,
        # is read without the library too: RFC 9535's wildcard selects an
        # array's elements, or an object's member values in order.
        self.wildcard_steps = (
            None if self.query is None or self.steps is not None else _wildcard_steps(self.query)
        )

    @property
    def singular(self) -> bool:
        return self.steps is not None

    def nodes(self, args: object) -> list[object]:
        if self.steps is not None:
            value = walk(self.steps, args)
            return [] if value is MISSING else [value]
        if self.wildcard_steps is not None:
            value = walk(self.wildcard_steps, args)
            if isinstance(value, list):
                return list(value)
            if isinstance(value, dict):
                return list(value.values())
            return []
        return _run_query(self.query, args, self.pointer)


class SingularExpression:
    """A Singular Expression with optional pipes (section 2.6)."""

    __slots__ = ("pointer", "query", "source", "steps", "transforms")

    def __init__(
        self,
        source: str,
        pointer: str,
        max_length: int,
        lookup_transform: Callable[[str], Transform | None],
    ) -> None:
        self.source = source
        self.pointer = pointer
        split = split_pipes(source)
        if split is None:
            raise TemplateSyntaxError(
                f"malformed pipe list in {source!r}: expected '| transform-name'", pointer
            )
        query_text, names = split
        expanded = expand_abbreviation(query_text)
        if expanded is None:
            raise TemplateSyntaxError(
                f"{query_text!r} is not a query: start it with '$', '.', '[', '*' or a name",
                pointer,
            )
        self.query, self.steps = _compile_singular(expanded, pointer, max_length)
        transforms: list[Transform] = []
        for name in names:
            transform = lookup_transform(name)
            if transform is None:
                raise TemplateSyntaxError(f"unknown transform {name!r} in pipe", pointer)
            transforms.append(transform)
        self.transforms: Sequence[Transform] = tuple(transforms)

    def evaluate(self, args: object) -> object:
        steps = self.steps
        if steps is not None:
            value = walk(steps, args)
            if value is MISSING:
                return UNDEFINED
        else:
            value = _run_query(self.query, args, self.pointer)
        if not self.transforms:
            return value
        try:
            for transform in self.transforms:
                value = transform(value)
                if value is UNDEFINED:
                    return UNDEFINED
        except FormError as exc:  # a transform's error: locate it at this expression
            raise exc.at(self.pointer) from None
        return value


def _rewrite_logical(source: str) -> str:
    """Prefix bare queries in a logical expression with ``$.`` (``user.role == 'x'``).

    A name, ``*``, ``.`` or ``[`` starts an implicit query where an operand may
    begin (at the start, after ``(``, ``!``, ``,``, ``&&``, ``||`` or a
    comparison) and outside brackets. Names followed by ``(`` are function
    calls; ``true``, ``false`` and ``null`` are literals.
    """
    out: list[str] = []
    i = 0
    n = len(source)
    depth = 0
    operand_expected = True
    while i < n:
        c = source[i]
        if c in " \t\n\r":
            out.append(c)
            i += 1
            continue
        if c in "'\"":
            j = _skip_string(source, i)
            out.append(source[i:j])
            i = j
            operand_expected = False
            continue
        if depth > 0:
            if c == "[":
                depth += 1
            elif c == "]":
                depth -= 1
            out.append(c)
            i += 1
            continue
        if c == "[":
            if operand_expected:
                out.append("$")
            depth += 1
            out.append(c)
            i += 1
            operand_expected = False
            continue
        if c == "." or c == "*":
            if operand_expected:
                out.append("$" if c == "." else "$.")
            out.append(c)
            i += 1
            operand_expected = False
            continue
        if _is_name_first(c):
            j = i + 1
            while j < n and _is_name_char(source[j]):
                j += 1
            word = source[i:j]
            k = j
            while k < n and source[k] in " \t\n\r":
                k += 1
            is_call = k < n and source[k] == "("
            if operand_expected and not is_call and word not in ("true", "false", "null"):
                out.append("$.")
            out.append(word)
            i = j
            operand_expected = is_call
            continue
        two = source[i : i + 2]
        if two in ("&&", "||", "==", "!=", "<=", ">="):
            out.append(two)
            i += 2
            operand_expected = True
            continue
        if c in "(!,<>":
            operand_expected = True
        elif c in "$@)" or c.isdigit() or c == "-":
            operand_expected = False
        out.append(c)
        i += 1
    return "".join(out)


class LogicalExpression:
    """A Logical Expression (section 2.7): an RFC 9535 filter with ``@`` and ``$`` both
    bound to the Template Arguments."""

    __slots__ = ("context", "exists", "expression", "library", "pointer", "source")

    def __init__(self, source: str, pointer: str, max_length: int) -> None:
        from jsonpath_rfc9535.filter_expressions import FilterContext
        from jsonpath_rfc9535.selectors import FilterSelector

        self.source = source
        self.pointer = pointer
        self.library = _library()
        self.context = FilterContext
        rewritten = _rewrite_logical(source.strip())
        query = compile_query(f"$[?{rewritten}]", pointer, max_length + 4)
        segment = query.segments[0] if len(query.segments) == 1 else None
        selector = segment.selectors[0] if segment and len(segment.selectors) == 1 else None
        if not isinstance(selector, FilterSelector):
            raise TemplateSyntaxError(f"{source!r} is not a single logical expression", pointer)
        self.expression: FilterExpression = selector.expression
        # A lone query of member names (``verbose``, ``user.name``) is RFC 9535's
        # existence test: true when the member is there, whatever its value.
        self.exists = (
            tuple(rewritten.split(".")[1:]) if _NAMES_ONLY.match(rewritten) is not None else None
        )

    def evaluate(self, args: object) -> bool:
        if self.exists is not None:
            return walk(self.exists, args) is not MISSING
        context = self.context(env=_env(), current=args, root=args)  # type: ignore[arg-type]
        try:
            return bool(self.expression.evaluate(context))
        except self.library.JSONPathRecursionError:
            raise LimitError("JSONPath recursive descent went too deep", self.pointer) from None
        except self.library.JSONPathError as exc:
            raise EvaluationError(
                f"logical expression failed: {_syntax_message(exc)}", self.pointer
            ) from None
