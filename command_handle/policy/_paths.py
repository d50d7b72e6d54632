"""Path parameters: arguments that must stay inside the workspace (an extension).

A handle declares ``"paths": {"file": {"within": "workspace", "exists": true}}``.
Each listed parameter (a string, or an array of strings) is joined with the
working directory and resolved, ``..`` and symbolic links included; a path
that lands outside the root is refused before anything runs, with a message
the model can act on. ``"directory_within": "workspace"`` does the same for a
``directory`` computed from the arguments. ``within`` is ``"workspace"`` (the
Policy's) or an absolute directory written in the handle.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import DirectoryError, PathArgumentError
from ._policy import Policy

__all__ = ["check_directory_within", "check_paths", "root_of"]


def root_of(within: str, policy: Policy, pointer: str) -> str:
    """The real path of the root a ``within`` names."""
    if within == "workspace":
        if policy.workspace is None:
            raise DirectoryError(
                'the handle keeps paths "within": "workspace", but the policy has no '
                "workspace (Policy.workspace, or --workspace)",
                pointer,
            )
        return policy.workspace
    return os.path.realpath(within)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _values(value: object) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield "", value
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str):
                yield f"/{index}", item


def check_paths(
    paths: Mapping[str, Mapping[str, Any]], args: object, cwd: str, policy: Policy
) -> None:
    """Refuse an argument that resolves outside its root, or does not exist when
    it must. Called after the working directory is known, before launch."""
    if not paths or not isinstance(args, dict):
        return
    for name, rule in paths.items():
        root = root_of(str(rule.get("within", "workspace")), policy, f"/paths/{name}/within")
        where = "the workspace" if rule.get("within", "workspace") == "workspace" else root
        for suffix, text in _values(args.get(name)):
            resolved = os.path.realpath(os.path.join(cwd, text))
            pointer = f"/{name}{suffix}"
            if not _inside(resolved, root):
                raise PathArgumentError(
                    name, pointer, f"must be a path inside {where}; it resolves outside it"
                )
            if rule.get("exists") and not os.path.exists(resolved):
                raise PathArgumentError(
                    name, pointer, f"must name something that exists inside {where}"
                )


def check_directory_within(directory: str, within: str, policy: Policy) -> None:
    """A directory computed from the arguments must stay inside ``within``."""
    root = root_of(within, policy, "/directory_within")
    if not _inside(os.path.realpath(directory), root):
        where = "the workspace" if within == "workspace" else root
        raise DirectoryError(f"the directory must be inside {where}", "/directory")
