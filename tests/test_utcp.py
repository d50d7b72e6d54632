"""The UTCP layer's API: loading, translation refusals, values, environment,
timeouts and cancellation, migration and the command line. Real processes."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import (
    ArgumentsError,
    CommandError,
    CommandHandle,
    DirectoryError,
    EnvironmentVariableError,
    Executor,
    Policy,
    utcp,
)
from command_handle.cli import main
from command_handle.errors import TranslationError

ROOT = Path(__file__).resolve().parent.parent
PROBE = str(ROOT / "fixtures" / "programs" / "probe.py")
PY = sys.executable


def template(*commands: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": "t",
        "call_template_type": "cli",
        "commands": [{"command": c} for c in commands],
        **fields,
    }


def probe(words: str = "", **fields: Any) -> dict[str, Any]:
    return template(f"{PY} {PROBE} {words}", **fields)


def call(source: Any, args: dict[str, Any] | None = None, **kw: Any) -> Any:
    return trio.run(lambda: utcp.call(source, args or {}, **kw))


# -- translation refusals: the construct, the step and the column ----------------

REFUSED = [
    ("for i in 1 2; do echo $i; done", "a for loop", 1),
    ("echo ok; if true; then echo x; fi", "an if statement", 10),
    ("while true; do :; done", "a while loop", 1),
    ("case x in x) echo;; esac", "a case statement", 1),
    ("f() { echo; }", "a function definition", 1),
    ("(cd /tmp)", "a subshell ( ... )", 1),
    ("{ echo a; }", "a command group { ... }", 1),
    ("cat <<EOF\nx\nEOF", "a here-document", 5),
    ("cat <<< word", "a here-string", 5),
    ("diff <(ls) <(ls)", "process substitution", 6),
    ("echo $((1 + 2))", "arithmetic expansion $(( ))", 6),
    ("eval echo x", "eval", 1),
    ("source ./env.sh", "source", 1),
    (". ./env.sh", ".", 1),
    ("echo x & wait", "background job", 8),
    ("echo ${X%suffix}", "parameter expansion", 6),
    ("echo $1", "special parameter", 6),
    ("echo {a,b}", "brace expansion", 6),
    ("echo $'a\\tb'", "ANSI-C quoting $'...'", 6),
    ("UTCP_ARG_tool_UTCP_END --version", "computed program", 1),
    ("echo a; $CMD_0_OUTPUT x", "computed program", 9),
    ("echo ok\necho $UTCP_ARG_x_UTCP_END", "placeholder in a name", 6),
    ("echo `echo \\`x\\``", "backtick escapes", 6),
    ("echo 'unterminated", "syntax", 6),
    ("ls 3>/dev/null", "redirection", 4),
    ("echo x |", "syntax", 9),
    ("declare -a x", "declare", 1),
]


@pytest.mark.parametrize(("command", "construct", "column"), REFUSED)
def test_unsupported_syntax_is_refused_with_its_location(
    command: str, construct: str, column: int
) -> None:
    executor = Executor()
    source = template("echo first", command)
    with pytest.raises(TranslationError) as refused:
        trio.run(lambda: utcp.call(source, {}, executor=executor))
    error = refused.value
    assert (error.step, error.construct) == (1, construct)
    if "\n" not in command[: error.offset]:
        assert error.column == column
    assert error.pointer == "/commands/1/command"
    assert str(error).startswith("step 1, ")
    assert executor.spawned == 0  # nothing ran, not even step 0


def test_a_forward_output_reference_is_refused() -> None:
    with pytest.raises(TranslationError, match=r"CMD_1_OUTPUT is the output of step 1"):
        utcp.translate(template("echo $CMD_1_OUTPUT", "echo b"))


def test_multiline_commands_report_the_line() -> None:
    with pytest.raises(TranslationError) as refused:
        utcp.translate(template("echo a\necho b\nfor x in y; do :; done"))
    assert (refused.value.line, refused.value.column) == (3, 1)
    assert str(refused.value).startswith("step 0, line 3, column 1: a for loop")


# -- loading ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "pointer", "fragment"),
    [
        ({"call_template_type": "cli"}, "/commands", "missing field 'commands'"),
        ({"call_template_type": "cli", "commands": []}, "/commands", "at least 1"),
        ({"call_template_type": "http", "commands": []}, "/call_template_type", "must be 'cli'"),
        (template("ls", comands=[]), "/comands", "unknown field 'comands'"),
        (
            {"call_template_type": "cli", "commands": [{"cmd": "ls"}]},
            "/commands/0/command",
            "/commands/0/cmd: unknown field 'cmd'",
        ),
        (template("ls", env_vars={"A": 1}), "/env_vars/A", "string"),
        ({"tools": {}}, "/tools", "array"),
        (
            {"tools": [{"name": "x", "inputs": {"type": 5}, "tool_call_template": template("ls")}]},
            "/tools/0/inputs",
            "JSON Schema",
        ),
        ({"provider_type": "cli"}, "/command_name", "missing field 'command_name'"),
        ({"something": 1}, "", "not a UTCP document"),
    ],
)
def test_load_errors_name_the_field(document: dict[str, Any], pointer: str, fragment: str) -> None:
    with pytest.raises(utcp.UtcpLoadError) as refused:
        utcp.load(document)
    assert refused.value.pointer == pointer
    assert fragment in str(refused.value)


def test_load_reads_json_and_yaml_files(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("call_template_type: cli\ncommands:\n  - command: echo hi\n")
    (tmp_path / "t.json").write_text(json.dumps(template("echo hi")))
    assert call(tmp_path / "t.yaml") == call(str(tmp_path / "t.json")) == "hi"
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(utcp.UtcpLoadError, match="not valid JSON"):
        utcp.load(tmp_path / "bad.json")


# -- arguments ---------------------------------------------------------------------


def test_a_missing_or_null_argument_is_refused_before_anything_runs() -> None:
    executor = Executor()
    source = template("echo a", "echo UTCP_ARG_first_UTCP_END UTCP_ARG_second_UTCP_END")
    with pytest.raises(ArgumentsError) as refused:
        trio.run(lambda: utcp.call(source, {"first": None}, executor=executor))
    assert [v.pointer for v in refused.value.violations] == ["/first", "/second"]
    assert executor.spawned == 0


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("text", "text"),
        (5, "5"),
        (1.5, "1.5"),
        (1.0, "1.0"),
        (True, "True"),
        (False, "False"),
        ([1, "a", None], '[1,"a",null]'),
        ({"k": [1, 2], "é": "x"}, '{"k":[1,2],"é":"x"}'),
    ],
)
def test_values_are_rendered_as_utcp_cli_renders_them(value: object, text: str) -> None:
    assert call(probe("UTCP_ARG_v_UTCP_END"), {"v": value})["argv"] == [text]


def test_a_nul_in_an_argument_is_refused() -> None:
    with pytest.raises(ArgumentsError, match="NUL"):
        call(probe("UTCP_ARG_v_UTCP_END"), {"v": "a\x00b"})


# -- environment -------------------------------------------------------------------


def test_default_inheritance_is_the_utcp_allowlist_within_the_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "s3cret")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("TZ", "UTC")
    # The template asks for utcp-cli's list; the policy passes what it allows.
    assert call(probe())["env"] == {"PWD": os.getcwd()}
    policy = Policy(inherit_environment=("LANG", "SECRET_TOKEN"))
    env = call(probe(), policy=policy)["env"]
    assert env == {"LANG": "C.UTF-8", "PWD": os.getcwd()}  # SECRET_TOKEN: not asked for


def test_a_template_cannot_inherit_what_the_policy_withholds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Red-team finding 9: inherit_env_vars named SECRET and LD_PRELOAD."""
    monkeypatch.setenv("SECRET", "canary-secret-9")
    monkeypatch.setenv("LD_PRELOAD", "/nonexistent/evil.so")
    source = probe(inherit_env_vars=["SECRET", "LD_PRELOAD"])
    assert call(source)["env"] == {"PWD": os.getcwd()}
    policy = Policy(inherit_environment=("SECRET", "LD_PRELOAD"))
    assert call(source, policy=policy)["env"] == {"SECRET": "canary-secret-9", "PWD": os.getcwd()}


