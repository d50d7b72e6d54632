"""The conformance runner: language-neutral JSON vectors in ``spec_tests/vectors``.

Each vector file names its ``suite``; each suite has a runner function here
that raises :class:`VectorFailure` with a reason when a vector does not hold.
``command-handle conformance`` and the pytest runner in ``spec_tests/`` both
use this module, so the table and the test suite cannot disagree.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import trio

from . import _json, errors, form, utcp
from .args import ArgsError, OptionLikeError
from .executor import CommandResult, Executor
from .handle import CommandHandle

__all__ = [
    "SUITES",
    "Vector",
    "VectorFailure",
    "VectorResult",
    "default_vectors_dir",
    "format_table",
    "load_vectors",
    "run_vector",
    "same_json",
]


class VectorFailure(AssertionError):
    """A vector's expectation does not hold."""


@dataclass(frozen=True)
class Vector:
    suite: str
    file: Path
    data: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def section(self) -> str:
        return str(self.data.get("section", "?"))

    @property
    def note(self) -> str | None:
        note = self.data.get("note")
        return str(note) if note is not None else None


@dataclass(frozen=True)
class VectorResult:
    vector: Vector
    passed: bool
    detail: str = ""


def default_vectors_dir() -> Path | None:
    """``spec_tests/vectors`` of the source checkout, or of the current directory."""
    for base in (Path(__file__).resolve().parent.parent, Path.cwd()):
        candidate = base / "spec_tests" / "vectors"
        if candidate.is_dir():
            return candidate
    return None


def load_vectors(directory: Path) -> list[Vector]:
    vectors: list[Vector] = []
    for file in sorted(directory.glob("*.json")):
        document = _json.loads(file.read_bytes())
        suite = document["suite"]
        vectors.extend(Vector(suite, file, item) for item in document["vectors"])
    return vectors


def same_json(a: object, b: object) -> bool:
    """JSON equality: numbers by value, booleans distinct from numbers, objects unordered."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if isinstance(a, float) and math.isnan(a):
            return isinstance(b, float) and math.isnan(b)
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return str(a) == str(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    if isinstance(a, bytes) and isinstance(b, bytes):
        return bytes(a) == bytes(b)
    return False


def _show(value: object) -> str:
    if value is form.UNDEFINED:
        return "UNDEFINED"
    try:
        text = _json.stringify(value)
    except (ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= 300 else text[:300] + "..."


def check_error(vector: Vector, exc: Exception, phase: str) -> None:
    """Compare a raised error with the vector's ``error`` expectation."""
    expected = vector.data["error"]
    cls = getattr(form, expected["type"], None) or _find_error_class(expected["type"])
    if not isinstance(exc, cls):
        raise VectorFailure(f"expected {expected['type']}, got {type(exc).__name__}: {exc}")
    if expected.get("phase", phase) != phase:
        raise VectorFailure(f"expected the error at {expected['phase']}, it came at {phase}: {exc}")
    message = str(exc)
    if expected.get("contains") and expected["contains"] not in message:
        raise VectorFailure(f"message {message!r} lacks {expected['contains']!r}")
    if "pointer" in expected and getattr(exc, "pointer", None) != expected["pointer"]:
        raise VectorFailure(
            f"expected pointer {expected['pointer']!r}, got {getattr(exc, 'pointer', None)!r}"
        )


_ERROR_CLASSES: dict[str, type[Exception]] = {}


def register_error_class(cls: type[Exception]) -> None:
    _ERROR_CLASSES[cls.__name__] = cls


def _find_error_class(name: str) -> type[Exception]:
    if name not in _ERROR_CLASSES:
        raise VectorFailure(f"unknown error class {name!r} in vector")
    return _ERROR_CLASSES[name]


def check_value(vector: Vector, result: object) -> None:
    data = vector.data
    if data.get("expect_undefined"):
        if result is not form.UNDEFINED:
            raise VectorFailure(f"expected UNDEFINED, got {_show(result)}")
    elif not same_json(result, data["expect"]):
        raise VectorFailure(f"expected {_show(data['expect'])}, got {_show(result)}")
    for key, value in data.get("expect_headers", {}).items():
        headers = form.headers_of(result)
        if headers.get(key) != value:
            raise VectorFailure(f"expected header {key}: {value!r}, got {dict(headers.items())!r}")


def _form_options(vector: Vector) -> dict[str, Any]:
    options = dict(vector.data.get("options", {}))
    if "include_base" in options:
        options["include_base"] = vector.file.parent.parent / options["include_base"]
    if "limits" in options:
        options["limits"] = form.Limits(**options["limits"])
    return options


