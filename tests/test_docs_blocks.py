"""Every fenced Python block in README.md and docs/ runs as written.

A block runs in a fresh namespace from the repository root; a top-level
``await`` is run under asyncio. Blocks show refusals with ``try``/``except``,
so a block that raises is a block that is wrong.
"""

from __future__ import annotations

import ast
import asyncio
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        text = path.read_text()
        for match in _BLOCK.finditer(text):
            line = text[: match.start()].count("\n") + 1
            found.append((f"{path.relative_to(ROOT)}:{line}", match.group(1)))
    return found


BLOCKS = _blocks()


def test_the_docs_have_python_blocks() -> None:
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_a_docs_block_runs(where: str, code: str, capsys: pytest.CaptureFixture[str]) -> None:
    previous = os.getcwd()
    os.chdir(ROOT)
    try:
        compiled = compile(code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        outcome = eval(compiled, {"__name__": "__docs__"})
        if asyncio.iscoroutine(outcome):
            asyncio.run(outcome)
    finally:
        os.chdir(previous)
    capsys.readouterr()