def test_strict_inheritance_passes_only_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "s3cret")
    env = call(probe(inherit_env_vars=[], env_vars={"ONLY": "this"}))["env"]
    assert env == {"ONLY": "this", "PWD": os.getcwd()}


def test_a_list_inherits_exactly_those_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PICKED", "yes")
    monkeypatch.setenv("OTHER", "no")
    policy = Policy(inherit_environment=("PICKED", "OTHER", "UNSET_NAME"))
    source = probe(inherit_env_vars=["PICKED", "UNSET_NAME"])
    assert call(source, policy=policy)["env"] == {"PICKED": "yes", "PWD": os.getcwd()}
    source = probe(inherit_env_vars=["PICKED", "UNSET_NAME"], env_vars={"PICKED": "override"})
    env = call(source, policy=policy)["env"]
    assert env == {"PICKED": "override", "PWD": os.getcwd()}


def test_variables_come_from_the_caller_never_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOST_SECRET", "from-host")
    source = probe(env_vars={"KEY": "Bearer ${TOKEN}", "LEAK": "$HOST_SECRET"})
    executor = Executor()
    with pytest.raises(EnvironmentVariableError) as refused:
        trio.run(lambda: utcp.call(source, {}, variables={"TOKEN": "t"}, executor=executor))
    assert refused.value.pointer == "/env_vars/LEAK"
    assert "HOST_SECRET" in str(refused.value) and "from-host" not in str(refused.value)
    assert executor.spawned == 0
    source = probe(env_vars={"KEY": "Bearer ${TOKEN}"})
    assert call(source, variables={"TOKEN": "t-1"})["env"]["KEY"] == "Bearer t-1"