def run_tool_form(vector: Vector) -> None:
    data = vector.data
    try:
        template = form.compile_template(data["template"], **_form_options(vector))
    except Exception as exc:
        if "error" not in data:
            raise VectorFailure(f"compile failed: {type(exc).__name__}: {exc}") from exc
        check_error(vector, exc, "compile")
        return
    try:
        result = template.evaluate(data.get("args"))
    except Exception as exc:
        if "error" not in data:
            raise VectorFailure(f"evaluation failed: {type(exc).__name__}: {exc}") from exc
        check_error(vector, exc, "evaluate")
        return
    if "error" in data:
        raise VectorFailure(f"expected {data['error']['type']}, got {_show(result)}")
    check_value(vector, result)


def _substitute(value: Any, replacements: dict[str, str]) -> Any:
    if isinstance(value, str):
        for placeholder, text in replacements.items():
            value = value.replace(placeholder, text)
        return value
    if isinstance(value, list):
        return [_substitute(v, replacements) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, replacements) for k, v in value.items()}
    return value


_SECRET = "vector-secret-value-not-for-children"


def _replacements(vector: Vector, tmp: str) -> dict[str, str]:
    """The placeholders process vectors may use, for a fresh directory ``tmp``."""
    probe = vector.file.parent.parent.parent / "fixtures" / "programs" / "probe.py"
    return {
        "@python": sys.executable,
        "@probe": str(probe),
        "@tmp": os.path.realpath(tmp),
        "@cwd": os.getcwd(),
        "@missing": "/nonexistent/command-handle-vector",
    }


def _check_refusal(vector: Vector, exc: Exception, executor: Executor) -> None:
    """A call raised: the vector must expect this error, and nothing may have run."""
    if "error" not in vector.data:
        raise VectorFailure(f"call failed: {type(exc).__name__}: {exc}") from exc
    check_error(vector, exc, "call")
    if executor.spawned:
        raise VectorFailure("a process was spawned although the call was refused") from exc


def run_command_handle(vector: Vector) -> None:
    """Run a Command Handle vector with real processes (see the suite's description)."""
    data = vector.data
    with tempfile.TemporaryDirectory() as tmp:
        replacements = _replacements(vector, tmp)
        document = _substitute(data["handle"], replacements)
        args = _substitute(data.get("args", {}), replacements)
        expect = _substitute(data.get("expect"), replacements)
        cwd = os.getcwd()
        os.environ["CH_VECTOR_SECRET"] = _SECRET
        executor = Executor()
        try:
            try:
                handle = CommandHandle.load(document)
            except Exception as exc:
                if "error" not in data:
                    raise VectorFailure(f"load failed: {type(exc).__name__}: {exc}") from exc
                check_error(vector, exc, "load")
                return
            try:
                result = executor.call_sync(handle, args)
            except Exception as exc:
                _check_refusal(vector, exc, executor)
                return
        finally:
            del os.environ["CH_VECTOR_SECRET"]
            if os.getcwd() != cwd:
                raise VectorFailure("the parent's working directory changed")
        if "error" in data:
            raise VectorFailure(
                f"expected {data['error']['type']}, the command ran: {result.to_json()}"
            )
        _check_result(result, expect)


def _check_result(result: CommandResult, expect: dict[str, Any]) -> None:
    for key in ("exit_code", "timed_out", "signal", "stdout", "stderr"):
        if key in expect and not same_json(getattr(result, key), expect[key]):
            raise VectorFailure(
                f"expected {key} {_show(expect[key])}, got {_show(getattr(result, key))} "
                f"(stderr: {_show(result.stderr)})"
            )
    if "view_keys" in expect:
        view = result.view
        if not isinstance(view, dict) or sorted(view) != sorted(expect["view_keys"]):
            raise VectorFailure(
                f"expected a view with keys {expect['view_keys']}, got {_show(view)}"
            )
    if "probe" in expect:
        assert isinstance(result.stdout, str)
        try:
            report = json.loads(result.stdout)
        except ValueError:
            raise VectorFailure(f"the probe printed no report: {_show(result.stderr)}") from None
        if _SECRET in result.stdout:
            raise VectorFailure("the parent's secret reached the child")
        for key, value in expect["probe"].items():
            if not same_json(report.get(key), value):
                raise VectorFailure(
                    f"probe {key}: expected {_show(value)}, got {_show(report.get(key))}"
                )


