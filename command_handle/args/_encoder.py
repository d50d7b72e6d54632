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
from typing import Any, NamedTuple

from .. import _json
from ..form import UNDEFINED
from ..form.extend import is_data, type_name
from ..form.extend import json_pointer as _pointer
from ._charset import first_forbidden
from ._errors import ArgsError, OptionLikeError
from ._names import END_OF_OPTIONS, FLAG, POSITIONAL, is_combinable

__all__ = ["DIRECTIVES", "Encoder", "Role", "Token"]


class Role(Enum):
    NAME = "name"  # a flag or subcommand name written in the template
    FLAG_VALUE = "flag value"  # the single value right after a template flag
    ARG = "argument"  # a positional token
    END = "end of options"  # a trusted "--"


# Paths into the encoded value are built lazily as (parent, key) pairs and
# turned into JSON Pointers only for error messages.
Path = tuple[Any, str | int] | None


def option_like(text: str, flag_value: bool) -> str | None:
    """Why a token from the arguments could be read as an option, or None.

    ``-`` starts an option everywhere, also right after a flag (a flag whose
    argument is optional, like git's ``--pretty``, takes ``--output=...`` as
    a new option). ``+`` (vim's ``+cmd``) and ``@`` (gcc's ``@file``
    response files) start options where a program expects an operand; as a
    flag's value they are only a value.
    """
    first = text[:1]
    if first == "-":
        return "'-'"
    if first in ("+", "@") and not flag_value:
        return repr(first)
    return None


def path_text(path: Path) -> str:
    keys: list[str | int] = []
    while path is not None:
        path, key = path
        keys.append(key)
    text = ""
    for key in reversed(keys):
        text = _pointer.child(text, key)
    return text


_NAME, _FLAG_VALUE, _ARG, _END = Role.NAME, Role.FLAG_VALUE, Role.ARG, Role.END


class Token(NamedTuple):
    text: str
    data: bool
    role: Role
    parts: tuple[str, ...] | None = None  # the values a joined "name=" token was made of
    path: Path = None


_KIND_DIRECTIVE, _KIND_END, _KIND_FLAG, _KIND_SWITCH, _KIND_POSITIONAL, _KIND_INVALID = range(6)
_KINDS: dict[str, int] = {}


def _kind(key: str) -> int:
    """Classify a property name (cached: templates repeat their names on every call)."""
    kind = _KINDS.get(key)
    if kind is None:
        if key in DIRECTIVES:
            kind = _KIND_DIRECTIVE
        elif key == END_OF_OPTIONS:
            kind = _KIND_END
        elif FLAG.fullmatch(key):
            kind = _KIND_SWITCH if is_combinable(key) else _KIND_FLAG
        elif POSITIONAL.fullmatch(key):
            kind = _KIND_POSITIONAL
        else:
            kind = _KIND_INVALID
        if len(_KINDS) < 4096:
            _KINDS[str(key)] = kind
    return kind


# Tokens a policy has accepted before; literal template tokens recur on every call.
_ACCEPTED: dict[str, set[str]] = {}


def join_values(values: list[str]) -> str:
    """The Argument Joining Algorithm: escape ``\\`` then ``,``, join with ``,``."""
    return ",".join(v.replace("\\", "\\\\").replace(",", "\\,") for v in values)


DirectiveHandler = Callable[["Encoder", object, Path], list[Token]]
DIRECTIVES: dict[str, DirectiveHandler] = {}