@pytest.mark.parametrize(
    "source",
    [
        probe(env_vars={"LD_PRELOAD": "/tmp/x.so"}),
        template("export LD_PRELOAD=/tmp/x.so", f"{PY} {PROBE}"),
        template(f"BASH_ENV=/tmp/x {PY} {PROBE}"),
    ],
    ids=["env_vars", "export", "prefix"],
)
def test_loader_variables_are_refused_unless_the_policy_allows(source: dict[str, Any]) -> None:
    executor = Executor()
    with pytest.raises(EnvironmentVariableError, match=r"Policy\.allow_environment"):
        trio.run(lambda: utcp.call(source, {}, executor=executor))
    assert executor.spawned == 0


def test_cd_and_export_persist_into_later_steps(tmp_path: Path) -> None:
    (tmp_path / "inner").mkdir()
    source = template(
        f"cd {tmp_path}/inner && export STEP_VAR=kept",
        f"{PY} {PROBE}",
        inherit_env_vars=[],
    )
    report = call(source)
    assert report["cwd"] == str(tmp_path / "inner")
    assert report["env"]["STEP_VAR"] == "kept"
    assert report["env"]["OLDPWD"] == os.getcwd()


def test_step_outputs_are_shell_variables_not_environment() -> None:
    report = call(template("echo out", f'{PY} {PROBE} "$CMD_0_OUTPUT"'))
    assert report["argv"] == ["out"]
    assert "CMD_0_OUTPUT" not in report["env"]


def test_the_working_directory_is_checked_first(tmp_path: Path) -> None:
    executor = Executor()
    source = template("echo x", working_dir=str(tmp_path / "missing"))
    with pytest.raises(DirectoryError):
        trio.run(lambda: utcp.call(source, {}, executor=executor))
    assert executor.spawned == 0


# -- output ------------------------------------------------------------------------


def test_output_rules() -> None:
    assert call(template("echo '{\"a\": [1]}'")) == {"a": [1]}
    assert call(template("echo '[1, 2'")) == "[1, 2"  # not JSON: the text
    assert call(template("echo ' 42 '")) == "42"  # stripped, not parsed
    steps = [
        {"command": "echo one", "append_to_final_output": True},
        {"command": "echo", "append_to_final_output": True},
        {"command": "echo two >&2"},
    ]
    assert call({"call_template_type": "cli", "commands": steps}) == "one\n\ntwo"


def test_output_is_capped_by_the_policy() -> None:
    source = template("yes | head -c 2000000")
    result = trio.run(lambda: utcp.run(source, {}, policy=Policy(max_output=1000)))
    assert result.steps[0].truncated
    assert len(result.steps[0].output) == 1000


def test_a_builtin_that_cannot_write_fails_with_bash_s_message() -> None:
    """bash checks a builtin's output when it returns: status 1 and a message on
    stderr; an error writing the message itself is ignored."""
    source = template(
        "echo x > /dev/full; echo $?",
        "pwd > /dev/full; echo $?",
        "cd /; cd - > /dev/full; echo $?",
        "printf x > /dev/full; echo $?",  # the program: coreutils says the same
        "echo x 2>/dev/full >/dev/full; echo $?",
    )
    full = "write error: No space left on device"
    result = trio.run(lambda: utcp.run(source, {}))
    assert [step.text for step in result.steps] == [
        f"echo: {full}\n1",
        f"pwd: {full}\n1",
        f"cd: {full}\n1",
        f"printf: {full}\n1",
        "1",
    ]


def test_invalid_utf8_is_replaced_in_the_result_and_kept_between_steps() -> None:
    source = template("printf 'a\\377b'", f'{PY} {PROBE} "$CMD_0_OUTPUT"')
    result = trio.run(lambda: utcp.run(source, {}))
    assert result.steps[0].text == "a\ufffdb"
    # The byte itself reached the program (Python shows it as a surrogate escape).
    assert json.loads(result.output)["argv"] == ["a\udcffb"]


# -- timeouts, cancellation, policy --------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_timeout_ends_the_plan_and_its_processes(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    source = template("echo started", f"sh -c 'echo $$ > {pidfile}; exec sleep 30'", "echo never")
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="in step 1"):
        call(source, policy=Policy(timeout=0.5, kill_grace=0.2))
    assert time.monotonic() - started < 5
    assert not _alive(int(pidfile.read_text()))
    result = trio.run(lambda: utcp.run(source, {}, policy=Policy(timeout=0.5, kill_grace=0.2)))
    assert result.timed_out
    assert [step.index for step in result.steps] == [0, 1]


