"""Names of properties in args objects (Command Handle section 4)."""

from __future__ import annotations

import re

__all__ = [
    "END_OF_OPTIONS",
    "FLAG",
    "POSITIONAL",
    "is_combinable",
    "normalize_flag_name",
]

# -x, +x, --name, ++name, with an optional trailing '=' (joined value).
FLAG = re.compile(r"[-+]{1,2}[A-Za-z0-9][-A-Za-z0-9_]*=?")
# Subcommands and positional names.
POSITIONAL = re.compile(r"[A-Za-z0-9][-A-Za-z0-9_]*")
END_OF_OPTIONS = "--"


def is_combinable(name: str) -> bool:
    """Single-character flags (``-a``, ``+x``) combine into one token when ``true``."""
    return len(name) == 2 and name[0] in "-+" and name[1] not in "-+="


def normalize_flag_name(name: str) -> str:
    """``$flags`` accepts bare names: ``a`` is ``-a``, ``message`` is ``--message``,
    ``author=`` is ``--author=``, ``D=`` is ``-D=``."""
    if name[:1] in ("-", "+"):
        return name
    stem = name[:-1] if name.endswith("=") else name
    return ("-" if len(stem) == 1 else "--") + name
