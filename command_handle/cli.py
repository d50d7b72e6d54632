"""The ``command-handle`` command line."""

from __future__ import annotations

import argparse
import base64
import sys
from collections.abc import Sequence
from pathlib import Path

import trio

from . import _json, form
from ._utcp_cli import add_utcp_parser
from .conformance import default_vectors_dir, format_table, load_vectors, run_vector
from .errors import HandleError
from .executor import CommandResult, Executor
from .handle import CommandHandle
from .policy import Policy

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


def _policy(options: argparse.Namespace) -> Policy:
    inherit = tuple(options.inherit_env or ())
    return Policy(inherit_environment=inherit) if inherit else Policy()


def _load_handle(path: str) -> CommandHandle:
    return CommandHandle.load(path)


def _call_args(options: argparse.Namespace) -> object:
    return _read_json_argument(options.args, "--args") if options.args is not None else {}


def _report(exc: HandleError) -> int:
    print(f"command-handle: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 2


async def _run_with_indicator(
    executor: Executor, handle: CommandHandle, args: object
) -> CommandResult:
    """Run the call; on a terminal, show the elapsed time on stderr while it runs."""
    if not sys.stderr.isatty():
        return await executor.call(handle, args)
    result: list[CommandResult] = []

    async def call() -> None:
        result.append(await executor.call(handle, args))
        nursery.cancel_scope.cancel()

    started = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(call)
        with trio.CancelScope() as ticker:
            await trio.sleep(1.0)  # quick calls print nothing
            while not ticker.cancel_called:
                print(
                    f"\r{handle.name}: {trio.current_time() - started:6.1f} s",
                    end="",
                    file=sys.stderr,
                )
                sys.stderr.flush()
                await trio.sleep(0.1)
    if trio.current_time() - started >= 1.0:
        print("\r\x1b[K", end="", file=sys.stderr)
    return result[0]


def _cmd_run(options: argparse.Namespace) -> int:
    try:
        handle = _load_handle(options.handle)
        executor = Executor(_policy(options))
        result = trio.run(_run_with_indicator, executor, handle, _call_args(options))
    except HandleError as exc:
        return _report(exc)
    if options.raw:
        out = result.stdout
        if isinstance(out, bytes):
            sys.stdout.buffer.write(out)
        elif out is not None:
            sys.stdout.write(out)
        if result.exit_code is None:
            return 128 + (result.signal or 0)
        return result.exit_code
    print(_json.stringify(_printable(result.to_json() | {"view": result.view}), indent=2))
    return 0


def _cmd_render(options: argparse.Namespace) -> int:
    try:
        invocation = _load_handle(options.handle).render(_call_args(options), _policy(options))
    except HandleError as exc:
        return _report(exc)
    print(_json.stringify(invocation.to_json(), indent=2))
    return 0


def _cmd_validate(options: argparse.Namespace) -> int:
    status = 0
    for path in options.handles:
        try:
            handle = _load_handle(path)
        except HandleError as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            status = 2
        else:
            print(f"{path}: ok ({handle.name})")
    return status


def _cmd_schema(options: argparse.Namespace) -> int:
    print(_json.stringify(CommandHandle.model_json_schema(), indent=2))
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

    run = commands.add_parser("run", help="run a Command Handle and print the result as JSON")
    run.add_argument("handle", help="a Command Handle file (.json, .yaml or .yml)")
    run.add_argument("--args", help="the arguments: JSON text, or @file, or @- for stdin")
    run.add_argument(
        "--raw", action="store_true", help="print stdout only; exit with the child's code"
    )
    run.add_argument(
        "--inherit-env",
        action="append",
        metavar="NAME",
        help="pass this host variable to the child",
    )
    run.set_defaults(run=_cmd_run)

    render = commands.add_parser("render", help="show what a handle would run, without running it")
    render.add_argument("handle")
    render.add_argument("--args", help="the arguments: JSON text, or @file, or @- for stdin")
    render.add_argument("--inherit-env", action="append", metavar="NAME")
    render.set_defaults(run=_cmd_render)

    validate = commands.add_parser("validate", help="check Command Handle files")
    validate.add_argument("handles", nargs="+")
    validate.set_defaults(run=_cmd_validate)

    schema = commands.add_parser(
        "schema", help="print the JSON Schema of the Command Handle format"
    )
    schema.set_defaults(run=_cmd_schema)

    conformance = commands.add_parser("conformance", help="run the conformance vectors")
    conformance.add_argument("--vectors", help="vectors directory (default: spec_tests/vectors)")
    conformance.add_argument("--suite", help="run only this suite")
    conformance.set_defaults(run=_cmd_conformance)

    add_utcp_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    options = build_parser().parse_args(argv)
    code: int = options.run(options)
    return code


if __name__ == "__main__":
    sys.exit(main())