def run_utcp(vector: Vector) -> None:
    """Call a UTCP template with real processes; refused calls must spawn nothing."""
    data = vector.data
    with tempfile.TemporaryDirectory() as tmp:
        replacements = _replacements(vector, tmp)
        document = _substitute(data["template"], replacements)
        args = _substitute(data.get("args", {}), replacements)
        variables = _substitute(data.get("variables", {}), replacements)
        expect = _substitute(data.get("expect"), replacements)
        os.environ["CH_VECTOR_SECRET"] = _SECRET
        executor = Executor()
        try:
            try:
                template = utcp.load(document)
                value = trio.run(
                    partial(utcp.call, template, args, variables=variables, executor=executor)
                )
            except Exception as exc:
                _check_refusal(vector, exc, executor)
                return
        finally:
            del os.environ["CH_VECTOR_SECRET"]
    if "error" in data:
        raise VectorFailure(f"expected {data['error']['type']}, the call returned {_show(value)}")
    if _SECRET in json.dumps(value):
        raise VectorFailure("the parent's secret reached the child")
    if "expect_subset" in data:
        subset = _substitute(data["expect_subset"], replacements)
        if not isinstance(value, dict) or not all(
            same_json(value.get(key), item) for key, item in subset.items()
        ):
            raise VectorFailure(f"expected at least {_show(subset)}, got {_show(value)}")
    elif not same_json(value, expect):
        raise VectorFailure(f"expected {_show(expect)}, got {_show(value)}")


def run_bash_tool(vector: Vector) -> None:
    """A bash tool's argument mode with real processes: the tool's ``run`` hands
    its argv and stdin to the probe; a refused call must spawn nothing."""
    from .plugins import parse_schema

    data = vector.data
    schema: dict[str, Any] = {
        "id": "vector",
        "version": "0",
        "args_mode": data["args_mode"],
        "tools": [
            {
                "type": "function",
                "function": {"name": "vector", "parameters": data.get("parameters", {})},
            }
        ],
        **{key: data[key] for key in ("positional", "options_allowed") if key in data},
    }
    with tempfile.TemporaryDirectory() as tmp:
        probe = _replacements(vector, tmp)["@probe"]
        script = os.path.join(tmp, "vector.bash")
        with open(script, "w") as out:
            out.write(f'shift\nexec "$AGENT_TOOL_PYTHON" {json.dumps(probe)} "$@"\n')
        executor = Executor()
        try:
            tool = parse_schema(json.dumps(schema), script)
            result = executor.run_sync(tool.prepare("run", data.get("args", {}), executor.policy))
        except Exception as exc:
            _check_refusal(vector, exc, executor)
            return
    if "error" in data:
        raise VectorFailure(f"expected {data['error']['type']}, the call ran")
    report = json.loads(str(result.stdout))
    argv = report["argv"]
    if not same_json(argv, data["expect_argv"]):
        raise VectorFailure(f"expected argv {_show(data['expect_argv'])}, got {_show(argv)}")
    if "expect_stdin" in data and report.get("stdin") != data["expect_stdin"]:
        raise VectorFailure(f"expected stdin {data['expect_stdin']!r}, got {report.get('stdin')!r}")


SUITES: dict[str, Callable[[Vector], None]] = {
    "tool-form": run_tool_form,
    "args": run_tool_form,
    "command-handle": run_command_handle,
    "utcp": run_utcp,
    "bash-tool": run_bash_tool,
}
for _error in (
    ArgsError,
    OptionLikeError,
    *(getattr(errors, name) for name in errors.__all__ if name != "Violation"),
):
    register_error_class(_error)
register_error_class(utcp.UtcpLoadError)


def run_vector(vector: Vector) -> VectorResult:
    runner = SUITES.get(vector.suite)
    if runner is None:
        return VectorResult(vector, False, f"no runner for suite {vector.suite!r}")
    try:
        runner(vector)
    except VectorFailure as exc:
        return VectorResult(vector, False, str(exc))
    return VectorResult(vector, True)


def _section_key(section: str) -> tuple[tuple[int, int | str], ...]:
    """Sort numbered sections numerically, appendices and other labels after them."""
    parts: list[tuple[int, int | str]] = []
    for piece in section.replace("A.", "99.").split("."):
        parts.append((0, int(piece)) if piece.isdigit() else (1, piece))
    return tuple(parts)


def format_table(results: list[VectorResult]) -> Iterator[str]:
    """Lines of the per-section pass table, then the failures."""
    rows: dict[tuple[str, str], list[VectorResult]] = {}
    for result in results:
        rows.setdefault((result.vector.suite, result.vector.section), []).append(result)
    yield f"{'suite':<16} {'section':<8} {'passed':>6} {'failed':>6} {'noted':>6}"
    for suite, section in sorted(rows, key=lambda k: (k[0], _section_key(k[1]))):
        group = rows[(suite, section)]
        passed = sum(r.passed for r in group)
        noted = sum(r.vector.note is not None for r in group)
        yield f"{suite:<16} {section:<8} {passed:>6} {len(group) - passed:>6} {noted:>6}"
    total = len(results)
    passed = sum(r.passed for r in results)
    noted = sum(r.vector.note is not None for r in results)
    yield f"{'total':<16} {'':<8} {passed:>6} {total - passed:>6} {noted:>6}"
    for result in results:
        if not result.passed:
            yield f"FAILED {result.vector.suite} {result.vector.id}: {result.detail}"
