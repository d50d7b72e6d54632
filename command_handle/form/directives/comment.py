"""``$comment`` (section 3.2): any value; excluded from the output."""

from __future__ import annotations


class CommentDirective:
    name = "$comment"
    category = "modifier"

    def check(self, value: object, pointer: str) -> None:
        """Comments accept any JSON value."""
