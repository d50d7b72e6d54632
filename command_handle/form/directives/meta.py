"""``$meta`` (section 3.1): an object of metadata; excluded from the output."""

from __future__ import annotations

from .._errors import TemplateSyntaxError


class MetaDirective:
    name = "$meta"
    category = "modifier"

    def check(self, value: object, pointer: str) -> None:
        if not isinstance(value, dict):
            raise TemplateSyntaxError("the value of $meta must be an object", pointer)
