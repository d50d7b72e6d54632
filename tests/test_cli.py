"""The command line, run as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
