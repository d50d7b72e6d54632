"""A credential resolver that reads host variables the application names.

For servers with no user (an MCP server over stdio): ``--credential
NAME=VAR`` says that the Security Object named ``NAME`` is resolved from the
host variable ``VAR``. The Credential Object is ``{"scheme": <the Security
Object's scheme>, "value": <$VAR>}``; ``NAME.FIELD=VAR`` sets ``FIELD``
instead of ``value`` (several fields for one name make one object). The
variable is read at each call, so a rotated secret is picked up, and only
here: the child never inherits it unless a handle's ``$credential`` puts it
in its environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import CommandHandleError
from ..handle import CommandHandle

__all__ = [
    "CredentialLookupError",
    "CredentialOptionError",
    "environment_credentials",
    "parse_credential_option",
]


class CredentialLookupError(CommandHandleError, LookupError):
    """No credential is configured for the handle, or its variable is unset.
    The message names the Security Object and the variable, never a value."""


class CredentialOptionError(CommandHandleError, ValueError):
    """A ``--credential`` option that is not ``NAME[.FIELD]=VARIABLE``."""


def parse_credential_option(option: str) -> tuple[str, str, str]:
    """``NAME[.FIELD]=VAR`` as (name, field, variable)."""
    target, sep, variable = option.partition("=")
    if not sep or not target or not variable:
        raise CredentialOptionError(
            f"--credential takes NAME=VARIABLE or NAME.FIELD=VARIABLE, not {option!r}"
        )
    name, dot, field = target.partition(".")
    return name, (field if dot and field else "value"), variable


def environment_credentials(
    options: Mapping[str, Mapping[str, str]],
) -> Any:
    """A resolver for ``Toolbox(credentials=...)``: ``options`` maps a Security
    Object's ``name`` to ``{field: host variable}``."""

    def resolve(principal: Any, handle: CommandHandle) -> dict[str, Any]:
        security = handle.security
        objects = security if isinstance(security, list) else [security] if security else []
        for item in objects:
            fields = options.get(str(item.get("name", "")))
            if fields is None:
                continue
            credential: dict[str, Any] = {"scheme": item.get("scheme")}
            for field, variable in fields.items():
                value = os.environ.get(variable)
                if value is None:
                    raise CredentialLookupError(
                        f"the variable {variable} for the credential {item.get('name')!r} is unset"
                    )
                credential[field] = value
            return credential
        raise CredentialLookupError(f"no credential is configured for the tool {handle.name!r}")

    return resolve
