"""The subcommands for handles and templates: eval, run, render, validate, schema, conformance."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from .. import _json
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_REFUSED,
    printable,
    read_json_argument,
    signals_stop,
)
from .options import add_toolbox_flags, policy_of

if TYPE_CHECKING:
    from ..executor import CommandResult, Executor, PreparedCall
    from ..handle import CommandHandle
    from ..policy import Policy

__all__ = ["add_handle_parsers"]

# Each subcommand imports the layers it uses when it runs, so that building
# the parser (every subcommand's start, ``--help``) imports none of them.


def _cmd_eval(options: argparse.Namespace) -> int:
    from .. import form

    args = read_json_argument(options.args, "--args") if options.args is not None else None
    extra: dict[str, object] = {}
    if options.include_base:
        extra["include_base"] = options.include_base
    template = form.load_template(options.template, **extra)
    result = template.evaluate(args)
    if result is form.UNDEFINED:
        print("command-handle: the template evaluated to the Undefined Value", file=sys.stderr)
        return EXIT_FAILED
    print(_json.stringify(printable(result), indent=2))
    return EXIT_OK


def _policy(options: argparse.Namespace) -> Policy:
    return policy_of(options)


def _call_args(options: argparse.Namespace) -> object:
    return read_json_argument(options.args, "--args") if options.args is not None else {}


async def _with_indicator(executor: Executor, handle: CommandHandle, args: object) -> CommandResult:
    """Run the call; on a terminal, show the elapsed time on stderr while it runs."""
    if not sys.stderr.isatty():
        return await executor.call(handle, args)
    result: list[CommandResult] = []
    started = anyio.current_time()
    async with anyio.create_task_group() as group:

        async def call() -> None:
            result.append(await executor.call(handle, args))
            group.cancel_scope.cancel()

        group.start_soon(call)
        await anyio.sleep(1.0)  # quick calls print nothing
        while True:
            print(
                f"\r{handle.name}: {anyio.current_time() - started:6.1f} s", end="", file=sys.stderr
            )
            sys.stderr.flush()
            await anyio.sleep(0.1)
    if anyio.current_time() - started >= 1.0:
        print("\r\x1b[K", end="", file=sys.stderr)
    return result[0]


def _cmd_run(options: argparse.Namespace) -> int:
    from ..executor import Executor
    from ..handle import CommandHandle
    from ._common import run_interruptibly

    handle = CommandHandle.load(options.handle)
    executor = Executor(_policy(options))
    args = _call_args(options)
    if options.expect_plan is not None:
        from ..executor import plan_hash

        # The very call that was hashed is the one run: no second rendering.
        prepared = handle.prepare(args, executor.policy)
        digest = plan_hash(executor.describe(prepared))
        if digest != options.expect_plan.strip().lower():
            print(
                f"command-handle: the plan changed: its hash is {digest}, not the expected "
                f"{options.expect_plan}; nothing ran",
                file=sys.stderr,
            )
            return EXIT_REFUSED
        result = run_interruptibly(lambda: _planned(executor, handle, prepared))
    else:
        result = run_interruptibly(lambda: _with_indicator(executor, handle, args))
    if options.raw:
        for stream, value in ((sys.stdout, result.stdout), (sys.stderr, result.stderr)):
            if isinstance(value, bytes):
                stream.buffer.write(value)
            elif value is not None:
                stream.write(value)
            stream.flush()
        if result.timed_out:
            return 124  # as timeout(1) says it
        if result.exit_code is None:
            return 128 + (result.signal or 0)
        return result.exit_code
    shown: dict[str, Any] = result.to_json()
    failed = not handle.succeeded(result)
    if handle.has_result_template:
        failed, shown["view"] = handle.outcome(result.to_json())
    print(_json.stringify(printable(shown), indent=2))
    return EXIT_FAILED if failed else EXIT_OK


async def _planned(
    executor: Executor, handle: CommandHandle, prepared: PreparedCall[CommandResult]
) -> CommandResult:
    result = await executor.run(prepared)
    if not handle.has_result_template:
        return result
    from dataclasses import replace

    return replace(result, view=handle.shape_result(result.to_json()))


def _cmd_render(options: argparse.Namespace) -> int:
    from ..executor import Executor, plan_hash
    from ..handle import CommandHandle

    policy = _policy(options)
    prepared = CommandHandle.load(options.handle).prepare(_call_args(options), policy)
    assert prepared.invocation is not None
    shown: dict[str, Any] = prepared.invocation.to_json()
    plan = Executor(policy).describe(prepared)
    shown["plan_hash"] = plan_hash(plan)
    shown["plan"] = plan
    print(_json.stringify(shown, indent=2))
    return EXIT_OK


def _cmd_validate(options: argparse.Namespace) -> int:
    """Each file named, and every tool file in each folder named: one line each,
    then its warnings (``--strict``: a warning fails the file). A folder with
    no tool is an error; its other files are listed, with why."""
    from ..errors import HandleError
    from ..handle import lint
    from ..toolbox import ToolLoadError, is_shortcut, load_tools, tool_files
    from .options import load_settings

    settings = load_settings(options)
    status = EXIT_OK
    names: dict[str, str] = {}
    for given in options.handles:
        others: list[str] = []
        try:
            files: list[str | Path] = [given] if is_shortcut(given) else []
            files += list(tool_files([given], others))
        except ToolLoadError as exc:
            print(str(exc), file=sys.stderr)
            status = EXIT_REFUSED
            continue
        found = 0
        failed = False
        for path in files:
            try:
                with signals_stop():  # a manual's discovery may be running
                    tools, notes = load_tools([path], in_folder=Path(given).is_dir(), **settings)
            except HandleError as exc:
                print(
                    str(exc) if isinstance(exc, ToolLoadError) else f"{path}: {exc}",
                    file=sys.stderr,
                )
                status = EXIT_REFUSED
                failed = True
                continue
            found += len(tools)
            clashes = [t.name for t in tools if t.name in names]
            for name in clashes:
                print(
                    f"{path}: the tool name {name!r} is also used by {names[name]}", file=sys.stderr
                )
                status = EXIT_REFUSED
            names.update({t.name: str(path) for t in tools if t.name not in names})
            warnings = [
                (tool.name, warning)
                for tool in tools
                if tool.handle is not None and tool.bash_tool is None
                for warning in lint(tool.handle)
            ]
            if not clashes and (tools or not notes):  # a file that is no tool: its note
                listed = ", ".join(t.name for t in tools) or "no CLI tools"
                verdict = "ok" if not warnings else f"ok with {len(warnings)} warning(s)"
                if warnings and options.strict:
                    verdict = f"failed: {len(warnings)} warning(s) with --strict"
                print(f"{path}: {verdict} ({listed})")
            for tool_name, warning in warnings:
                print(f"{path}: warning: {tool_name}: {warning}", file=sys.stderr)
            if warnings and options.strict:
                status = EXIT_REFUSED
            for note in notes:
                print(f"skipped: {note}", file=sys.stderr)
        for note in others:
            print(f"skipped: {note}", file=sys.stderr)
        if Path(given).is_dir() and not found and not failed:
            print(f"{given}: no tool in this folder", file=sys.stderr)
            status = EXIT_REFUSED
    return status


def _cmd_schema(options: argparse.Namespace) -> int:
    from ..handle import CommandHandle

    print(_json.stringify(CommandHandle.model_json_schema(), indent=2))
    return EXIT_OK


def _cmd_conformance(options: argparse.Namespace) -> int:
    from ..conformance import default_vectors_dir, format_table, load_vectors, run_vector

    directory = Path(options.vectors) if options.vectors else default_vectors_dir()
    if directory is None or not directory.is_dir():
        print("command-handle: no vectors directory; pass --vectors DIR", file=sys.stderr)
        return EXIT_REFUSED
    vectors = load_vectors(directory)
    if options.suite:
        vectors = [v for v in vectors if v.suite == options.suite]
    results = [run_vector(v) for v in vectors]
    for line in format_table(results):
        print(line)
    return EXIT_OK if all(r.passed for r in results) else EXIT_FAILED


def _cmd_sandbox_check(options: argparse.Namespace) -> int:
    from ..executor import sandbox_support

    report = sandbox_support()
    print(_json.stringify(report, indent=2))
    return EXIT_OK if report["filesystem"] else EXIT_FAILED


def add_handle_parsers(commands: Any) -> None:
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
        "--raw",
        action="store_true",
        help="pass the program's stdout and stderr through; exit with its code",
    )
    run.add_argument(
        "--expect-plan",
        metavar="HASH",
        help="run only if the rendered plan still has this hash (from render); else exit 2",
    )
    add_toolbox_flags(run, toolbox=False)
    run.set_defaults(run=_cmd_run)

    render = commands.add_parser(
        "render", help="show what a handle would run, its plan and plan hash, without running it"
    )
    render.add_argument("handle")
    render.add_argument("--args", help="the arguments: JSON text, or @file, or @- for stdin")
    add_toolbox_flags(render, toolbox=False)
    render.set_defaults(run=_cmd_render)

    validate = commands.add_parser(
        "validate", help="check Command Handles and UTCP documents, in files and folders"
    )
    validate.add_argument("handles", nargs="+", metavar="PATH")
    add_toolbox_flags(validate, running=False)
    validate.add_argument(
        "--strict", action="store_true", help="a warning fails the file (exit code 2)"
    )
    validate.set_defaults(run=_cmd_validate)

    schema = commands.add_parser(
        "schema", help="print the JSON Schema of the Command Handle format"
    )
    schema.set_defaults(run=_cmd_schema)

    conformance = commands.add_parser("conformance", help="run the conformance vectors")
    conformance.add_argument("--vectors", help="vectors directory (default: spec_tests/vectors)")
    conformance.add_argument("--suite", help="run only this suite")
    conformance.set_defaults(run=_cmd_conformance)

    sandbox = commands.add_parser("sandbox", help="the sandbox on this machine")
    sandbox_commands = sandbox.add_subparsers(dest="sandbox_command", required=True)
    check = sandbox_commands.add_parser(
        "check", help="print what this machine can enforce, and why not (exit 1 if nothing)"
    )
    check.set_defaults(run=_cmd_sandbox_check)
