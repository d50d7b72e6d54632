"""A tool of a Toolbox: its Tool Description and what runs it (a handle or a UTCP template)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..call import Session
from ..handle import CommandHandle

if TYPE_CHECKING:  # the UTCP layer loads with the first UTCP document
    from ..plugins import BashTool
    from ..utcp import CliCallTemplate, LegacyCliProvider, UtcpTool

    UtcpSource = UtcpTool | CliCallTemplate | LegacyCliProvider

__all__ = ["NAME_PATTERN", "Tool", "llm_name"]

# Tool Handle 2.1, OpenAI and Anthropic: the names a model may call. \A and \Z,
# because Python's $ also matches before a final newline: "x\n" is no name.
NAME_PATTERN = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")


@dataclass(frozen=True)
class Tool:
    """One tool: ``name``, ``description`` and ``parameters`` (the Tool Description
    of Tool Handle 2.1) are what a model sees; ``source`` is the file it came from.

    ``handle`` is set for a Command Handle, ``utcp`` for a UTCP tool or template;
    a bash tool plugin has ``bash_tool`` and the ``handle`` generated for it.
    A manual's tool is named ``<manual>_<tool>`` (OpenAI and Anthropic refuse
    ``.``); ``utcp_name`` keeps UTCP's ``<manual>.<tool>``.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    source: str
    handle: CommandHandle | None = None
    utcp: UtcpSource | None = field(default=None, repr=False)
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    bash_tool: BashTool | None = field(default=None, repr=False)
    # A UTCP manual's tool: its manual (the namespace of its variables) and its
    # UTCP name, ``manual.tool``, which MCP shows and lookups accept.
    utcp_manual: str | None = None
    utcp_name: str | None = None
    # The program may outlive the call (a handle's ``session``); any kind of
    # tool that runs one command may carry it.
    session: Session | None = None

    @property
    def kind(self) -> Literal["command", "utcp", "bash"]:
        if self.bash_tool is not None:
            return "bash"
        return "command" if self.handle is not None else "utcp"

    @property
    def checks_own_arguments(self) -> bool:
        """Whether preparing a call validates the arguments against the advertised
        ``parameters`` (a handle's, a UTCP tool's ``inputs``); a bare template's
        derived schema is checked by the Toolbox."""
        if self.handle is not None:
            return True
        from ..utcp import UtcpTool

        return isinstance(self.utcp, UtcpTool)

    @property
    def uses_credentials(self) -> bool:
        """Whether calls need a Credential Object from the application's resolver."""
        return self.handle is not None and self.handle.uses_credentials

    @classmethod
    def from_handle(cls, handle: CommandHandle, source: str = "") -> Tool:
        return cls(
            name=handle.name,
            description=handle.description,
            parameters=handle.parameters,
            source=source,
            handle=handle,
            output_schema=handle.output_schema,
            annotations=handle.annotations,
            session=None if handle.session is None else handle.session.settings(),
        )


def llm_name(*parts: str) -> str:
    """A name models accept, from ``parts`` joined by ``_``: other characters
    become ``_``; a name over 64 characters keeps its end and a short digest."""
    import hashlib

    joined = "_".join(part for part in parts if part)
    name = re.sub(r"[^A-Za-z0-9_-]", "_", joined) or "tool"
    if len(name) > 64:
        digest = hashlib.sha256(joined.encode()).hexdigest()[:8]
        name = f"{name[: 64 - 9]}_{digest}"
    return name
