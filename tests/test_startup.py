"""Start-up imports only what is used: measured in fresh interpreters with
``python -X importtime``, which lists every module a process imports.

``command-handle mcp`` on a folder of JSON Command Handles whose templates
name arguments must not import what the folder does not use: the UTCP
translator and tree-sitter, the executor (before the first call), YAML,
JSONPath and the ``regex`` package, the plan hash's RFC 8785 encoder, or
jsonschema's format libraries (docs/decisions.md, "Start-up").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .processes import ROOT

# What a folder of plain JSON handles never needs at start-up.
UNUSED = {
    "command_handle.executor",
    "command_handle.utcp",
    "command_handle.plan",
    "tree_sitter",
    "tree_sitter_bash",
    "yaml",
    "jsonpath_rfc9535",
    "regex",
    "rfc8785",
    "arrow",
    "isoduration",
    "rfc3986_validator",
    "rfc3339_validator",
    "webcolors",
    "uri_template",
    "fqdn",
    "jsonpointer",
    # A plain schema is checked against the meta-schema without jsonschema, and
    # arguments the quick check accepts need no validator: the stack loads on a
    # schema beyond the plain subset, a format checked, or arguments refused.
    "jsonschema",
    "jsonschema_specifications",
    "referencing",
    "rpds",
    "regress",
}

ECHO = {
    "name": "echo",
    "description": "echoes a word",
    "handler": "command",
    "command": "/bin/echo",
    "parameters": {
        "type": "object",
        "properties": {"word": {"type": "string"}},
        "required": ["word"],
    },
    "arguments": [{"$": "word"}],
}


def imported(*argv: str, stdin: int | None = subprocess.DEVNULL) -> set[str]:
    """The modules ``python -X importtime ARGV`` imports (it must exit 0)."""
    finished = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        stdin=stdin,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr.decode()[-2000:]
    modules = set()
    for line in finished.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":  # the header line
                modules.add(name)
    return modules


def top_levels(modules: set[str]) -> set[str]:
    """``modules`` with every parent package of each added."""
    names = set(modules)
    for module in modules:
        parts = module.split(".")
        names.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return names


def test_mcp_start_up_imports_only_what_the_folder_uses(tmp_path: Path) -> None:
    for index in range(10):
        (tmp_path / f"echo{index}.json").write_text(json.dumps({**ECHO, "name": f"echo{index}"}))
    modules = top_levels(imported("-m", "command_handle", "mcp", str(tmp_path)))
    assert "command_handle.toolbox" in modules  # it did load
    assert modules & UNUSED == set()


def test_what_a_folder_uses_is_imported(tmp_path: Path) -> None:
    """The other side: a YAML handle, a JSONPath filter and a ``format`` bring
    in their libraries."""
    document = {
        **ECHO,
        "parameters": {
            "type": "object",
            "properties": {"word": {"type": "string", "format": "duration"}},
        },
        "arguments": [{"$": "$[?@.word].word"}],
    }
    (tmp_path / "echo.yaml").write_text(json.dumps(document))  # JSON is YAML
    modules = top_levels(
        imported(
            "-c",
            "import sys\n"
            "from command_handle.toolbox import Toolbox\n"
            f"toolbox = Toolbox.load({str(tmp_path)!r})\n"
            "result = toolbox.call_sync('echo', {'word': 'P1'})\n"
            "assert 'valid duration' in result.content, result.content\n",
        )
    )
    assert {"yaml", "jsonpath_rfc9535", "regex", "isoduration"} <= modules


@pytest.mark.parametrize("argv", [["--help"], ["mcp", "--help"], ["run", "--help"]])
def test_help_imports_no_layer(argv: list[str]) -> None:
    modules = imported("-m", "command_handle", *argv)
    ours = {name for name in modules if name.startswith("command_handle.")}
    assert ours <= {"command_handle.errors", "command_handle._json"} | {
        name for name in ours if name.startswith("command_handle.cli")
    }


def test_import_command_handle_imports_no_layer() -> None:
    modules = imported("-c", "import command_handle")
    assert {name for name in modules if name.startswith("command_handle")} == {"command_handle"}


def test_names_load_from_their_layer_on_first_use() -> None:
    import command_handle
    from command_handle.errors import CommandHandleError
    from command_handle.executor import Executor
    from command_handle.toolbox import Toolbox

    assert command_handle.Executor is Executor
    assert command_handle.Toolbox is Toolbox
    assert command_handle.CommandHandleError is CommandHandleError
    assert set(command_handle.__all__) <= set(dir(command_handle))
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        command_handle.Nothing  # noqa: B018


FORMAT_TABLE = """
import json, sys
if sys.argv[1] == "plain":
    sys.modules["rfc3987_syntax"] = None  # as ours hides it; its checks are ours
    import jsonschema
else:
    from command_handle import _jsonschema
    jsonschema = _jsonschema.load()
    assert not {"isoduration", "rfc3986_validator", "webcolors"} & set(sys.modules)
INSTANCES = ["", "P1D", "P1", "PT1H", "2020-01-01T00:00:00Z", "2020-13-01T00:00:00Z",
             "12:00:00Z", "x", "http://a/b", "a b", "/a/b", "0/a", "a~2", "{x}", "{x",
             "example.com", "-bad-.com", "b\\u00fccher.de", "xn--", "#fff", "red", 5, None]
table = {}
for draft in ("Draft3Validator", "Draft4Validator", "Draft6Validator", "Draft7Validator",
              "Draft201909Validator", "Draft202012Validator"):
    checker = getattr(jsonschema, draft).FORMAT_CHECKER
    for name in sorted(set(checker.checkers) - {"iri", "iri-reference"}):
        for instance in INSTANCES:
            try:
                checker.check(instance, name)
                outcome = "ok"
            except jsonschema.FormatError as error:
                outcome = "format error" + (" with a cause" if error.cause else "")
            table[f"{draft} {name} {instance!r}"] = outcome
print(json.dumps(table, sort_keys=True))
"""


def test_deferred_format_libraries_check_as_jsonschema_does() -> None:
    """jsonschema imported with its format libraries deferred registers the same
    checks, and each gives the same verdict, as jsonschema imported plainly."""

    def table(mode: str) -> dict[str, str]:
        finished = subprocess.run(
            [sys.executable, "-c", FORMAT_TABLE, mode],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=120,
            check=True,
        )
        result: dict[str, str] = json.loads(finished.stdout)
        return result

    plain, deferred = table("plain"), table("deferred")
    assert len(plain) > 1000
    assert {key.split()[1] for key in plain} >= {"duration", "uri", "date-time", "hostname"}
    assert deferred == plain


def test_an_invalid_schema_is_refused_at_load_before_jsonschema_is_imported(
    tmp_path: Path,
) -> None:
    """The meta-schema check needs no jsonschema for a plain schema, but a
    schema it cannot vouch for still reaches jsonschema, which refuses it at
    load, in a fresh process, with the pointer of the bad value."""
    document = {
        **ECHO,
        "parameters": {"type": "object", "properties": {"word": {"type": "strin"}}},
    }
    (tmp_path / "echo.json").write_text(json.dumps(document))
    finished = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from command_handle.toolbox import Toolbox\n"
            "assert 'jsonschema' not in sys.modules\n"
            f"Toolbox.load({str(tmp_path)!r})\n",
        ],
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert finished.returncode != 0
    error = finished.stderr.decode()
    assert "parameters is not a valid JSON Schema" in error, error
    assert "/parameters/properties/word/type" in error, error
