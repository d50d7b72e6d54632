"""Word expansion with bash's rules: field splitting and pathname expansion.

Input is a word whose parts are already expanded to text, each tagged with
whether bash would split it (unquoted ``$VAR`` and ``$(...)`` results) and
whether its characters may glob (unquoted text). Tool arguments are quoted
text: they are never split or globbed.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Segment", "fields", "fields_with_origin", "join", "may_glob"]

# bash ignores IFS from the environment and the plan refuses assigning it,
# so splitting always uses the default: space, tab, newline.
_IFS = re.compile(r"([ \t\n]+)")
_GLOB_CHARACTERS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Segment:
    """Expanded text of one word part."""

    text: str
    quoted: bool  # quoted text: no splitting, no globbing, makes a field even when empty
    split: bool = False  # an unquoted expansion: split on IFS whitespace
    data: bool = False  # from a tool argument or a step's output, directly or not


def join(segments: list[Segment]) -> str:
    """The word as one string: assignments and redirection targets are not split."""
    return "".join(segment.text for segment in segments)


def may_glob(segments: list[Segment]) -> bool:
    """Whether expanding the word may read directories (an unquoted glob character)."""
    return any(not s.quoted and _GLOB_CHARACTERS.search(s.text) for s in segments)


def fields(segments: list[Segment], cwd: str) -> list[str]:
    """Split the word into fields, then expand globs relative to ``cwd``."""
    return [text for text, _ in fields_with_origin(segments, cwd)]


def fields_with_origin(
    segments: list[Segment], cwd: str, visible: Callable[[str], bool] | None = None
) -> list[tuple[str, bool]]:
    """:func:`fields`, each with whether its first character came from data (a
    segment marked ``data``): the flag guard asks who wrote a field's start.
    ``visible`` drops glob matches a sandbox would not show."""
    result: list[tuple[str, bool]] = []
    current: list[tuple[str, bool]] = []  # (text, may glob)
    lead = False  # the current field's first run came from data
    has_field = False

    def start(data: bool) -> None:
        nonlocal lead
        if not any(text for text, _ in current):  # this segment's text comes first
            lead = data

    def finish() -> None:
        texts, named_by_files = _expand_field(current, cwd, visible)
        result.extend((text, lead or named_by_files) for text in texts)

    for segment in segments:
        if segment.quoted:
            if segment.text:
                start(segment.data)
            current.append((segment.text, False))
            has_field = True
        elif not segment.split:
            if segment.text:
                start(segment.data)
                current.append((segment.text, True))
                has_field = True
        else:
            for index, piece in enumerate(_IFS.split(segment.text)):
                if index % 2:  # a run of IFS whitespace ends the field
                    if has_field:
                        finish()
                    current, has_field = [], False
                elif piece:
                    start(segment.data)
                    current.append((piece, True))
                    has_field = True
    if has_field:
        finish()
    return result


def _expand_field(
    runs: list[tuple[str, bool]], cwd: str, visible: Callable[[str], bool] | None
) -> tuple[list[str], bool]:
    """The field's words, and whether their first characters are file names a
    glob matched: names anyone who can write the directory chose (a file the
    model had a step create, say), so the flag guard treats them as data."""
    text = "".join(run for run, _ in runs)
    if not any(active and _GLOB_CHARACTERS.search(run) for run, active in runs):
        return [text], False
    pattern = "".join(
        run.replace("[^", "[!") if active else glob.escape(run) for run, active in runs
    )
    try:
        matches = glob.glob(pattern, root_dir=cwd)
    except OSError:  # pragma: no cover - unreadable directories simply do not match
        matches = []
    if visible is not None:
        matches = [match for match in matches if visible(match)]
    if not matches:
        return [text], False  # bash without nullglob: the word stays as written
    first = next((run, active) for run, active in runs if run)
    named_by_files = first[1] and first[0][0] in "*?["
    # bash sorts matches; byte order is its order under the C locale.
    return sorted(matches, key=os.fsencode), named_by_files
