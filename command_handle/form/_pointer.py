"""RFC 6901 JSON Pointers: building them for error locations and resolving them for $include."""

from __future__ import annotations

__all__ = ["child", "resolve"]


def child(pointer: str, token: str | int) -> str:
    """The pointer of ``token`` below ``pointer``."""
    text = str(token)
    if "~" in text or "/" in text:
        text = text.replace("~", "~0").replace("/", "~1")
    return f"{pointer}/{text}"


def resolve(document: object, pointer: str) -> object:
    """Resolve ``pointer`` in ``document``; raises ``LookupError`` with a reason."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        raise LookupError("a JSON Pointer must be empty or start with '/'")
    current = document
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, dict):
            if token not in current:
                raise LookupError(f"no member {token!r}")
            current = current[token]
        elif isinstance(current, list):
            if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
                raise LookupError(f"{token!r} is not an array index")
            index = int(token)
            if index >= len(current):
                raise LookupError(f"index {index} is past the end of the array")
            current = current[index]
        else:
            raise LookupError(f"cannot descend into a scalar with {token!r}")
    return current
