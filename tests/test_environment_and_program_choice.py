"""Red-team findings 4 and 5: the model chooses neither an option-bearing
variable's value, nor a variable's name, nor the program. Real processes and
canaries: the file the injected command would create."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from command_handle import (
    CommandError,
    CommandHandle,
    EnvironmentVariableError,
    Executor,
    Policy,
    PolicyError,
)


def _handle(**fields: Any) -> CommandHandle:
    return CommandHandle.load({"name": "t", "handle": "command", **fields})


def _archive(tmp_path: Path) -> Path:
    member = tmp_path / "member.txt"
    member.write_text("x")
    archive = tmp_path / "a.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(member, arcname="member.txt")
    return archive


def test_tar_options_from_the_model_are_refused(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    archive = _archive(tmp_path)
    evil = tmp_path / "evil"
    evil.write_text(f"#!/bin/sh\ntouch {canary}\n")
    evil.chmod(0o755)
    options = f"--checkpoint=1 --checkpoint-action=exec={evil}"
    handle = _handle(
        command="tar",
        arguments=["-tf", str(archive)],
        environment={"TAR_OPTIONS": "{{options}}"},
    )
    executor = Executor()
    with pytest.raises(EnvironmentVariableError, match="TAR_OPTIONS is read as options") as info:
        executor.call_sync(handle, {"options": options})
    assert info.value.pointer == "/environment/TAR_OPTIONS"
    assert executor.spawned == 0 and not canary.exists()
    # The attack is real: tar runs the command when the variable carries it.
    subprocess.run(
        ["tar", "-tf", str(archive)], env={"TAR_OPTIONS": options}, check=True, capture_output=True
    )
    assert canary.exists()
    # The application can allow it, and a value written in the handle is fine.
    canary.unlink()
    allowed = Executor(Policy(allow_environment=("TAR_OPTIONS",)))
    allowed.call_sync(handle, {"options": "--verbose"})
    written = _handle(
        command="tar", arguments=["-tf", str(archive)], environment={"TAR_OPTIONS": "-v"}
    )
    assert executor.call_sync(written).exit_code == 0


@pytest.mark.parametrize(
    ("environment", "name"),
    [
        ({"MAKEFLAGS": "-j{{jobs}}"}, "MAKEFLAGS"),
        ({"GIT_EXTERNAL_DIFF": {"$": "tool"}}, "GIT_EXTERNAL_DIFF"),
        ({"LESSOPEN": "|{{tool}} %s"}, "LESSOPEN"),
        ({"PYTHONWARNINGS": "{{tool}}"}, "PYTHONWARNINGS"),
        ({"BROWSER": "{{tool}}"}, "BROWSER"),
        ({"PATH": "{{tool}}:/usr/bin"}, "PATH"),
        ({"GREP_OPTIONS": "{{tool}}"}, "GREP_OPTIONS"),
    ],
)
def test_option_bearing_variables_take_no_model_value(
    environment: dict[str, object], name: str, tmp_path: Path
) -> None:
    handle = _handle(command="true", environment=environment)
    executor = Executor()
    with pytest.raises(EnvironmentVariableError) as info:
        executor.call_sync(handle, {"jobs": "1", "tool": f"touch {tmp_path}/canary"})
    assert info.value.pointer == f"/environment/{name}"
    assert executor.spawned == 0 and not (tmp_path / "canary").exists()


def test_make_runs_no_model_command_through_makeflags(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("all:\n\t@true\n")
    canary = tmp_path / "canary"
    handle = _handle(
        command="make",
        directory=str(tmp_path),
        environment={"MAKEFLAGS": "-j{{jobs}}", "PATH": "/usr/bin:/bin"},
    )
    with pytest.raises(EnvironmentVariableError, match="MAKEFLAGS"):
        Executor().call_sync(handle, {"jobs": f"1 --eval=$(shell touch {canary})"})
    assert not canary.exists()


def test_variable_names_are_written_in_the_handle() -> None:
    handle = _handle(command="/usr/bin/env", environment={"$": "env"})
    executor = Executor()
    with pytest.raises(EnvironmentVariableError, match="names must be written in the handle"):
        executor.call_sync(handle, {"env": {"HARMLESS": "x"}})
    assert executor.spawned == 0
    # A value from the arguments under a written name is fine.
    named = _handle(command="/usr/bin/env", environment={"HARMLESS": {"$": "value"}})
    assert executor.call_sync(named, {"value": "x"}).stdout == "HARMLESS=x\n"


def test_a_computed_command_is_refused_unless_the_policy_allows_it() -> None:
    handle = _handle(command={"$": "tool"}, arguments=["hi"])
    executor = Executor()
    with pytest.raises(CommandError, match="computed from the arguments"):
        executor.call_sync(handle, {"tool": "/bin/echo"})
    assert executor.spawned == 0
    trusting = Executor(Policy(allow_computed_command=True))
    assert trusting.call_sync(handle, {"tool": "/bin/echo"}).stdout == "hi\n"


def test_a_relative_program_in_a_model_chosen_directory_is_refused(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    script = tmp_path / "deploy.sh"
    script.write_text(f"#!/bin/sh\ntouch {canary}\n")
    script.chmod(0o755)
    handle = _handle(command="./deploy.sh", directory={"$": "path"})
    executor = Executor(Policy(allowed_commands=frozenset({"deploy.sh"}), match_command_names=True))
    with pytest.raises(CommandError, match="directory computed from the arguments"):
        executor.call_sync(handle, {"path": str(tmp_path)})
    assert executor.spawned == 0 and not canary.exists()


def test_the_allowlist_compares_real_paths(tmp_path: Path) -> None:
    """A symbolic link named grep that points to /bin/sh is sh."""
    fake = tmp_path / "grep"
    fake.symlink_to("/bin/sh")
    canary = tmp_path / "canary"
    handle = _handle(command=str(fake), arguments=["-c", f"touch {canary}"])
    for policy in (
        Policy(allowed_commands=frozenset({"/usr/bin/grep"})),
        Policy(allowed_commands=frozenset({"grep"}), match_command_names=True),
    ):
        executor = Executor(policy)
        with pytest.raises(CommandError, match="does not allow"):
            executor.call_sync(handle)
        assert executor.spawned == 0 and not canary.exists()
    # A link of the allowed name to the allowed program is that program; under
    # another name it is refused: argv[0] is the name written, and a multi-call
    # program does what that name says.
    (tmp_path / "bin").mkdir()
    link = tmp_path / "bin" / "grep"
    link.symlink_to(os.path.realpath("/usr/bin/grep"))
    grep = _handle(command=str(link), arguments=["-c", "x"], io={"stdin": "x\n"})
    allowed = Executor(Policy(allowed_commands=frozenset({"/usr/bin/grep"})))
    assert allowed.call_sync(grep).stdout == "1\n"
    renamed = tmp_path / "g"
    renamed.symlink_to(os.path.realpath("/usr/bin/grep"))
    with pytest.raises(CommandError, match="does not allow"):
        allowed.call_sync(_handle(command=str(renamed), arguments=["-c", "x"]))


def test_bare_names_in_the_allowlist_need_the_opt_in() -> None:
    with pytest.raises(PolicyError, match="match_command_names"):
        Policy(allowed_commands=frozenset({"grep"}))
