"""argv[0] is the program's name as written (as a shell passes it); the file
executed is the resolved path. UTCP's missing optional arguments and 0.x
``param_style``, decided against utcp-cli."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

import pytest
import trio

from command_handle import CommandHandle, Executor, Policy, utcp
from command_handle.errors import ArgumentsError, HandleError, OptionArgumentError

from .processes import PROBE

# sh prints the argv[0] it was given: "$0" under -c is the word after the script.
SHOW_ARGV0 = 'printf "%s" "$0"'


def handle(command: str) -> CommandHandle:
    return CommandHandle.from_dict(
        {
            "name": "argv0",
            "handle": "command",
            "description": "print argv[0]",
            "parameters": {"type": "object", "properties": {}},
            "command": command,
            "arguments": ["-c", SHOW_ARGV0],
        }
    )


def test_a_handle_runs_the_resolved_path_with_the_written_name_as_argv0() -> None:
    executor = Executor(Policy())
    prepared = handle("sh").prepare({}, executor.policy)
    assert prepared.invocation is not None and prepared.invocation.argv[0] == shutil.which("sh")
    assert executor.run_sync(prepared).stdout == "sh"
    plan = executor.describe(prepared)
    assert plan["argv0"] == "sh" and plan["program"] == shutil.which("sh")
    # written as a path, the path is argv[0], as in a shell
    path = shutil.which("sh")
    assert path is not None
    assert executor.run_sync(handle(path).prepare({}, executor.policy)).stdout == path


@pytest.mark.parametrize("terminal", [False, True])
def test_a_process_that_outlives_its_call_gets_the_written_name_too(terminal: bool) -> None:
    """Processes are launched by their own path through the executor: the same
    argv[0] rule holds there, on a pipe and on a terminal."""
    from command_handle.call import Terminal

    executor = Executor(Policy())
    prepared = handle("sh").prepare({}, executor.policy)
    process = executor.start_sync(prepared, terminal=Terminal() if terminal else None)
    try:
        result = process.wait_sync(timeout=20)
        assert result is not None and result.exit_code == 0
        assert str(process.read_sync().stdout).strip() == "sh"
    finally:
        process.stop_sync()
        executor.forget(process)


def test_a_program_error_names_the_program_as_written() -> None:
    ls = CommandHandle.from_dict(
        {
            "name": "ls",
            "handle": "command",
            "description": "ls",
            "parameters": {"type": "object", "properties": {}},
            "command": "ls",
            "arguments": ["--no-such-option"],
        }
    )
    result = Executor(Policy()).run_sync(ls.prepare({}))
    assert str(result.stderr).startswith("ls: ")


def test_legacy_providers_and_plans_pass_the_written_name_too() -> None:
    legacy = utcp.load(
        {"name": "p", "provider_type": "cli", "command_name": f"sh -c '{SHOW_ARGV0}'"}
    )
    assert utcp.call_sync(legacy, {}) == "sh"
    plan = utcp.load(
        {"call_template_type": "cli", "commands": [{"command": f"sh -c '{SHOW_ARGV0}'"}]}
    )
    assert utcp.call_sync(plan, {}) == "sh"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_under_bubblewrap_argv0_is_the_path(tmp_path: Any) -> None:
    # bwrap (0.8) execs its command by the path it is given, with no way to set
    # argv[0] apart: the documented exception.
    policy = Policy(sandbox="read-only", sandbox_backend="bubblewrap", workspace=str(tmp_path))
    result = Executor(policy).run_sync(handle("sh").prepare({}, policy))
    assert result.stdout == shutil.which("sh")


def test_an_allowlisted_file_runs_only_under_an_allowed_name(tmp_path: Any) -> None:
    # A multi-call program does what argv[0] names (busybox, coreutils built as
    # one file; bash under the name sh). A link of another name to an allowed
    # file is the same file but not the same program: refused, as is a bare
    # name that resolves to it.
    sh = shutil.which("sh")
    assert sh is not None
    (tmp_path / "allowed").symlink_to(sh)
    (tmp_path / "other").symlink_to(sh)
    policy = Policy(allowed_commands=frozenset([str(tmp_path / "allowed")]))
    executor = Executor(policy)
    allowed = handle(str(tmp_path / "allowed")).prepare({}, policy)
    assert executor.run_sync(allowed).stdout == str(tmp_path / "allowed")
    for written in (str(tmp_path / "other"), "sh"):
        with pytest.raises(HandleError, match="the policy does not allow"):
            handle(written).prepare({}, policy)
    template = {"call_template_type": "cli", "commands": [{"command": f"{tmp_path}/other -c :"}]}
    with pytest.raises(HandleError, match="the policy does not allow"):
        utcp.call_sync(template, {}, policy=policy)
    # the file's own name, and an allowed entry's, are its names
    real = Policy(allowed_commands=frozenset([os.path.realpath(sh)]))
    assert Executor(real).run_sync(handle(os.path.realpath(sh)).prepare({}, real)).stdout
    file_name = os.path.basename(os.path.realpath(sh))
    (tmp_path / file_name).symlink_to(sh)
    named = Policy(allowed_commands=frozenset([file_name]), match_command_names=True)
    assert Executor(named).run_sync(handle(str(tmp_path / file_name)).prepare({}, named)).stdout
    with pytest.raises(HandleError, match="the policy does not allow"):
        handle(str(tmp_path / "other")).prepare({}, named)


# -- MISSING_ARG_<name> ---------------------------------------------------------------

OPTIONAL = {
    "name": "wrapper",
    "description": "a wrapper with an optional flag",
    "inputs": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "flag": {"type": "string"}},
        "required": ["path"],
    },
    "tool_call_template": {
        "call_template_type": "cli",
        "commands": [{"command": "echo run UTCP_ARG_flag_UTCP_END UTCP_ARG_path_UTCP_END"}],
    },
}


def test_a_missing_optional_argument_is_the_marker_utcp_cli_substitutes() -> None:
    tool = utcp.load(OPTIONAL)
    assert utcp.call_sync(tool, {"path": "a.txt"}) == "run MISSING_ARG_flag a.txt"
    with pytest.raises(ArgumentsError, match="'path' is a required property"):
        utcp.call_sync(tool, {"flag": "x"})
    # a bare template declares nothing optional: every placeholder is needed
    bare = utcp.load(OPTIONAL["tool_call_template"])  # type: ignore[arg-type]
    with pytest.raises(ArgumentsError, match="missing argument 'flag'"):
        utcp.call_sync(bare, {"path": "a.txt"})


def test_a_value_that_a_marker_stripping_wrapper_turns_into_an_option_is_refused() -> None:
    # Wrappers strip exactly MISSING_ARG_<name> to drop a flag; a model value of
    # the marker followed by an option would reach the program as that option.
    tool = utcp.load(OPTIONAL)
    for value in ("MISSING_ARG_flag--upload-pack=x", "MISSING_ARG_flag+cmd", "MISSING_ARG_flag@f"):
        with pytest.raises(OptionArgumentError, match=r"'MISSING_ARG_flag[-+@]'") as refused:
            utcp.call_sync(tool, {"path": "a.txt", "flag": value})
        assert refused.value.pointer == "/flag"
    # at run time too: the marker and the option through a variable
    through = {
        **OPTIONAL,
        "tool_call_template": {
            "call_template_type": "cli",
            "commands": [{"command": "X=UTCP_ARG_flag_UTCP_END; echo $X UTCP_ARG_path_UTCP_END"}],
        },
    }
    with pytest.raises(OptionArgumentError):
        utcp.call_sync(utcp.load(through), {"path": "a", "flag": "MISSING_ARG_flag-n"})
    # the marker alone, or followed by an operand, is a value
    for value in ("MISSING_ARG_flag", "MISSING_ARG_flag-", "MISSING_ARG_flagx"):
        assert utcp.call_sync(tool, {"path": "a.txt", "flag": value}) == f"run {value} a.txt"


def test_the_marker_matches_utcp_cli() -> None:
    pytest.importorskip("utcp_cli", reason="the peer (pip install '.[bench]')")
    import asyncio
    import importlib
    import json
    import tempfile

    their_client: Any = importlib.import_module("utcp.utcp_client").UtcpClient

    with tempfile.TemporaryDirectory() as directory:
        with open(f"{directory}/m.json", "w") as stream:
            json.dump({"manual_version": "1", "utcp_version": "1.0.2", "tools": [OPTIONAL]}, stream)
        config = {
            "manual_call_templates": [
                {
                    "name": "m",
                    "call_template_type": "cli",
                    "commands": [{"command": "cat m.json"}],
                    "working_dir": directory,
                }
            ]
        }

        async def both() -> tuple[object, object]:
            theirs = await their_client.create(config=config)
            ours = await utcp.UtcpClient.create(config=config)
            args = {"path": "a.txt"}
            return await theirs.call_tool("m.wrapper", args), await ours.call_tool(
                "m.wrapper", args
            )

        theirs, ours = asyncio.run(both())
    assert ours == theirs == "run MISSING_ARG_flag a.txt"


# -- the template's own timeout is the figure reported ---------------------------------


def test_a_template_timeout_is_the_figure_reported() -> None:
    template = utcp.load(
        {
            "call_template_type": "cli",
            "commands": [{"command": f"{sys.executable} -c 'import time; time.sleep(30)'"}],
            "timeout": 500,
        }
    )
    prepared = utcp.prepare(template, {})
    assert prepared.timeout == 0.5
    with pytest.raises(TimeoutError, match=r"its 0\.5 s timeout"):
        trio.run(lambda: utcp.call(template, {}))


def test_a_plan_refusal_is_a_handle_error() -> None:
    # (kept apart from the argv[0] tests: a computed program is refused before anything runs)
    with pytest.raises(HandleError):
        utcp.translate(
            {"call_template_type": "cli", "commands": [{"command": "UTCP_ARG_p_UTCP_END"}]}
        )


# -- 0.x param_style -----------------------------------------------------------------


def legacy_tool(style: str | None, properties: tuple[str, ...] = ("input", "format")) -> Any:
    provider: dict[str, Any] = {
        "name": "converter",
        "provider_type": "cli",
        "command_name": f"{sys.executable} {PROBE}",
        "output_format": "json",
    }
    if style is not None:
        provider["param_style"] = style
    return utcp.load(
        {
            "name": "convert",
            "description": "convert a file",
            "inputs": {
                "type": "object",
                "properties": {name: {"type": "string"} for name in properties},
            },
            "tool_provider": provider,
        }
    )


@pytest.mark.parametrize(
    ("style", "argv", "stdin"),
    [
        (None, ["--format", "json", "--input", "a.txt"], None),
        ("named", ["--format", "json", "--input", "a.txt"], None),
        ("positional", ["a.txt", "json"], None),
        ("json", ['{"format":"json","input":"a.txt"}'], None),
        ("json_stdin", [], '{"format":"json","input":"a.txt"}'),
    ],
)
def test_param_style_as_utcp_0_1_documents_it(
    style: str | None, argv: list[str], stdin: str | None
) -> None:
    report = utcp.call_sync(legacy_tool(style), {"format": "json", "input": "a.txt"})
    assert isinstance(report, dict)
    assert report["argv"] == argv and report["stdin"] == stdin


def test_positional_arguments_refuse_a_gap_and_options() -> None:
    with pytest.raises(ArgumentsError, match="`input` is missing"):
        utcp.call_sync(legacy_tool("positional"), {"format": "json"})
    assert utcp.call_sync(legacy_tool("positional"), {"input": "a"})["argv"] == ["a"]  # type: ignore[index]
    with pytest.raises(ArgumentsError, match="read it as an option"):
        utcp.call_sync(legacy_tool("positional"), {"input": "--exec=x"})
    # inside JSON a leading "-" is data
    assert utcp.call_sync(legacy_tool("json"), {"input": "-x"})["argv"] == ['{"input":"-x"}']  # type: ignore[index]


def test_utcp_run_reports_the_template_timeout(tmp_path: Any) -> None:
    import json
    import subprocess

    template = tmp_path / "slow.json"
    sleep = f"{sys.executable} -c 'import time; time.sleep(30)'"
    template.write_text(
        json.dumps({"call_template_type": "cli", "commands": [{"command": sleep}], "timeout": 500})
    )
    done = subprocess.run(
        [sys.executable, "-m", "command_handle", "utcp", "run", str(template)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "timed out after 0.5 s" in done.stderr
