"""The quick paths of a call's preparation give the answers of the general ones.

Render takes shorter routes for the usual case: environment names matched
against one compiled pattern per Policy, a constant template returned as it
is, a ``files[*]`` query and a lone existence test read without the JSONPath
library, a path that is already normal left as it is, the Invocation built in
one step. Each is checked here against the general route it stands in for.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from command_handle import CommandHandle, Policy
from command_handle.args import option_like
from command_handle.call import Invocation, PreparedCall
from command_handle.errors import CommandError, DirectoryError, EnvironmentVariableError
from command_handle.form import compile_template
from command_handle.form._expressions import LogicalExpression, QueryExpression, _env, _run_query
from command_handle.policy import (
    DANGEROUS_ENVIRONMENT,
    OPTION_ENVIRONMENT,
    option_prefix,
    resolve_command,
    resolve_directory,
)

from .strategies import json_values

_NAME_PARTS = ["LD_", "GIT_", "PYTHON", "PATH", "HOME", "_OPTIONS", "FLAGS", "X", "A1", "", "\n"]
names = st.lists(st.sampled_from(_NAME_PARTS), max_size=4).map("".join) | st.text(max_size=8)


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


@given(name=names)
def test_environment_name_rules_match_fnmatch_pattern_by_pattern(name: str) -> None:
    allowed = ("LD_PRELOAD", "GIT_*", "*FLAGS")
    for policy in (Policy(), Policy(allow_environment=allowed)):
        grants = _matches(name, policy.allow_environment)
        assert policy.refuses_variable(name) == (
            _matches(name, DANGEROUS_ENVIRONMENT) and not grants
        )
        assert policy.refuses_model_value(name) == (
            _matches(name, OPTION_ENVIRONMENT) and not grants
        )


def test_a_policy_refuses_a_loader_variable_on_every_call() -> None:
    handle = CommandHandle.load(
        {
            "name": "env",
            "handler": "command",
            "command": "/usr/bin/env",
            "environment": {"LD_PRELOAD": "/tmp/x.so"},
        }
    )
    for _ in range(3):  # the matcher built once answers the same each time
        with pytest.raises(EnvironmentVariableError, match="LD_PRELOAD"):
            handle.render({}, Policy())
    allowed = Policy(allow_environment=("LD_PRELOAD",))
    assert handle.render({}, allowed).env == {"LD_PRELOAD": "/tmp/x.so"}


def test_child_limits_are_computed_once_and_still_compare_by_fields() -> None:
    policy = Policy(max_memory=1 << 30)
    assert policy.child_limits is policy.child_limits
    assert policy == Policy(max_memory=1 << 30)
    assert hash(policy) == hash(Policy(max_memory=1 << 30))


def test_invocation_build_is_the_constructor() -> None:
    made = Invocation(argv=("/bin/echo", "hi"), env={"A": "1"}, cwd="/", policy=Policy())
    built = Invocation.build(**vars(made))
    assert built == made and repr(built) == repr(made) and vars(built) == vars(made)
    with pytest.raises(AttributeError):
        built.cwd = "/tmp"  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        Invocation.build(**vars(made), colour="red")  # type: ignore[call-arg]
    every_but_cwd = {k: v for k, v in vars(made).items() if k != "cwd"}
    with pytest.raises(TypeError, match="cwd"):
        Invocation.build(**every_but_cwd)


def test_prepared_call_command_sets_every_field() -> None:
    invocation = Invocation(argv=("/bin/true",), env={}, cwd="/", timeout=3.0, handle_name="t")
    policy = Policy()
    prepared = PreparedCall.command(invocation, policy, arguments={"a": 1})
    expected = PreparedCall(
        "command", "t", policy, 3.0, invocation.max_output, invocation, arguments={"a": 1}
    )
    assert vars(prepared) == vars(expected)
    prepared.remember_program_file({"dev": 1})
    prepared.remember_program_file({"dev": 2})
    assert prepared.program_file == {"dev": 1}


@pytest.mark.parametrize("value", ["/bin/echo", 7, 1.5, True, None, b"x"])
def test_a_constant_template_is_its_value(value: object) -> None:
    template = compile_template(value)
    assert template.is_constant
    assert template.evaluate({"any": "args"}, provenance=True) == value


def test_containers_and_expressions_are_not_constant() -> None:
    assert not compile_template(["a"]).is_constant  # a fresh copy each time
    assert not compile_template("{{x}}").is_constant
    listed = compile_template(["a"])
    first = listed.evaluate()
    assert isinstance(first, list)
    first.append("b")
    assert listed.evaluate() == ["a"]


_QUERIES = ["a[*]", "$.a[*]", "a.b[*]", "*", "$[*]", "a[0][*]", "a[-1].*", "$['a'][*]"]


@given(args=json_values(st.sampled_from(["a", "b", "c"])), other=json_values())
def test_a_wildcard_query_selects_what_the_library_selects(args: object, other: object) -> None:
    for source in _QUERIES:
        query = QueryExpression(source, "", 1000)
        assert query.wildcard_steps is not None
        for value in (args, {"a": args, "b": other}, {"a": [args, other]}):
            assert query.nodes(value) == _run_query(query.query, value, "")


def test_other_queries_keep_the_library() -> None:
    for source in ("a[*][*]", "a..b", "$.a[1:]", "$[?@.x]", "a[0,1]"):
        assert QueryExpression(source, "", 1000).wildcard_steps is None


@given(args=json_values(st.sampled_from(["a", "b", "c"])))
def test_a_lone_name_condition_is_the_existence_test(args: object) -> None:
    for source in ("a", "a.b", "$", "$.c.a", "b"):
        condition = LogicalExpression(source, "", 1000)
        assert condition.exists is not None
        for value in (args, {"a": args}, {"a": {"b": args}}):
            context = condition.context(env=_env(), current=value, root=value)  # type: ignore[arg-type]
            assert condition.evaluate(value) == bool(condition.expression.evaluate(context))


def test_a_condition_with_an_operator_keeps_the_library() -> None:
    assert LogicalExpression("a == 1", "", 1000).exists is None
    assert LogicalExpression("!a", "", 1000).exists is None


@pytest.mark.parametrize("code", range(0x80))
def test_a_word_is_judged_without_the_marker_only_when_no_option_can_begin_it(code: int) -> None:
    word = chr(code) + "xyz"
    if option_like(word, flag_value=False) is not None or word.startswith("M"):
        return  # the full check answers; the quick one does not
    assert option_prefix(word) == ""
    assert option_prefix("MISSING_ARG_x--upload-pack=x") == "MISSING_ARG_x-"


@pytest.mark.parametrize(
    "written",
    ["/bin//echo", "/bin/./echo", "/usr/../bin/echo", "/bin/echo/.", "//bin/echo", "/./bin/echo"],
)
def test_a_path_that_is_not_normal_is_normalised(written: str) -> None:
    assert resolve_command(written, "/", Policy()) == os.path.normpath(written)


def test_a_relative_command_is_normalised_in_its_directory(tmp_path: Path) -> None:
    program = tmp_path / "tool"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    (tmp_path / "sub").mkdir()
    assert resolve_command("./tool", str(tmp_path), Policy()) == str(program)
    assert resolve_command("sub/../tool", str(tmp_path), Policy()) == str(program)


@pytest.mark.parametrize("text", ["", "a\x00b", "bin/\x1bx", "x\x7f", "\ud800x", "tab\there"])
def test_text_that_is_not_printable_ascii_gets_the_full_checks(text: str) -> None:
    with pytest.raises(CommandError, match="non-empty name without control"):
        resolve_command(text, "/", Policy())
    with pytest.raises(DirectoryError, match="non-empty path without control"):
        resolve_directory(text)


def test_a_non_ascii_name_without_surrogates_is_looked_up(tmp_path: Path) -> None:
    program = tmp_path / "prüfen"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert resolve_command("prüfen", "/", Policy(search_path=(str(tmp_path),))) == str(program)


def test_the_lookup_takes_the_first_executable_regular_file(tmp_path: Path) -> None:
    """A directory or a file this user cannot execute is passed over, as execvp does."""
    entries = [tmp_path / name for name in ("dir", "plain", "found", "later")]
    for entry in entries:
        entry.mkdir()
    (entries[0] / "tool").mkdir()
    (entries[1] / "tool").write_text("not executable\n")
    for entry in entries[2:]:
        (entry / "tool").write_text("#!/bin/sh\n")
        (entry / "tool").chmod(0o755)
    policy = Policy(search_path=("relative", *(str(e) + "/" for e in entries)))
    assert resolve_command("tool", "/", policy) == str(entries[2] / "tool")


def test_a_set_user_id_program_found_first_is_refused_not_passed_over(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for entry in (first, second):
        entry.mkdir()
        (entry / "tool").write_text("#!/bin/sh\n")
        (entry / "tool").chmod(0o755)
    os.chmod(first / "tool", 0o755 | stat.S_ISUID)
    if not os.stat(first / "tool").st_mode & stat.S_ISUID:
        pytest.skip("this filesystem drops the set-user-ID bit")
    policy = Policy(search_path=(str(first), str(second)))
    with pytest.raises(CommandError, match="set-user-ID"):
        resolve_command("tool", "/", policy)