class Encoder:
    """Encodes one value; not reused."""

    __slots__ = ("charset", "depth", "option_values", "pointer")

    def __init__(
        self,
        charset: str,
        pointer: str = "",
        depth: int = 256,
        option_values: frozenset[str] = frozenset(),
    ) -> None:
        self.charset = charset
        self.pointer = pointer
        self.depth = depth
        self.option_values = option_values

    def error(self, message: str, path: Path) -> ArgsError:
        return ArgsError(message, self.pointer, path=path_text(path))

    # -- Value Transform (section 4.2) ------------------------------------

    def value(self, value: object, path: Path, depth: int = 0) -> list[Token]:
        if value is None or value is False or value is UNDEFINED:
            return []
        if value is True:
            return [Token("true", False, _ARG, None, path)]
        if isinstance(value, str):
            return [Token(str(value), is_data(value), _ARG, None, path)]
        if isinstance(value, int | float):
            try:
                text = _json.format_number(value)
            except _json.NonJSONValueError:
                raise self.error("non-finite numbers cannot be arguments", path) from None
            return [Token(text, is_data(value), _ARG, None, path)]
        if depth > self.depth:
            raise self.error("value nested too deeply", path)
        if isinstance(value, list):
            tokens: list[Token] = []
            for index, item in enumerate(value):
                tokens.extend(self.value(item, (path, index), depth + 1))
            return tokens
        if isinstance(value, dict):
            return self.object(value, path, depth + 1)
        raise self.error(f"a {type_name(value)} value cannot be an argument", path)

    # -- flags -------------------------------------------------------------

    def flag(self, name: str, value: object, path: Path, depth: int) -> list[Token]:
        """One flag property: a switch, a joined ``name=value``, or the name then values."""
        if value is True:  # only the JSON boolean makes a switch; "true" is a value
            if name.endswith("="):
                return [Token(name + "true", False, _NAME, ("true",), path)]
            return [Token(name, False, _NAME, None, path)]
        tokens = self.value(value, path, depth)
        if not tokens:
            return []  # null, false, [] and {} omit the flag entirely
        if name.endswith("="):
            parts = tuple(t.text for t in tokens)
            return [Token(name + join_values(list(parts)), False, _NAME, parts, path)]
        first = tokens[0]
        if first.role is _ARG:
            tokens[0] = first._replace(role=_FLAG_VALUE)
        return [Token(name, False, _NAME, None, path), *tokens]

    # -- Object Transform (section 4.1) ------------------------------------

    def object(self, obj: Mapping[str, object], path: Path, depth: int) -> list[Token]:
        keys = list(obj)
        directive_keys = [k for k in keys if k[:1] == "$" and not is_data(k)]
        if directive_keys:
            self._check_combination(keys, directive_keys, path)
        tokens: list[Token] = []
        run: list[str] = []  # a run of single-character switches: prefix, then letters
        run_path: Path = None
        for key in keys:
            value = obj[key]
            where = (path, key)
            data = is_data(key)
            if data:
                self._check_data_name(key, where)
            kind = _kind(key)
            if kind == _KIND_SWITCH and value is True:
                if run and run[0] != key[0]:
                    tokens.append(Token("".join(run), False, _NAME, None, run_path))
                    run = []
                if not run:
                    run, run_path = [key[0]], where
                run.append(key[1])
                continue
            if run:
                tokens.append(Token("".join(run), False, _NAME, None, run_path))
                run = []
            if kind in (_KIND_FLAG, _KIND_SWITCH):
                tokens.extend(self.flag(key, value, where, depth))
            elif kind == _KIND_POSITIONAL:
                tokens.append(Token(str(key), data, _NAME, None, where))
                tokens.extend(self.value(value, where, depth))
            elif kind == _KIND_DIRECTIVE and not data:
                tokens.extend(DIRECTIVES[key](self, value, where))
            elif kind == _KIND_END:
                tokens.append(Token(END_OF_OPTIONS, False, _END, None, where))
                tokens.extend(self.value(value, where, depth))
            else:
                raise self.error(
                    f"{key!r} is not an argument name: use a flag (-x, --name, --name=), "
                    "a subcommand or positional name ([A-Za-z0-9][-A-Za-z0-9_]*), '--', "
                    "or $args, $flags, $repeat",
                    where,
                )
        if run:
            tokens.append(Token("".join(run), False, _NAME, None, run_path))
        return tokens

    def _check_data_name(self, key: str, path: Path) -> None:
        if key[:1] in ("-", "+", "$"):
            raise self.error(
                "a name taken from the arguments cannot be a flag or a directive: "
                "flags must be written in the template (see docs/args.md)",
                path,
            )

    def _check_combination(self, keys: list[str], directive_keys: list[str], path: Path) -> None:
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
        accepted = _ACCEPTED.setdefault(self.charset, set())
        for index, token in enumerate(tokens):
            for part in token.parts if token.parts is not None else (token.text,):
                if part in accepted:
                    continue
                bad = first_forbidden(part, self.charset)
                if bad >= 0:
                    raise self._charset_error(token, part, bad, index)
                if len(accepted) < 4096 and len(part) <= 256:
                    accepted.add(str(part))
            if token.role is _END or (
                token.role is _ARG and not token.data and token.text == END_OF_OPTIONS
            ):
                after_end = True
            elif (
                token.data
                and not after_end
                and token.text != "-"
                and token.text not in self.option_values
            ):
                problem = option_like(token.text, token.role is _FLAG_VALUE)
                if problem:
                    raise OptionLikeError(
                        f"argument token {index} comes from the arguments and begins with "
                        f"{problem}, so the program could read it as an option (CWE-88); "
                        "put it after '--'"
                        + (
                            ", or join it to its flag ('--name=')"
                            if token.role is _FLAG_VALUE
                            else ""
                        ),
                        self.pointer,
                        path=path_text(token.path),
                        token=token.text,
                        index=index,
                    )
            argv.append(str(token.text))
        return argv

    def _charset_error(self, token: Token, part: str, bad: int, index: int) -> ArgsError:
        char = part[bad]
        # A token written in the template is quoted to help its author; one from the
        # arguments is not, since it may be a secret.
        if token.data:
            shown = "(from the arguments)"
        else:
            shown = repr(token.text if len(token.text) <= 60 else token.text[:57] + "...")
        return ArgsError(
            f"argument token {index} {shown} contains {char!r} (U+{ord(char):04X}), which "
            f"the {self.charset!r} character policy forbids"
            + (
                ' (use $charset: "argv" to allow any character but NUL)'
                if self.charset == "spec"
                else ""
            ),
            self.pointer,
            path=path_text(token.path),
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
