"""What one option group is."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["OptionGroup", "Settings"]


@dataclass
class Settings:
    """What a group's flags set: Policy fields and :meth:`Toolbox.load` keywords."""

    policy: dict[str, Any] = field(default_factory=dict)
    toolbox: dict[str, Any] = field(default_factory=dict)

    def update(self, other: Settings) -> None:
        self.policy.update(other.policy)
        self.toolbox.update(other.toolbox)


class OptionGroup(Protocol):
    def add(self, parser: Any) -> None: ...

    def settings(self, options: argparse.Namespace) -> Settings: ...
