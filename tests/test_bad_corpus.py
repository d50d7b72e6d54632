"""Walk fixtures/bad: every malformed input gets its error, says where, and runs nothing.

Each case names the error class and a fragment of its message. The walk also
checks what every refusal must do (docs/security.md): name the location (a
JSON Pointer, a step and column, or a line and column in a file), never echo a
host secret or the sensitive value the case marks as ``absent``, and leave the
executor with nothing spawned.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import CommandHandle, Executor, Policy, utcp
from command_handle.errors import TranslationError
from command_handle.form import compile_template

from .processes import ROOT

BAD = ROOT / "fixtures" / "bad"
LAYERS = ("handles", "tool-form", "args", "utcp")
# The host secret: set while the corpus runs, and never allowed in a message.
SECRET_NAME, SECRET = "CH_BAD_SECRET", "s3cr3t-host-value-7f3a"


def _substitute(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("@BAD@", str(BAD))
    if isinstance(value, list):
        return [_substitute(item) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item) for key, item in value.items()}
    return value


def corpus() -> Iterator[tuple[str, dict[str, Any]]]:
    for layer in LAYERS:
        for case in json.loads((BAD / f"{layer}.json").read_text()):
            yield layer, _substitute(case)


CASES = list(corpus())


def outcome(layer: str, case: dict[str, Any]) -> tuple[Exception | None, Executor]:
    """Run one case as a user would; return what it raised and the executor used."""
    fields: dict[str, Any] = {k: tuple(v) for k, v in case.get("policy", {}).items()}
    policy = Policy(**fields)
    executor = Executor(policy)
    try:
        if layer == "handles":
            source = str(BAD / case["file"]) if "file" in case else case["handle"]
            handle = CommandHandle.load(source)
            executor.call_sync(handle, case.get("args"))
        elif layer in ("tool-form", "args"):
            compile_template(case["template"]).evaluate(case.get("args"))
        else:
            source = str(BAD / case["file"]) if "file" in case else case["template"]
            run = partial(
                utcp.run,
                source,
                case.get("args", {}),
                variables=case.get("variables"),
                executor=executor,
            )
            trio.run(run)
    except Exception as exc:
        return exc, executor
    return None, executor


_WHERE = re.compile(
    r"\(at [^)]+\)|\(line \d+, column \d+\)|step \d+, (line \d+, )?column \d+|schema: /[^:]*: "
)


@pytest.fixture(autouse=True)
def host_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_NAME, SECRET)


def test_the_corpus_covers_every_layer() -> None:
    counts = {layer: sum(1 for kind, _ in CASES if kind == layer) for layer in LAYERS}
    assert sum(counts.values()) >= 60 and all(counts.values()), counts
    assert len({(layer, case["id"]) for layer, case in CASES}) == len(CASES)


@pytest.mark.parametrize(
    ("layer", "case"), CASES, ids=[f"{layer}/{case['id']}" for layer, case in CASES]
)
def test_malformed_input_is_refused_clearly(layer: str, case: dict[str, Any]) -> None:
    error, executor = outcome(layer, case)
    expected = case["error"]
    assert error is not None, "accepted"
    assert type(error).__name__ == expected["type"], f"{type(error).__name__}: {error}"
    message = str(error)
    assert expected["message"] in message
    assert executor.spawned == 0
    # Where: a JSON Pointer, or a line and column in a file, or a step and column.
    pointer = getattr(error, "pointer", "")
    if "pointer" in expected:
        assert pointer == expected["pointer"]
    assert _WHERE.search(message), f"no location in {message!r}"
    if isinstance(error, TranslationError):
        assert (error.step, error.column) == (expected["step"], expected["column"])
    # Never a secret: the host's, or the value the case marks as sensitive.
    assert SECRET not in message and SECRET not in repr(error.args)
    if "absent" in case:
        assert case["absent"] not in message
    assert os.environ[SECRET_NAME] == SECRET  # and the host environment is untouched


def test_the_corpus_files_are_listed_in_its_readme() -> None:
    readme = (BAD / "README.md").read_text()
    for path in sorted(BAD.rglob("*")):
        if path.is_file() and path.name != "README.md":
            assert str(path.relative_to(BAD)) in readme, path
    assert Path(BAD / "raw").is_dir()
