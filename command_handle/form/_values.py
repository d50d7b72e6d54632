"""The value model beyond JSON: Undefined, Fragments, Binary Values and node headers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final, final

__all__ = [
    "UNDEFINED",
    "EncodedBytes",
    "EncodedStr",
    "Fragment",
    "Headers",
    "UndefinedType",
    "headers_of",
    "is_truthy",
    "type_name",
]


@final
class UndefinedType:
    """The type of :data:`UNDEFINED`, the Undefined Value (no value, distinct from null)."""

    _instance: UndefinedType | None = None
    __slots__ = ()

    def __new__(cls) -> UndefinedType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = UndefinedType()


@final
class Fragment:
    """Values to be merged into the containing array or object (section 2.3)."""

    __slots__ = ("nodes",)

    def __init__(self, nodes: list[object]) -> None:
        self.nodes = nodes

    def __repr__(self) -> str:
        return f"Fragment({self.nodes!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fragment) and self.nodes == other.nodes

    __hash__ = None  # type: ignore[assignment]

    def materialize(self) -> object:
        """The Fragment's value where no container can absorb it.

        One node gives that node (without Undefined markers); several give an
        array of them. Used at the template root and as operator input.
        """
        nodes = [_strip_markers(node) for node in self.nodes]
        if len(nodes) == 1:
            return nodes[0]
        return nodes


def _strip_markers(node: object) -> object:
    if isinstance(node, dict) and any(v is UNDEFINED for v in node.values()):
        return {k: v for k, v in node.items() if v is not UNDEFINED}
    return node


class Headers(Mapping[str, str]):
    """Node metadata: header names are case-insensitive, values are strings."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._items: dict[str, tuple[str, str]] = {}
        if items:
            for key, value in items.items():
                self._items[key.lower()] = (key, value)

    def __getitem__(self, key: str) -> str:
        return self._items[key.lower()][1]

    def __iter__(self) -> Iterator[str]:
        return (original for original, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._items

    def __repr__(self) -> str:
        return f"Headers({dict(self.items())!r})"

    def with_header(self, key: str, value: str) -> Headers:
        merged = Headers(self)
        merged._items[key.lower()] = (key, value)
        return merged


_NO_HEADERS: Final = Headers()


class EncodedStr(str):
    """A string produced by an Encoding; ``headers`` carries e.g. its Content-Type."""

    __slots__ = ("headers",)
    headers: Headers

    def __new__(cls, text: str, headers: Headers) -> EncodedStr:
        self = super().__new__(cls, text)
        self.headers = headers
        return self


class EncodedBytes(bytes):
    """A Binary Value produced by an Encoding, with its headers."""

    headers: Headers

    def __new__(cls, data: bytes, headers: Headers) -> EncodedBytes:
        self = super().__new__(cls, data)
        self.headers = headers
        return self


def headers_of(value: object) -> Headers:
    """The metadata headers of an output node (empty for plain JSON values)."""
    headers = getattr(value, "headers", None)
    return headers if isinstance(headers, Headers) else _NO_HEADERS


def is_truthy(value: object) -> bool:
    """Condition semantics of ``$if``/``$when``: false, 0, "", null and Undefined are false."""
    if value is None or value is False or value is UNDEFINED:
        return False
    if isinstance(value, str):
        return value != ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    return True


def type_name(value: object) -> str:
    """The Tool Form type of a value, for error messages that must not echo the value."""
    if value is UNDEFINED:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "binary"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, Fragment):
        return "fragment"
    return type(value).__name__
