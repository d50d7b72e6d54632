"""Tables of directives, transforms and encodings.

Like jsonschema's keyword table, each directive, transform and encoding is one
object registered here by name; adding one is a new module and one
``add_*`` call, with no change to the compiler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ._context import EvalContext
from ._errors import RegistrationError
from ._nodes import Node, Operator

if TYPE_CHECKING:
    from ._compiler import Compiler

__all__ = [
    "DomainDirective",
    "Scope",
    "EncodeFunction",
    "Encoding",
    "ModifierDirective",
    "OperatorDirective",
    "Registry",
    "Transform",
]

Transform = Callable[[object], object]
EncodeFunction = Callable[[object, EvalContext], object]


class ModifierDirective(Protocol):
    """Annotates the template; never changes output (section 3)."""

    name: str
    category: str  # "modifier"

    def check(self, value: object, pointer: str) -> None: ...


class DomainDirective(Protocol):
    """Produces the object's value (section 4).

    ``properties`` are the ``$``-named Domain Properties it understands. ``compile``
    receives the whole object and the names of its plain (non-``$``) properties,
    and refuses them if the directive has no use for them.
    """

    name: str
    category: str  # "domain"
    properties: frozenset[str]

    def compile(
        self, compiler: Compiler, obj: Mapping[str, Any], pointer: str, plain: list[str]
    ) -> Node: ...


class OperatorDirective(Protocol):
    """Post-processes the pipeline value (section 5)."""

    name: str
    category: str  # "operator"

    def claimed_properties(self, compiler: Compiler, obj: Mapping[str, Any]) -> frozenset[str]:
        """``$``-named properties of ``obj`` that this operator reads (encoding options)."""
        ...

    def needs_provenance(self, compiler: Compiler, obj: Mapping[str, Any]) -> bool: ...

    def input_scope(self, compiler: Compiler, obj: Mapping[str, Any]) -> Scope | bool | None:
        """The Scope for the template of this object's input; False leaves it unchanged."""
        ...

    def compile(self, compiler: Compiler, obj: Mapping[str, Any], pointer: str) -> Operator: ...


class Scope(Protocol):
    """Rules an encoding imposes on the template of its input.

    Inside the input of an ``$encode`` whose first encoding has a scope, the
    ``$``-names in ``names`` are ordinary properties (the args encoding's
    ``$args``/``$flags``/``$repeat``), and ``check`` sees every object there
    before it is compiled, to refuse what the encoding can never accept.
    """

    names: frozenset[str]

    def check(self, obj: Mapping[str, Any], pointer: str) -> frozenset[str]:
        """Refuse what the encoding can never accept; return the keys whose values
        leave the scope (compiled as ordinary Tool Form, e.g. a table of flags)."""
        ...


class Encoding(Protocol):
    """A named serialisation (section 7). ``properties`` are its ``$``-named options;
    ``scope`` (or None) governs the template of its input."""

    name: str
    media_type: str
    properties: frozenset[str]
    needs_provenance: bool

    @property
    def scope(self) -> Scope | None: ...

    def compile(self, compiler: Compiler, obj: Mapping[str, Any], pointer: str) -> EncodeFunction:
        """Read options from ``obj``; return ``encode(value, ctx)``."""
        ...


class Registry:
    """The directives, transforms and encodings a compilation may use.

    ``generation`` counts the ``add_*`` calls, so that a table derived from
    this one (a Command Handle's) can tell that it is out of date.
    """

    def __init__(self) -> None:
        self.modifiers: dict[str, ModifierDirective] = {}
        self.domains: dict[str, DomainDirective] = {}
        self.operators: dict[str, OperatorDirective] = {}
        self.transforms: dict[str, Transform] = {}
        self.encodings: dict[str, Encoding] = {}
        self.generation = 0

    def add_directive(
        self, directive: ModifierDirective | DomainDirective | OperatorDirective
    ) -> None:
        name = directive.name
        if not name.startswith("$") or name.startswith("$$"):
            raise RegistrationError(f"directive names start with a single '$': {name!r}")
        tables: dict[str, dict[str, Any]] = {
            "modifier": self.modifiers,
            "domain": self.domains,
            "operator": self.operators,
        }
        table = tables[directive.category]
        for other in (self.modifiers, self.domains, self.operators):
            other.pop(name, None)
        table[name] = directive
        self.generation += 1

    def add_transform(self, name: str, transform: Transform) -> None:
        if not name.replace("_", "a").isalnum() or not name.isascii():
            raise RegistrationError(f"transform names are ASCII letters, digits and '_': {name!r}")
        self.transforms[name] = transform
        self.generation += 1

    def add_encoding(self, encoding: Encoding) -> None:
        if not encoding.name.isascii() or not encoding.name.isalnum():
            raise RegistrationError(
                f"encoding names are ASCII letters and digits: {encoding.name!r}"
            )
        self.encodings[encoding.name] = encoding
        self.generation += 1

    def copy(self) -> Registry:
        clone = Registry()
        clone.modifiers = dict(self.modifiers)
        clone.domains = dict(self.domains)
        clone.operators = dict(self.operators)
        clone.transforms = dict(self.transforms)
        clone.encodings = dict(self.encodings)
        return clone

    def encoding_properties(self) -> frozenset[str]:
        names: set[str] = set()
        for encoding in self.encodings.values():
            names |= encoding.properties
        return frozenset(names)