def test_cancellation_kills_the_pipeline(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    source = template(f"sleep 30 | sh -c 'echo $$ > {pidfile}; exec cat'")

    async def cancel_soon() -> None:
        with trio.move_on_after(0.5):
            await utcp.call(source, {})

    trio.run(cancel_soon)
    assert not _alive(int(pidfile.read_text()))


def test_allowed_commands_are_checked_before_anything_runs() -> None:
    policy = Policy(allowed_commands=frozenset({"wc"}), match_command_names=True)
    executor = Executor(policy)
    source = template("echo a | wc -c", "rm -rf nothing")
    with pytest.raises(CommandError, match="does not allow the command 'rm'"):
        trio.run(lambda: utcp.call(source, {}, executor=executor))
    assert executor.spawned == 0
    assert call(template("echo abc | wc -c"), policy=policy) == "4"


# -- entry points, discovery, migration --------------------------------------------


def test_sync_and_asyncio_entry_points_agree() -> None:
    source = template("echo UTCP_ARG_m_UTCP_END")
    assert utcp.call_sync(source, {"m": "x"}) == "x"
    assert asyncio.run(utcp.call(source, {"m": "y"})) == "y"


def test_manual_from_output_reads_json_lines() -> None:
    tool = {"name": "a", "description": "d", "tool_call_template": template("echo a")}
    manual = utcp.manual_from_output("noise\n" + json.dumps(tool) + "\nmore noise\n")
    assert manual is not None and [t.name for t in manual.tools] == ["a"]
    assert utcp.manual_from_output("no json here") is None


def test_a_simple_template_migrates_to_an_equivalent_command_handle(tmp_path: Path) -> None:
    source = probe("--name=UTCP_ARG_who_UTCP_END 'UTCP_ARG_who_UTCP_END' {x}")
    migrated = utcp.command_handle_for(source)
    assert migrated is not None
    handle = CommandHandle.load(migrated["handle"])
    result = Executor().call_sync(handle, {"who": "a b;c"})
    expected = call(source, {"who": "a b;c"})["argv"]
    assert json.loads(str(result.stdout))["argv"] == expected == ["--name=a b;c", "a b;c", "{x}"]
    assert utcp.command_handle_for(template("echo a", "echo b")) is None
    assert utcp.command_handle_for(template("ls *.txt")) is None  # bash would glob


def test_cli_translate_run_and_tools(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    file = tmp_path / "t.json"
    file.write_text(json.dumps(template("echo UTCP_ARG_m_UTCP_END", name="echo_tool")))
    assert main(["utcp", "translate", str(file)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plan"]["arguments"] == ["m"]
    assert "command_handle" not in out  # echo is a builtin: no program to migrate to
    assert main(["utcp", "run", str(file), "--args", '{"m": "hello"}']) == 0
    assert capsys.readouterr().out == "hello\n"
    assert main(["utcp", "run", str(file), "--args", "{}"]) == 2
    assert "missing argument 'm'" in capsys.readouterr().err
    manual = ROOT / "fixtures" / "utcp" / "cli-manual.json"
    assert main(["utcp", "tools", str(manual)]) == 0
    listed = capsys.readouterr().out
    assert "echo_chain:" in listed and "get_weather: skipped" in listed
    assert (
        main(["utcp", "run", str(manual), "--tool", "echo_chain", "--args", '{"message": "m"}'])
        == 0
    )
    assert capsys.readouterr().out == "Previous: m\n"


def test_a_builtin_s_output_streams_like_a_program_s() -> None:
    """``echo`` runs as a builtin, writing into the step; a streaming caller (MCP
    progress, say) gets its line when it is written, not when the plan ends."""
    plan = utcp.translate(template("echo first && sleep 0.4 && echo second"))
    executor = Executor()
    prepared = utcp.prepare_plan(plan, {}, policy=executor.policy)
    chunks: list[tuple[float, bytes]] = []

    async def collect(name: str, chunk: bytes) -> None:
        assert name == "stdout"
        chunks.append((time.monotonic(), chunk))

    async def main() -> float:
        await executor.run(prepared, collect)
        return time.monotonic()

    ended = trio.run(main)
    assert b"".join(chunk for _, chunk in chunks) == b"first\nsecond\n"
    assert chunks[0][1] == b"first\n" and ended - chunks[0][0] >= 0.3


def test_discovery_output_nested_too_deeply_is_no_manual() -> None:
    """A discovery program printing JSON nested far deeper than any manual gets the
    plain refusal, not a RecursionError."""
    deep = "[" * 100_000 + "]" * 100_000
    assert utcp.manual_from_output(deep) is None
    assert utcp.manual_from_output('{"x": ' + deep + "}\n" + deep) is None
