"""Compile-time checks for templates whose output the args encoding reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..form import TemplateSyntaxError
from ..form.extend import json_pointer as _pointer
from ._encoder import DIRECTIVES, check_combination
from ._names import END_OF_OPTIONS, FLAG, POSITIONAL, normalize_flag_name

__all__ = ["ArgsScope"]

_TABLES = frozenset({"$flags", "$repeat"})


class ArgsScope:
    """Inside an ``args`` encoding's input, ``$args``, ``$flags`` and ``$repeat`` are
    ordinary properties. Names and combinations written in the template are
    checked here, so mistakes surface at compile time; the values of ``$flags``
    and ``$repeat`` are tables of flags, not args objects, and leave the scope."""

    names = frozenset(DIRECTIVES)

    def check(self, obj: Mapping[str, Any], pointer: str) -> frozenset[str]:
        keys = [k for k in obj if isinstance(k, str)]

        def fail(message: str) -> Exception:
            return TemplateSyntaxError(message, pointer)

        check_combination([k for k in keys if not k.startswith("$") or k in self.names], fail)
        for key in keys:
            if key.startswith("$") or key == END_OF_OPTIONS:
                continue  # directives are the compiler's business; "--" is end-of-options
            if not (FLAG.fullmatch(key) or POSITIONAL.fullmatch(key)):
                raise TemplateSyntaxError(
                    f"{key!r} is not an argument name: use a flag (-x, --name, --name=), a "
                    "subcommand or positional name ([A-Za-z0-9][-A-Za-z0-9_]*) or '--'",
                    _pointer.child(pointer, key),
                )
        for table in _TABLES & set(keys):
            value = obj[table]
            if isinstance(value, dict) and not any(k.startswith("$") for k in value):
                for name, item in value.items():
                    where = _pointer.child(_pointer.child(pointer, table), name)
                    flag = normalize_flag_name(name) if table == "$flags" else name
                    if not FLAG.fullmatch(flag):
                        raise TemplateSyntaxError(f"{name!r} is not a flag name for {table}", where)
                    if table == "$repeat" and not isinstance(item, list | dict):
                        raise TemplateSyntaxError("$repeat values must be arrays", where)
        return _TABLES & frozenset(keys)
