"""``escape``: turn any JSON value into a template that evaluates to exactly that value."""

from __future__ import annotations

__all__ = ["escape"]


def escape(value: object) -> object:
    """Quote ``value`` as template data.

    Strings get ``\\``, ``{`` and ``}`` escaped; property names starting with
    ``$`` get one more ``$`` (their values are data already, section 2.2.3).
    """
    if isinstance(value, str):
        if "\\" in value or "{" in value or "}" in value:
            return value.replace("\\", "\\\\").replace("{", "\\{").replace("}", "\\}")
        return value
    if isinstance(value, list):
        return [escape(item) for item in value]
    if isinstance(value, dict):
        return {
            ("$" + key if key.startswith("$") else key): (
                item if key.startswith("$") else escape(item)
            )
            for key, item in value.items()
        }
    return value
