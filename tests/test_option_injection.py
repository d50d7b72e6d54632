"""Model data never becomes an option, however the argv was built (red-team
findings 1 to 3). Each case runs the real program with a canary: a file the
injected option would create. Refused calls spawn nothing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from command_handle import CommandHandle, Executor, OptionArgumentError, utcp
from command_handle.args import OptionLikeError, data, encode_args, written


def _handle(command: str, arguments: object, **fields: Any) -> CommandHandle:
    return CommandHandle.load(
        {"name": "t", "handle": "command", "command": command, "arguments": arguments, **fields}
    )


def _refused(handle: CommandHandle, args: dict[str, Any], canary: Path) -> OptionArgumentError:
    executor = Executor()
    with pytest.raises(OptionArgumentError) as caught:
        executor.call_sync(handle, args)
    assert executor.spawned == 0 and not canary.exists()
    return caught.value


@pytest.mark.parametrize(
    "arguments",
    [
        ["{{file}}"],
        "{{file}}",
        [{"$": "file"}],
        [{"$": "parts", "$join": ""}],
        {"$each": "$.files[*]", "$as": "f", "$value": "{{f}}"},
        ["x", {"$spread": {"$": "files"}}],
        {"$": "files"},
    ],
    ids=["string", "lone-string", "dollar", "join", "each", "spread", "array"],
)
def test_sort_never_takes_an_output_file_from_the_model(tmp_path: Path, arguments: object) -> None:
    canary = tmp_path / "canary"
    value = f"-o{canary}"
    args = {"file": value, "parts": [value], "files": [value]}
    handle = _handle("sort", arguments, directory=str(tmp_path))
    error = _refused(handle, args, canary)
    assert error.prefix == "-" and error.parameter in ("file", "parts", "files")
    assert str(error).startswith(f"`{error.parameter}` must not start with '-'")
    # Without the guard, sort writes the canary: the attack is real.
    subprocess.run(["sort", value], input=b"", cwd=tmp_path, check=True)
    assert canary.exists()


def test_ssh_never_takes_a_proxy_command_from_the_model(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    handle = _handle("ssh", ["{{host}}", "true"])
    _refused(handle, {"host": f"-oProxyCommand=touch {canary}"}, canary)


def test_vim_never_takes_a_plus_command_from_the_model(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    handle = _handle("vim", ["-n", "-es", "{{file}}", "+qa!"], directory=str(tmp_path))
    error = _refused(handle, {"file": f"+!touch {canary}"}, canary)
    assert error.prefix == "+"


def test_gcc_never_takes_a_response_file_from_the_model(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    response = tmp_path / "response"
    response.write_text(f"-wrapper /usr/bin/touch,{canary}\n")
    handle = _handle("gcc", ["-fsyntax-only", "{{source}}"], directory=str(tmp_path))
    error = _refused(handle, {"source": f"@{response}"}, canary)
    assert error.prefix == "@"


def test_a_flag_with_an_optional_value_never_takes_an_option_from_the_model(
    tmp_path: Path,
) -> None:
    """git log --pretty takes its argument only when joined: a separate
    '--output=FILE' is a new option, and git writes the file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@e", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo, check=True)
    canary = tmp_path / "canary"
    separate = _handle(
        "git", ["log", "--pretty", "{{format}}"], directory=str(repo), environment={"HOME": "/"}
    )
    _refused(separate, {"format": f"--output={canary}"}, canary)
    encoded = _handle(
        "git",
        {"$encode": "args", "log": {"--pretty": {"$": "format"}}},
        directory=str(repo),
        environment={"HOME": "/"},
    )
    _refused(encoded, {"format": f"--output={canary}"}, canary)
    # The joined form is safe: git reads the whole token as a format.
    joined = _handle(
        "git", ["log", "--pretty={{format}}"], directory=str(repo), environment={"HOME": "/"}
    )
    result = Executor().call_sync(joined, {"format": f"--output={canary}"})
    assert result.argv[1:] == ("log", f"--pretty=--output={canary}")
    assert not canary.exists()  # git refused the format; it wrote nothing


