"""RFC 6901 JSON Pointers: building them for error locations and resolving them for $include."""

from __future__ import annotations

from ..errors import CommandHandleError

__all__ = ["JsonPointerError", "child", "resolve"]


class JsonPointerError(CommandHandleError, LookupError):
    """A JSON Pointer that is malformed or names nothing in the document."""


def child(pointer: str, token: str | int) -> str:
    """The pointer of ``token`` below ``pointer``."""
    text = str(token)
    if "~" in text or "/" in text:
        text = text.replace("~", "~0").replace("/", "~1")
    return f"{pointer}/{text}"


def resolve(document: object, pointer: str) -> object:
    """Resolve ``pointer`` in ``document``; a pointer that names nothing raises
    :class:`JsonPointerError` (a ``LookupError``) with the reason."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        raise JsonPointerError("a JSON Pointer must be empty or start with '/'")
    current = document
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, dict):
            if token not in current:
                raise JsonPointerError(f"no member {token!r}")
            current = current[token]
        elif isinstance(current, list):
            if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
                raise JsonPointerError(f"{token!r} is not an array index")
            index = int(token)
            if index >= len(current):
                raise JsonPointerError(f"index {index} is past the end of the array")
            current = current[index]
        else:
            raise JsonPointerError(f"cannot descend into a scalar with {token!r}")
    return current
