"""``$uri`` (section 4.3): RFC 6570 URI Template expansion, level 4.

Expansion is done by the ``uri-template`` library; its parser accepts some
invalid templates (``{x.}``, ``{var:01}``, ``{?empty=default}``), so the
template is first checked here against the RFC 6570 section 2 grammar. It
also refuses legal prefixes of four digits (``{var:9999}``), so those are
parsed as ``:999`` and set to their real length afterwards. Literal
apostrophes are accepted, as the uritemplate-test suite's Level 1 example
``'{var}'`` expects (docs/spec-notes.md).
Variables come from ``$.name`` unless a plain property of the same name gives a
Singular Expression to use instead (``"number": "$.selected.id"``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ... import _json
from .. import _pointer
from .._context import EvalContext
from .._errors import EvaluationError, TemplateSyntaxError
from .._expressions import SingularExpression
from .._nodes import Node, to_text
from .._provenance import DataStr
from .._values import UNDEFINED, type_name
from ._common import require_string

if TYPE_CHECKING:
    import uri_template

    from .._compiler import Compiler

_VARCHAR = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\*)?"
_EXPRESSION = re.compile(rf"\{{[+#./;?&]?{_VARSPEC}(?:,{_VARSPEC})*\}}")
# Literal characters: anything but CTL, SP, DQUOTE, "%", "<", ">", "\", "^", "`", "{", "|", "}".
# RFC 6570's literals rule also leaves out "'", yet RFC 3986 allows it in a URI
# and the uritemplate-test suite expands "'{var}'" (docs/spec-notes.md).
_LITERAL = re.compile(r"(?:[^\x00-\x20\x7f\"%<>\\^`{|}]|%[0-9A-Fa-f]{2})+")
_PREFIX = re.compile(r":([1-9][0-9]*)$")
_OPERATORS = "+#./;?&"


def parse_uri_template(text: str) -> uri_template.URITemplate:
    """The library's template for a checked ``text``, with every prefix length as
    written (the library's parser stops at three digits; RFC 6570 allows four).
    The library loads with the first ``$uri`` compiled."""
    import uri_template

    lengths: list[int] = []
    for expression in re.findall(r"\{([^}]*)\}", text):
        for spec in expression.lstrip(_OPERATORS).split(","):
            match = _PREFIX.search(spec)
            lengths.append(int(match.group(1)) if match else 0)
    if max(lengths, default=0) < 1000:
        return uri_template.URITemplate(text)
    template = uri_template.URITemplate(re.sub(r":[1-9][0-9]{3}(?=[,}])", ":999", text))
    variables = [v for e in template.expansions for v in getattr(e, "variables", ())]
    for variable, length in zip(variables, lengths, strict=True):
        variable.max_length = length
    return template


def check_uri_template(text: str) -> str | None:
    """Return None if ``text`` is an RFC 6570 template, else what is wrong and where."""
    i = 0
    while i < len(text):
        if text[i] == "{":
            match = _EXPRESSION.match(text, i)
            if not match:
                end = text.find("}", i)
                shown = text[i : end + 1] if end >= 0 else text[i:]
                return f"invalid expression {shown!r} at column {i + 1}"
            i = match.end()
            continue
        match = _LITERAL.match(text, i)
        if not match:
            return f"character {text[i]!r} at column {i + 1} is not allowed in a URI template"
        i = match.end()
    return None


def _uri_scalar(value: object, ctx: EvalContext, pointer: str) -> str:
    try:
        text = _json.scalar_text(value)
    except _json.NonJSONValueError as exc:
        raise EvaluationError(str(exc), pointer) from None
    return text if text is not None else to_text(value, ctx, pointer)


def _uri_value(value: object, ctx: EvalContext, pointer: str) -> object:
    if value is UNDEFINED or value is None:
        return None
    if isinstance(value, list):
        return [_uri_scalar(v, ctx, pointer) for v in value if v is not None]
    if isinstance(value, dict):
        return {k: _uri_scalar(v, ctx, pointer) for k, v in value.items() if v is not None}
    if isinstance(value, bytes):
        raise EvaluationError("a binary value cannot be expanded into a URI", pointer)
    return _uri_scalar(value, ctx, pointer)


class UriNode:
    __slots__ = ("data_led", "pointer", "template", "variables")

    def __init__(
        self,
        template: uri_template.URITemplate,
        variables: list[tuple[str, SingularExpression]],
        data_led: bool,
        pointer: str,
    ) -> None:
        self.template = template
        self.variables = variables
        self.data_led = data_led
        self.pointer = pointer

    def evaluate(self, ctx: EvalContext) -> object:
        values: dict[str, object] = {}
        for name, expression in self.variables:
            value = _uri_value(expression.evaluate(ctx.args), ctx, self.pointer)
            if value is not None:
                values[name] = value
        try:
            expanded = self.template.expand(**values)
        except UnicodeEncodeError as exc:  # percent-encoding needs UTF-8 bytes
            code = ord(exc.object[exc.start])
            raise EvaluationError(
                f"a value holds a lone surrogate (U+{code:04X}), which a URI cannot encode",
                self.pointer,
            ) from None
        if expanded is None:  # pragma: no cover - the grammar check rules this out
            raise EvaluationError("URI template expansion failed", self.pointer)
        ctx.count_output(len(expanded), self.pointer)
        if ctx.mark_data and self.data_led:
            return DataStr(expanded)
        return str(expanded)


class UriDirective:
    name = "$uri"
    category = "domain"
    properties: frozenset[str] = frozenset()

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node:
        text = require_string(self.name, obj, pointer)
        where = _pointer.child(pointer, self.name)
        problem = check_uri_template(text)
        if problem:
            raise TemplateSyntaxError(f"invalid URI template: {problem}", where)
        template = parse_uri_template(text)
        names = list(dict.fromkeys(v.name for v in template.variables))
        for key in plain:
            if key not in names:
                raise TemplateSyntaxError(
                    f"property {key!r} beside $uri is not a variable of the URI template", pointer
                )
        variables: list[tuple[str, SingularExpression]] = []
        for name in names:
            if name in obj:
                override = obj[name]
                child = _pointer.child(pointer, name)
                if not isinstance(override, str):
                    raise TemplateSyntaxError(
                        f"the $uri variable override {name!r} must be a string expression "
                        f"(got {type_name(override)})",
                        child,
                    )
                variables.append((name, compiler.singular(override, child)))
            else:
                variables.append((name, compiler.singular("$." + name, where)))
        return UriNode(template, variables, text.startswith("{"), pointer)