def test_the_exceptions_stay_explicit(tmp_path: Path) -> None:
    target = tmp_path / "-o-file"
    target.write_text("b\na\n")
    after_end = _handle("sort", ["--", "{{file}}"], directory=str(tmp_path))
    assert Executor().call_sync(after_end, {"file": "-o-file"}).stdout == "a\nb\n"
    # Right after a flag is no exception in a flat list: it cannot say whether the
    # flag takes a value. The joined form is the author's way to say it does.
    grep = _handle("grep", ["-c", "-e", "{{pattern}}", "{{file}}"], directory=str(tmp_path))
    (tmp_path / "notes").write_text("+1\n@home\n")
    for pattern in ("-v", "@home", "+1"):
        with pytest.raises(OptionArgumentError):
            Executor().call_sync(grep, {"pattern": pattern, "file": "notes"})
    joined = _handle("grep", ["-c", "--regexp={{pattern}}", "{{file}}"], directory=str(tmp_path))
    assert Executor().call_sync(joined, {"pattern": "@home", "file": "notes"}).stdout == "1\n"
    # The handle author may let a parameter look like an option.
    grep_v = _handle(
        "grep",
        ["-c", "-e", "{{pattern}}", "{{file}}"],
        directory=str(tmp_path),
        parameters={"type": "object", "properties": {"pattern": {}, "file": {}}},
        options_allowed=["pattern"],
    )
    assert Executor().call_sync(grep_v, {"pattern": "-v", "file": "notes"}).stdout == "0\n"
    # Only that parameter: the file still may not.
    with pytest.raises(OptionArgumentError) as caught:
        Executor().call_sync(grep_v, {"pattern": "x", "file": "-notes"})
    assert caught.value.parameter == "file"
    # The lone '-' (standard input) is an operand.
    cat = _handle("cat", ["{{file}}"], io={"stdin": "from stdin"})
    assert Executor().call_sync(cat, {"file": "-"}).stdout == "from stdin"


def test_encode_args_refuses_plus_and_at_operands_too() -> None:
    with pytest.raises(OptionLikeError):
        encode_args(written({"vim": [data("+!id")]}))
    with pytest.raises(OptionLikeError):
        encode_args(written({"gcc": [data("@response")]}))
    # As a template flag's value, '+' and '@' are values; '-' is not.
    assert encode_args(written({"grep": {"-e": data("@x")}})) == ["grep", "-e", "@x"]
    with pytest.raises(OptionLikeError):
        encode_args(written({"git": {"--pretty": data("--output=x")}}))


def test_a_handle_migrated_from_utcp_gets_the_guard(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    template = {
        "call_template_type": "cli",
        "commands": [{"command": "sort UTCP_ARG_file_UTCP_END"}],
    }
    migrated = utcp.command_handle_for(template)
    assert migrated is not None
    handle = CommandHandle.load(migrated["handle"])
    _refused(handle, {"file": f"-o{canary}"}, canary)


def test_the_programs_these_tests_attack_are_installed() -> None:
    for program in ("sort", "ssh", "vim", "gcc", "git", "grep"):
        assert shutil.which(program), f"{program} is needed (see .ci/run)"


def test_the_spec_charset_is_not_shell_safe_as_docs_args_says(tmp_path: Path) -> None:
    """Red-team finding 9: the claim was wrong, so the docs now say what the set
    guarantees. A token the 'spec' policy admits runs a command when a program
    hands it to a shell, as watch does; docs/args.md says never to do that."""
    canary = tmp_path / "canary"
    value = f"x;touch${{IFS}}{canary}"
    (token,) = encode_args([value])  # model data, admitted by the default policy
    assert token == value
    subprocess.run(["sh", "-c", f"echo {token}"], capture_output=True, check=True)
    assert canary.exists()
    docs = (Path(__file__).resolve().parent.parent / "docs" / "args.md").read_text()
    assert "not safe for a\n  program that hands its arguments to a shell" in docs
