"""``json``: ``--args-json`` on the command line, the arguments object on stdin.

No model data reaches the argv, so there is nothing for the flag guard to
check; the script reads the object (with ``jq``, say).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ... import _json

if TYPE_CHECKING:
    from .._tool import BashTool

NAME = "json"


def tokens(tool: BashTool, args: Mapping[str, Any]) -> tuple[list[str], str | None]:
    return ["--args-json"], _json.stringify(dict(args))
