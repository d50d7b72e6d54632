"""The flag guard for every argv token a handle builds (draft section 5.1).

The args encoding guards its own tokens. Plain ``arguments`` templates (a
string, ``$``, ``$join``, ``$each``, ``$spread``, arrays) are evaluated with
provenance, so a token whose first character came from the model's
arguments is known, and refused when it begins like an option:

- ``-``, ``+`` (vim's ``+cmd``) and ``@`` (gcc's ``@file``) wherever they
  stand, unless a ``--`` written in the template came earlier. Right after a
  flag written in the template is no exception: a flat list does not say
  whether that flag takes a value (vim's ``-es`` takes none), and a flag
  whose argument is optional, like git's ``--pretty``, reads ``--output=...``
  as a new option. The joined form (``"--pretty={{format}}"``) is safe: the
  token begins with the author's text;
- the lone ``-`` (standard input) is allowed;
- values of the parameters the handle lists in ``options_allowed`` are allowed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..args import OptionLikeError
from ..errors import OptionArgumentError
from ..form.extend import is_data
from ..policy import first_option_word

__all__ = ["allowed_values", "check_option_like", "option_refusal"]


def _strings(value: object, pointer: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str):
                yield f"{pointer}/{index}", item


def allowed_values(names: Sequence[str], args: object) -> frozenset[str]:
    """The string values (and array items) of the parameters in ``names``."""
    if not names or not isinstance(args, dict):
        return frozenset()
    return frozenset(text for name in names for _, text in _strings(args.get(name), ""))


def option_refusal(token: str, args: object, prefix: str) -> OptionArgumentError:
    """The refusal naming the parameter whose value begins ``token``."""
    if isinstance(args, dict):
        for name, value in args.items():
            for pointer, text in _strings(value, f"/{name}"):
                if text and token.startswith(text[:1]) and token.startswith(text):
                    return OptionArgumentError(name, pointer, prefix)
    return OptionArgumentError(None, "", prefix)


def check_option_like(argv: Sequence[str], allowed: frozenset[str], args: object) -> None:
    """Refuse a token from the arguments that would be read as an option (the
    policy's one flag guard; values of ``options_allowed`` parameters pass)."""
    words = []
    for token in argv:  # a loop, not a comprehension: one function fewer per call
        from_data = is_data(token)
        if from_data and allowed:
            from_data = not any(token.startswith(v) for v in allowed if v)
        words.append((token, from_data))
    found = first_option_word(words)
    if found is not None:
        raise option_refusal(argv[found[0]], args, found[1])


def refusal_from_encoding(error: OptionLikeError, args: object) -> OptionArgumentError:
    """The args encoding's refusal, retold for the model."""
    token = error.token or ""
    return option_refusal(token, args, token[:1] or "-")
