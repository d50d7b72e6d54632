"""The command line, run as a real process."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .processes import wait_dead

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "command_handle", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_eval_fixture_template() -> None:
    result = run(
        "eval",
        "fixtures/templates/deploy-request.json",
        "--args",
        "@fixtures/templates/deploy-request.args.json",
    )
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["url"] == "https://deploy.example.com/services/payments/releases?dry_run=true"
    body = json.loads(output["body"])
    assert body["regions"] == ["ap-south", "eu-west", "us-east"]
    assert body["notify"] == ["Ana <ana@example.com>", "Bo <bo@example.com>"]


def test_eval_reads_arguments_from_stdin_and_reports_errors(tmp_path: Path) -> None:
    template = tmp_path / "t.json"
    template.write_text('{"greeting": "Hi {{name}}"}')
    result = run("eval", str(template), "--args", "@-", stdin='{"name": "Bo"}')
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"greeting": "Hi Bo"}
    template.write_text('{"bad": {"$": 1}}')
    result = run("eval", str(template))
    assert result.returncode == 2
    assert "TemplateSyntaxError" in result.stderr and "/bad/$" in result.stderr


def test_conformance_table() -> None:
    result = run("conformance", "--suite", "tool-form")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["suite", "section", "passed", "failed", "noted"]
    total = lines[-1].split()
    assert total[0] == "total" and int(total[2]) == 0 and int(total[1]) > 250


# -- behaving like a Unix tool: one exit-code table, signals, missing files ----------


def _handle_file(tmp_path: Path, code: str, **fields: object) -> str:
    document = {
        "name": "py",
        "handle": "command",
        "command": sys.executable,
        "arguments": ["-c", {"$": "code"}],
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}},
        **fields,
    }
    path = tmp_path / "handle.json"
    path.write_text(json.dumps(document))
    return str(path)


def test_exit_codes_follow_one_table(tmp_path: Path) -> None:
    handle = _handle_file(tmp_path, "")
    ok = run("run", handle, "--args", json.dumps({"code": "print('x')"}))
    failed = run("run", handle, "--args", json.dumps({"code": "raise SystemExit(3)"}))
    refused = run("run", handle, "--args", json.dumps({"code": 5}))
    assert (ok.returncode, failed.returncode, refused.returncode) == (0, 1, 2)
    assert json.loads(failed.stdout)["exit_code"] == 3
    assert "ArgumentsError" in refused.stderr and "Traceback" not in refused.stderr
    template = {"call_template_type": "cli", "commands": [{"command": "false"}]}
    (tmp_path / "t.json").write_text(json.dumps(template))
    assert run("utcp", "run", str(tmp_path / "t.json")).returncode == 1


def test_missing_files_are_one_line_errors(tmp_path: Path) -> None:
    handle = _handle_file(tmp_path, "")
    for args in (
        ("run", handle, "--args", "@missing.json"),
        ("eval", "missing.json"),
        ("run", "missing.json"),
        ("render", "missing.json"),
        ("utcp", "run", "missing.json"),
    ):
        result = run(*args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
        assert "missing.json" in result.stderr


def _limited() -> None:
    """In the child: 1 GiB of address space, so reading /dev/zero fails fast."""
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("command", ["validate", "tools", "mcp"])
def test_a_fifo_or_a_device_among_the_tools_is_a_clear_error(tmp_path: Path, command: str) -> None:
    """Only regular files are read: a FIFO would block the load, a link to
    /dev/zero would be read until memory ran out."""
    (tmp_path / "good.json").write_text(
        json.dumps({"name": "t", "handler": "command", "command": "/bin/true"})
    )
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    result = subprocess.run(
        [sys.executable, "-m", "command_handle", command, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limited,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert f"{tmp_path / 'pipe.json'}: cannot read pipe.json: it is a FIFO" in result.stderr
    if command == "validate":  # it reports every file
        assert f"{tmp_path / 'zero.json'}: cannot read zero.json: it is a device" in result.stderr
        assert f"{tmp_path / 'good.json'}: ok (t)" in result.stdout


def test_raw_passes_stdout_stderr_and_the_exit_code_through(tmp_path: Path) -> None:
    handle = _handle_file(tmp_path, "")
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(4)"
    result = run("run", handle, "--raw", "--args", json.dumps({"code": code}))
    assert (result.stdout, result.stderr, result.returncode) == ("out\n", "err\n", 4)


@pytest.mark.parametrize(
    ("signum", "command"),
    [
        (signal.SIGTERM, "run"),
        (signal.SIGINT, "run"),
        (signal.SIGHUP, "run"),
        (signal.SIGTERM, "utcp"),
        (signal.SIGINT, "utcp"),
    ],
)
def test_a_signal_kills_the_childs_tree_and_exits_128_plus_n(
    tmp_path: Path, signum: int, command: str
) -> None:
    pidfile = tmp_path / "pid"
    grandchild = f"sleep 300 & echo $! > {pidfile}; wait"
    if command == "run":
        handle = _handle_file(tmp_path, "")
        code = f"import subprocess; subprocess.run(['sh', '-c', {grandchild!r}])"
        args = ["run", handle, "--args", json.dumps({"code": code})]
    else:
        template = {
            "call_template_type": "cli",
            "commands": [{"command": f"sh -c '{grandchild}'"}],
        }
        (tmp_path / "t.json").write_text(json.dumps(template))
        args = ["utcp", "run", str(tmp_path / "t.json")]
    process = subprocess.Popen(
        [sys.executable, "-m", "command_handle", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 128 + signum
    assert "Traceback" not in stderr, stderr
    assert wait_dead([int(pidfile.read_text())]) == []
