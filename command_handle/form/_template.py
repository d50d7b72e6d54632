"""``compile_template``, ``Template`` and ``evaluate``: the evaluator's entry points."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .. import _json
from ._compiler import Compiler
from ._context import EvalContext
from ._defaults import DEFAULT_REGISTRY
from ._errors import LimitError, TemplateSyntaxError
from ._include import Includer, IncludeResolver
from ._limits import Limits
from ._nodes import Constant, Node
from ._registry import Registry
from ._values import Fragment

__all__ = ["Template", "compile_template", "evaluate", "load_template"]

_VARIES = object()  # Template._constant of a template whose value depends on its input


class Template:
    """A compiled Tool Form template. Compile once, evaluate many times; thread-safe."""

    __slots__ = ("_constant", "_root", "limits", "source")

    def __init__(self, root: Node, source: object, limits: Limits) -> None:
        self._root = root
        self.source = source
        self.limits = limits
        # A template without expressions or directives whose value is a scalar
        # (a command, a directory) is that value: no context to build per call.
        self._constant: object = (
            root.value if type(root) is Constant and not root.is_container else _VARIES
        )

    @property
    def is_constant(self) -> bool:
        """Whether the template is a scalar constant, the same value for any input."""
        return self._constant is not _VARIES

    def evaluate(
        self,
        args: object = None,
        *,
        provenance: bool = False,
        option_values: frozenset[str] = frozenset(),
        application: Mapping[str, object] | None = None,
    ) -> object:
        """Evaluate against the Template Arguments ``args`` (any JSON value).

        Returns a JSON value, a ``bytes`` Binary Value, or :data:`UNDEFINED`.
        Encoded strings carry headers readable with :func:`headers_of`.
        Raises :class:`EvaluationError` (or its subclass :class:`LimitError`).

        With ``provenance``, strings whose first character came from ``args``
        are returned marked (``form.extend.is_data``), so that a caller can
        guard them. ``option_values`` are strings from ``args`` that the args
        encoding may let begin with ``-``, ``+`` or ``@``. ``application`` holds
        values that extension directives read (``ctx.application``) and that
        ``args`` cannot reach, such as a handle's ``$credential`` and ``$context``.
        """
        if self._constant is not _VARIES:
            return self._constant
        ctx = EvalContext(args, self.limits, application, provenance, option_values)
        try:
            value = self._root.evaluate(ctx)
            return value.materialize() if type(value) is Fragment else value
        except RecursionError:
            raise LimitError("evaluation nested too deeply") from None

    def __repr__(self) -> str:
        return f"Template({self.source!r})"


def compile_template(
    template: object,
    *,
    limits: Limits | None = None,
    registry: Registry | None = None,
    include_base: str | os.PathLike[str] | None = None,
    include_resolver: IncludeResolver | None = None,
    format_assertion: bool = False,
) -> Template:
    """Validate ``template`` and compile it.

    Every static error (malformed directives, two Domain Directives in one
    object, bad string-template escapes, invalid JSONPath or URI templates,
    unknown transforms and encodings named literally, literal ``$include``s
    that cannot be loaded) raises a :class:`FormError` subclass here.

    - ``limits``: resource limits (:class:`Limits`).
    - ``registry``: directives, transforms and encodings (default: the draft's
      plus those registered by this package, such as ``args``).
    - ``include_base``: the directory ``$include`` may read files from
      (default: none, so only ``#`` fragments of this template work).
    - ``include_resolver``: a function from a reference to a JSON value, used
      instead of files.
    - ``format_assertion``: make ``format`` assert in ``$match``/``$matches``
      schemas (default: annotation only, as the draft says).
    """
    limits = limits or Limits()
    includer = Includer(template, include_base, include_resolver, limits.max_include_bytes)
    compiler = Compiler(registry or DEFAULT_REGISTRY, limits, includer, format_assertion)
    try:
        root = compiler.compile(template, "")
    except RecursionError:
        raise TemplateSyntaxError("template nested too deeply") from None
    return Template(root, template, limits)


def evaluate(template: object, args: object = None, **options: object) -> object:
    """Compile ``template`` with ``options`` and evaluate it once against ``args``."""
    return compile_template(template, **options).evaluate(args)  # type: ignore[arg-type]


def load_template(path: str | os.PathLike[str], **options: object) -> Template:
    """Compile the JSON template in ``path``; ``$include`` may read files beside it."""
    file = Path(path)
    try:
        document = _json.loads(file.read_bytes())
    except _json.JSONDecodeError as exc:
        raise TemplateSyntaxError(
            f"{file.name} is not valid JSON: {exc.message} (line {exc.line}, column {exc.column})"
        ) from None
    options.setdefault("include_base", file.resolve().parent)
    return compile_template(document, **options)  # type: ignore[arg-type]
