"""The ``command-handle`` command line."""

from __future__ import annotations

import argparse
import base64
import sys
from collections.abc import Sequence
from pathlib import Path

from . import _json, form
from .conformance import default_vectors_dir, format_table, load_vectors, run_vector

__all__ = ["main"]


def _read_json_argument(text: str, what: str) -> object:
    """``--args`` takes JSON text, or ``@path`` to read it from a file (``@-``: stdin)."""
    if text.startswith("@"):
        name = text[1:]
        data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    else:
        data = text.encode()
    try:
        return _json.loads(data)
    except _json.JSONDecodeError as exc:
        raise SystemExit(f"command-handle: {what} is not valid JSON: {exc.message}") from None


def _printable(value: object) -> object:
    """Binary Values have no JSON form; show them as base64 text for the terminal."""
    if isinstance(value, bytes):
        return {"$binary": base64.b64encode(value).decode()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    if isinstance(value, dict):
        return {k: _printable(v) for k, v in value.items()}
    return value


def _cmd_eval(options: argparse.Namespace) -> int:
    args = _read_json_argument(options.args, "--args") if options.args is not None else None
    extra: dict[str, object] = {}
    if options.include_base:
        extra["include_base"] = options.include_base
    try:
        template = form.load_template(options.template, **extra)
        result = template.evaluate(args)
    except form.FormError as exc:
        print(f"command-handle: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if result is form.UNDEFINED:
        print("command-handle: the template evaluated to the Undefined Value", file=sys.stderr)
        return 1
    print(_json.stringify(_printable(result), indent=2))
    return 0


def _cmd_conformance(options: argparse.Namespace) -> int:
    directory = Path(options.vectors) if options.vectors else default_vectors_dir()
    if directory is None or not directory.is_dir():
        print("command-handle: no vectors directory; pass --vectors DIR", file=sys.stderr)
        return 2
    vectors = load_vectors(directory)
    if options.suite:
        vectors = [v for v in vectors if v.suite == options.suite]
    results = [run_vector(v) for v in vectors]
    for line in format_table(results):
        print(line)
    return 0 if all(r.passed for r in results) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="command-handle",
        description="Run command-line programs for AI agents safely.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    evaluate = commands.add_parser("eval", help="evaluate a Tool Form template")
    evaluate.add_argument("template", help="a JSON template file")
    evaluate.add_argument("--args", help="Template Arguments: JSON text, or @file, or @- for stdin")
    evaluate.add_argument(
        "--include-base", help="directory $include may read (default: the template's directory)"
    )
    evaluate.set_defaults(run=_cmd_eval)

    conformance = commands.add_parser("conformance", help="run the conformance vectors")
    conformance.add_argument("--vectors", help="vectors directory (default: spec_tests/vectors)")
    conformance.add_argument("--suite", help="run only this suite")
    conformance.set_defaults(run=_cmd_conformance)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    options = build_parser().parse_args(argv)
    code: int = options.run(options)
    return code


if __name__ == "__main__":
    sys.exit(main())
