"""Every error the library raises on purpose is a CommandHandleError.

The walk imports every module of the package and looks at every exception
class defined there; the few that are not CommandHandleErrors are control
flow that never leaves the library, and the tests below show that it does not.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import time
from pathlib import Path

import pytest
import trio

import command_handle
from command_handle import CommandHandle, Executor, cli, utcp
from command_handle.errors import CommandHandleError
from command_handle.form import DEFAULT_REGISTRY, EvaluationError, evaluate
from command_handle.form.extend import json_pointer

from .processes import alive

# Exception classes that are not CommandHandleErrors, and why none reaches a caller.
CONTROL_FLOW = {
    # `exit N` in a UTCP command: caught by the interpreter, which ends the step
    # (or subshell) with status N.
    "command_handle.executor._shell.ShellExit",
    # thrown into the supervisor generator to kill the child; the supervisor catches it.
    "command_handle.executor._supervise.Abort",
    # a Toolbox call's refusal inside its flow: the flow's one boundary turns it
    # into an is_error result (tests/test_toolbox.py, test_one_run_path.py).
    "command_handle.toolbox._toolbox._Refusal",
    # a schema that may hold any name ends the search for the names it declares.
    "command_handle.handle._names._Any",
    # OSErrors a launch raises inside the executor, which turns each into the
    # caller's refusal in one place (_process.refusal): a spawner that could not
    # confine itself is a SandboxError, a child killed because it could not be
    # supervised a LaunchError (tests/test_launch_faults.py shows both).
    "command_handle.executor._spawn.ConfinementError",
    "command_handle.executor._spawn.KilledAtLaunch",
    # raised by the object hook of _json.loads, which turns it into a JSONDecodeError.
    "command_handle._json._DuplicateKey",
    # the command line's refusals and signals: cli.main turns them into exit statuses.
    "command_handle.cli._common.UsageError",
    "command_handle.cli._common.Signalled",
    # the conformance runner's own assertion that the library failed a vector. It
    # must not be a CommandHandleError, or a vector expecting one would pass on it.
    "command_handle.conformance.VectorFailure",
}


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    modules = pkgutil.walk_packages(command_handle.__path__, "command_handle.")
    for info in modules:
        if info.name.endswith(".__main__"):  # running it would start the command line
            continue
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == info.name:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_every_exception_class_of_the_package_is_a_command_handle_error() -> None:
    classes = _exception_classes()
    assert len(classes) > 30 and set(classes) >= CONTROL_FLOW
    outside = {name for name, cls in classes.items() if not issubclass(cls, CommandHandleError)}
    assert outside == CONTROL_FLOW


def test_errors_that_were_builtin_ones_keep_their_builtin_base() -> None:
    from command_handle import _json
    from command_handle.form import RegistrationError
    from command_handle.mcp import ServeError
    from command_handle.toolbox import CredentialLookupError

    for cls, base in (
        (_json.JSONDecodeError, ValueError),
        (_json.NonJSONValueError, ValueError),
        (RegistrationError, ValueError),
        (json_pointer.JsonPointerError, LookupError),
        (ServeError, ValueError),
        (CredentialLookupError, LookupError),
    ):
        assert issubclass(cls, CommandHandleError) and issubclass(cls, base), cls
    with pytest.raises(_json.JSONDecodeError, match="duplicate object key 'a'"):
        _json.loads('{"a": 1, "a": 2}')
    with pytest.raises(_json.NonJSONValueError):
        _json.stringify(float("nan"))
    with pytest.raises(RegistrationError, match="transform names"):
        DEFAULT_REGISTRY.copy().add_transform("no spaces", lambda value: value)
    with pytest.raises(json_pointer.JsonPointerError, match="no member 'b'"):
        json_pointer.resolve({"a": 1}, "/b")


def test_the_server_refuses_a_transport_with_a_command_handle_error() -> None:
    from command_handle.mcp import ServeError, serve, serve_http
    from command_handle.toolbox import Toolbox

    with pytest.raises(ServeError, match='transport must be "stdio" or "http"'):
        serve(Toolbox([]), "pigeon")
    with pytest.raises(ServeError, match="not a loopback address"):
        serve_http(Toolbox([]), "0.0.0.0")


def test_sorting_a_value_json_has_no_order_for_is_an_evaluation_error() -> None:
    """A Python caller's tuple used to escape ``sort`` as a bare TypeError."""
    for template, pointer in (
        ({"$transform": "sort", "$": "x"}, "/$transform"),
        ({"a": [{"$": "x | sort"}]}, "/a/0/$"),
    ):
        with pytest.raises(EvaluationError, match="a tuple value has no place") as caught:
            evaluate(template, {"x": [(1,), 2]})
        assert caught.value.pointer == pointer


def test_a_utcp_timeout_that_is_not_positive_is_refused_at_load() -> None:
    """It used to load, then raise a bare ValueError at the first call."""
    template = {"call_template_type": "cli", "commands": [{"command": "echo hi"}], "timeout": -5}
    with pytest.raises(utcp.UtcpLoadError, match="timeout must be a positive") as caught:
        utcp.load(template)
    assert caught.value.pointer == "/timeout"


def test_the_control_flow_exceptions_never_reach_a_caller(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ShellExit: `exit 3` ends the call with status 3.
    template = {"call_template_type": "cli", "commands": [{"command": "exit 3"}]}
    assert trio.run(utcp.run, template, {}).steps[-1].status == 3
    # _DuplicateKey: a JSONDecodeError (above), here through a handle file.
    (tmp_path / "twice.json").write_text('{"name": "a", "name": "b"}')
    with pytest.raises(CommandHandleError, match="duplicate object key 'name'"):
        CommandHandle.load(tmp_path / "twice.json")
    # UsageError: an exit status and a message.
    (tmp_path / "template.json").write_text('{"a": 1}')
    assert cli.main(["eval", str(tmp_path / "template.json"), "--args", "{bad"]) == 2
    assert "is not valid JSON" in capsys.readouterr().err
    # Abort: a cancelled call returns to the canceller, its child killed.
    pid_file = tmp_path / "pid"
    handle = CommandHandle.load(
        {
            "name": "sleeper",
            "handler": "command",
            "command": sys.executable,
            "arguments": [
                "-c",
                f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
                "time.sleep(30)",
            ],
        }
    )

    async def cancelled() -> None:
        with trio.move_on_after(1.0):
            await Executor().call(handle)

    started = time.monotonic()
    trio.run(cancelled)
    assert time.monotonic() - started < 10
    pid = int(pid_file.read_text())
    assert not alive(pid)
