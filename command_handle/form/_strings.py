"""String Templates (section 2.8): escapes and ``{{...}}`` expressions, parsed at compile time."""

from __future__ import annotations

from ._errors import TemplateSyntaxError

__all__ = ["parse_string_template"]


def _expression_end(text: str, start: int) -> int:
    """Index of the ``}}`` closing the expression that starts at ``start``, or -1.

    Quoted JSONPath string literals are skipped, so ``{{$['a}}b']}}`` works.
    """
    i = start
    n = len(text)
    while i < n - 1:
        c = text[i]
        if c in "'\"":
            i += 1
            while i < n and text[i] != c:
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if c == "}" and text[i + 1] == "}":
            return i
        i += 1
    return -1


def parse_string_template(text: str, pointer: str) -> list[str | tuple[str, int]]:
    """Split ``text`` into literal strings (escapes resolved) and ``(expression, column)``.

    Columns are 1-based positions in ``text``, for error messages.
    """
    parts: list[str | tuple[str, int]] = []
    literal: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if i + 1 >= n:
                raise TemplateSyntaxError(
                    f"string template ends with a lone backslash (column {i + 1}); "
                    "write \\\\ for a backslash",
                    pointer,
                )
            escaped = text[i + 1]
            if escaped not in "\\{}":
                raise TemplateSyntaxError(
                    f"invalid escape '\\{escaped}' at column {i + 1} of string template; "
                    "only \\\\, \\{ and \\} are escapes",
                    pointer,
                )
            literal.append(escaped)
            i += 2
            continue
        if c == "{" and i + 1 < n and text[i + 1] == "{":
            end = _expression_end(text, i + 2)
            if end < 0:
                raise TemplateSyntaxError(
                    f"'{{{{' at column {i + 1} has no matching '}}}}'", pointer
                )
            parts.append("".join(literal))
            literal = []
            parts.append((text[i + 2 : end], i + 3))
            i = end + 2
            continue
        if c == "}" and i + 1 < n and text[i + 1] == "}":
            raise TemplateSyntaxError(
                f"unescaped '}}}}' at column {i + 1} outside an expression; write '\\}}\\}}'",
                pointer,
            )
        literal.append(c)
        i += 1
    if literal:
        parts.append("".join(literal))
    return [p for p in parts if p != ""]
