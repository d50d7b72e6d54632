"""The args encoding: Value Transform, Object Transform and the flag-injection guard.

Encoding runs in two passes. The transforms turn the value into tokens that
remember their role and whether their text came from the Template Arguments;
a final pass over the whole argv checks the character policy (on the parts
of joined tokens, before escaping) and the flag-injection guard (CWE-88): a
positional token from the arguments that begins with ``-`` is refused unless
a trusted ``--`` came before it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import NamedTuple

from .. import _json
from ..form import _pointer
from ..form._provenance import is_data
from ..form._values import UNDEFINED, type_name
from ._charset import first_forbidden
from ._errors import ArgsError
from ._names import END_OF_OPTIONS, FLAG, POSITIONAL, is_combinable

__all__ = ["DIRECTIVES", "Encoder", "Role", "Token"]


class Role(Enum):
    NAME = "name"  # a flag or subcommand name written in the template
    FLAG_VALUE = "flag value"  # the single value right after a template flag
    ARG = "argument"  # a positional token
    END = "end of options"  # a trusted "--"


class Token(NamedTuple):
    text: str
    data: bool
    role: Role
    parts: tuple[str, ...] | None = None  # the values a joined "name=" token was made of
    path: str = ""


def join_values(values: list[str]) -> str:
    """The Argument Joining Algorithm: escape ``\\`` then ``,``, join with ``,``."""
    return ",".join(v.replace("\\", "\\\\").replace(",", "\\,") for v in values)


DirectiveHandler = Callable[["Encoder", object, str], list[Token]]
DIRECTIVES: dict[str, DirectiveHandler] = {}


class Encoder:
    """Encodes one value; not reused."""

    __slots__ = ("charset", "depth", "pointer")

    def __init__(self, charset: str, pointer: str = "", depth: int = 256) -> None:
        self.charset = charset
        self.pointer = pointer
        self.depth = depth

    def error(self, message: str, path: str) -> ArgsError:
        return ArgsError(message, self.pointer, path=path)

    # -- Value Transform (section 4.2) ------------------------------------

    def value(self, value: object, path: str, depth: int = 0) -> list[Token]:
        if value is None or value is False or value is UNDEFINED:
            return []
        if value is True:
            return [Token("true", False, Role.ARG, path=path)]
        if isinstance(value, str):
            return [Token(str(value), is_data(value), Role.ARG, path=path)]
        if isinstance(value, int | float):
            try:
                text = _json.format_number(value)
            except _json.NonJSONValueError:
                raise self.error("non-finite numbers cannot be arguments", path) from None
            return [Token(text, is_data(value), Role.ARG, path=path)]
        if depth > self.depth:
            raise self.error("value nested too deeply", path)
        if isinstance(value, list):
            tokens: list[Token] = []
            for index, item in enumerate(value):
                tokens.extend(self.value(item, _pointer.child(path, index), depth + 1))
            return tokens
        if isinstance(value, dict):
            return self.object(value, path, depth + 1)
        raise self.error(f"a {type_name(value)} value cannot be an argument", path)

    # -- flags -------------------------------------------------------------

    def flag(self, name: str, value: object, path: str, depth: int) -> list[Token]:
        """One flag property: a switch, a joined ``name=value``, or the name then values."""
        if value is True:  # only the JSON boolean makes a switch; "true" is a value
            if name.endswith("="):
                return [Token(name + "true", False, Role.NAME, ("true",), path)]
            return [Token(name, False, Role.NAME, path=path)]
        tokens = self.value(value, path, depth)
        if not tokens:
            return []  # null, false, [] and {} omit the flag entirely
        if name.endswith("="):
            parts = tuple(t.text for t in tokens)
            return [Token(name + join_values(list(parts)), False, Role.NAME, parts, path)]
        first = tokens[0]
        if first.role is Role.ARG:
            tokens[0] = first._replace(role=Role.FLAG_VALUE)
        return [Token(name, False, Role.NAME, path=path), *tokens]

    # -- Object Transform (section 4.1) ------------------------------------

    def object(self, obj: Mapping[str, object], path: str, depth: int) -> list[Token]:
        keys = list(obj)
        directive_keys = [k for k in keys if k.startswith("$") and not is_data(k)]
        if directive_keys:
            self._check_combination(keys, directive_keys, path)
        tokens: list[Token] = []
        run_prefix = ""
        run: list[str] = []
        run_path = path

        def flush() -> None:
            nonlocal run, run_prefix
            if run:
                tokens.append(Token(run_prefix + "".join(run), False, Role.NAME, path=run_path))
            run = []
            run_prefix = ""

        for key in keys:
            value = obj[key]
            where = _pointer.child(path, key)
            if is_data(key):
                self._check_data_name(key, where)
            if key in DIRECTIVES and not is_data(key):
                flush()
                tokens.extend(DIRECTIVES[key](self, value, where))
            elif key == END_OF_OPTIONS:
                flush()
                tokens.append(Token(END_OF_OPTIONS, False, Role.END, path=where))
                tokens.extend(self.value(value, where, depth))
            elif FLAG.fullmatch(key):
                if value is True and is_combinable(key):
                    if run and run_prefix != key[0]:
                        flush()
                    if not run:
                        run_prefix, run_path = key[0], where
                    run.append(key[1])
                    continue
                flush()
                tokens.extend(self.flag(key, value, where, depth))
            elif POSITIONAL.fullmatch(key):
                flush()
                tokens.append(Token(str(key), is_data(key), Role.NAME, path=where))
                tokens.extend(self.value(value, where, depth))
            else:
                raise self.error(
                    f"{key!r} is not an argument name: use a flag (-x, --name, --name=), "
                    "a subcommand or positional name ([A-Za-z0-9][-A-Za-z0-9_]*), '--', "
                    "or $args, $flags, $repeat",
                    where,
                )
        flush()
        return tokens

    def _check_data_name(self, key: str, path: str) -> None:
        if key[:1] in ("-", "+", "$"):
            raise self.error(
                "a name taken from the arguments cannot be a flag or a directive: "
                "flags must be written in the template (see docs/args.md)",
                path,
            )

    def _check_combination(self, keys: list[str], directive_keys: list[str], path: str) -> None:
        unknown = [k for k in directive_keys if k not in DIRECTIVES]
        if unknown:
            raise self.error(
                f"unknown args directive {unknown[0]!r} (known: $args, $flags, $repeat)", path
            )
        check_combination(keys, lambda message: self.error(message, path))

    # -- the whole argv ----------------------------------------------------

    def finish(self, tokens: list[Token]) -> list[str]:
        """Check the character policy and the flag-injection guard; return the argv."""
        after_end = False
        argv: list[str] = []
        for index, token in enumerate(tokens):
            for part in token.parts if token.parts is not None else (token.text,):
                bad = first_forbidden(part, self.charset)
                if bad >= 0:
                    raise self._charset_error(token, part, bad, index)
            if token.role is Role.END or (
                token.role is Role.ARG and not token.data and token.text == END_OF_OPTIONS
            ):
                after_end = True
            elif (
                token.role is Role.ARG
                and token.data
                and token.text.startswith("-")
                and token.text != "-"
                and not after_end
            ):
                raise ArgsError(
                    f"argument token {index} comes from the arguments and begins with '-', "
                    "so the program could read it as an option (CWE-88); put it after '--' "
                    "or give it as the value of a flag written in the template",
                    self.pointer,
                    path=token.path,
                    token=token.text,
                    index=index,
                )
            argv.append(str(token.text))
        return argv

    def _charset_error(self, token: Token, part: str, bad: int, index: int) -> ArgsError:
        char = part[bad]
        shown = token.text if len(token.text) <= 60 else token.text[:57] + "..."
        return ArgsError(
            f"argument token {index} {shown!r} contains {char!r} (U+{ord(char):04X}), which "
            f"the {self.charset!r} character policy forbids"
            + (
                ' (use $charset: "argv" to allow any character but NUL)'
                if self.charset == "spec"
                else ""
            ),
            self.pointer,
            path=token.path,
            token=token.text,
            index=index,
            character=char,
        )


def check_combination(keys: list[str], fail: Callable[[str], Exception]) -> None:
    """``$flags`` and ``$repeat`` exclude each other and ordinary properties;
    ``$args`` combines with anything, in property order."""
    has_flags, has_repeat = "$flags" in keys, "$repeat" in keys
    if has_flags and has_repeat:
        raise fail("$flags and $repeat cannot share an object; nest one of them")
    if has_flags or has_repeat:
        plain = [k for k in keys if not k.startswith("$")]
        if plain:
            which = "$flags" if has_flags else "$repeat"
            raise fail(
                f"{which} cannot share an object with the property {plain[0]!r}; "
                "move one of them into its own object"
            )
