"""The ``command-handle utcp`` subcommands: translate, run and list UTCP templates."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import _json
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    add_sandbox_flags,
    read_object,
    run_interruptibly,
    sandbox_settings,
)

__all__ = ["add_utcp_parser"]


def _source(options: argparse.Namespace) -> Any:
    return _picked(options)[0]


def _picked(options: argparse.Namespace) -> tuple[Any, str | None]:
    """The template or tool to run, and the manual it belongs to: a manual file's
    name (as the Toolbox names it), whose namespaced variables it reads."""
    from pathlib import Path

    from .. import utcp  # tree-sitter loads only for the utcp commands

    loaded = utcp.load(options.file)
    if isinstance(loaded, utcp.UtcpManual):
        if not options.tool:
            names = ", ".join(tool.name for tool in loaded.tools)
            raise utcp.UtcpLoadError(f"the file is a manual: pick a tool with --tool ({names})")
        return loaded.tool(options.tool), utcp.manual_name(Path(options.file).stem)
    return loaded, None


def _cmd_translate(options: argparse.Namespace) -> int:
    from .. import utcp  # tree-sitter loads only for the utcp commands

    source = _source(options)
    out: dict[str, Any] = {"plan": utcp.translate(source).to_json()}
    migrated = utcp.command_handle_for(source)
    if migrated is not None:
        out["command_handle"] = migrated["handle"]
        out["migration_notes"] = migrated["notes"]
    print(_json.stringify(out, indent=2))
    return EXIT_OK


def _variables(options: argparse.Namespace) -> dict[str, str]:
    """``--variables-file`` (an earlier file wins, as in UTCP), then ``--variables``,
    then each ``--variable``."""
    from .. import utcp
    from .options import variables as variable_flags

    variables: dict[str, str] = {}
    for path in options.variables_file or ():
        for key, text in utcp.dotenv_variables(path).items():
            variables.setdefault(key, text)
    given = read_object(options.variables, "--variables")
    variables.update({key: str(value) for key, value in given.items()})
    variables.update(variable_flags.given(options))
    return variables


def _add_variable_flags(parser: Any) -> None:
    parser.add_argument("--variables", help="UTCP variables for ${NAME} in env_vars (JSON object)")
    parser.add_argument(
        "--variable",
        action="append",
        metavar="NAME=VALUE",
        help="one UTCP variable; repeat for each (wins over --variables)",
    )
    parser.add_argument(
        "--variables-file",
        action="append",
        metavar="FILE",
        help="UTCP variables from a dotenv file (the others win over it)",
    )


def _cmd_run(options: argparse.Namespace) -> int:
    from .. import utcp  # tree-sitter loads only for the utcp commands
    from ..policy import Policy

    args = read_object(options.args, "--args")
    variables = _variables(options)
    policy = Policy(
        allow_environment=tuple(options.allow_env or ()),
        inherit_environment=tuple(options.inherit_env or ()),
        allow_utcp_options=options.allow_options,
        **sandbox_settings(options),
    )
    source, manual = _picked(options)
    if manual is not None:  # as `call` runs the manual's tool: its own variables first
        variables = utcp.namespaced_variables(manual, variables, [])
    result = run_interruptibly(lambda: utcp.run(source, args, variables=variables, policy=policy))
    if options.json:
        print(_json.stringify(result.to_json(), indent=2))
    else:
        value = utcp.utcp_value(result.output)
        print(value if isinstance(value, str) else _json.stringify(value, indent=2))
    if result.timed_out:
        own = utcp.translate(source).timeout  # the template's own lowers the Policy's
        limit = policy.timeout if own is None else min(policy.timeout, own)
        print(f"command-handle: the call timed out after {limit:g} s", file=sys.stderr)
    return EXIT_OK if result.ok else EXIT_FAILED


def _cmd_tools(options: argparse.Namespace) -> int:
    from .. import utcp  # tree-sitter loads only for the utcp commands

    loaded = utcp.load(options.file)
    if not isinstance(loaded, utcp.UtcpManual):
        template = loaded
        variables = _variables(options)
        loaded = run_interruptibly(lambda: utcp.discover(template, variables=variables))
    for tool in loaded.tools:
        print(f"{tool.name}: {tool.description}")
    for skipped in loaded.skipped:
        print(f"{skipped.name}: skipped, {skipped.reason}")
    return EXIT_OK


def add_utcp_parser(commands: Any) -> None:
    parser = commands.add_parser("utcp", help="run UTCP CLI templates without a shell")
    sub = parser.add_subparsers(dest="utcp_command", required=True)

    translate = sub.add_parser(
        "translate", help="print the plan, and the equivalent Command Handle when there is one"
    )
    translate.add_argument("file", help="a call template, tool, manual (with --tool) or provider")
    translate.add_argument("--tool", help="the tool to pick from a manual")
    translate.set_defaults(run=_cmd_translate)

    run = sub.add_parser("run", help="call a template and print what utcp-cli would return")
    run.add_argument("file")
    run.add_argument("--tool", help="the tool to pick from a manual")
    run.add_argument("--args", help="tool arguments: JSON text, @file, or @- for stdin")
    _add_variable_flags(run)
    run.add_argument(
        "--allow-env",
        action="append",
        metavar="PATTERN",
        help="let the template set this loader/interpreter variable (e.g. PYTHONPATH)",
    )
    run.add_argument(
        "--inherit-env",
        action="append",
        metavar="NAME",
        help="pass this host variable when the template asks for it (inherit_env_vars, "
        "default: utcp-cli's list); repeat for each",
    )
    run.add_argument(
        "--allow-options",
        action="store_true",
        help="let an argument begin a word with '-', '+' or '@', as utcp-cli does",
    )
    run.add_argument("--json", action="store_true", help="print every step's output and status")
    add_sandbox_flags(run)
    run.set_defaults(run=_cmd_run)

    tools = sub.add_parser(
        "tools", help="list a manual's tools (a discovery template is run to get its manual)"
    )
    tools.add_argument("file")
    _add_variable_flags(tools)  # for the discovery template's env_vars
    tools.set_defaults(run=_cmd_tools)
