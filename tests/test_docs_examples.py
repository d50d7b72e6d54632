"""The examples shown in README.md and docs/ produce what those pages say."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

from command_handle.form import compile_template, headers_of, load_template

ROOT = Path(__file__).resolve().parent.parent


def test_readme_tour() -> None:
    template = compile_template(
        {
            "url": {"$uri": "https://api.example.com/repos/{org}/issues{?state,labels*}"},
            "title": "Issues of {{org}}",
            "labels": {"$": "labels | sort"},
            "body": {"$encode": "json", "count": {"$": "labels | length"}},
        }
    )
    result = template.evaluate({"org": "acme", "state": "open", "labels": ["bug", "api"]})
    assert result == {
        "url": "https://api.example.com/repos/acme/issues?state=open&labels=bug&labels=api",
        "title": "Issues of acme",
        "labels": ["api", "bug"],
        "body": '{"count":2}',
    }
    assert isinstance(result, dict)
    assert headers_of(result["body"])["Content-Type"] == "application/json"
    assert "labels=bug&labels=api" in (ROOT / "README.md").read_text()


def test_reference_example() -> None:
    template = load_template(ROOT / "fixtures" / "templates" / "report.json")
    args = {
        "org": "acme",
        "labels": ["a b", "c"],
        "team": {
            "name": "core",
            "regulated": False,
            "members": [
                {"name": "Zed", "role": "owner"},
                {"name": "Ana", "role": "owner"},
                {"name": "Bo", "role": "dev"},
            ],
            "repos": [{"name": "api"}, {"name": "web"}],
        },
    }
    result = template.evaluate(args)
    assert isinstance(result, dict)
    assert result["owners"] == ["Ana", "Zed"]
    assert result["links"] == {
        "api": "https://git.example.com/acme/api",
        "web": "https://git.example.com/acme/web",
    }
    # 'team.regulated' is an existence test: present though false.
    assert result["audit"] == {"level": "full"}
    assert result["query"] == "state=open&labels.0=a+b&labels.1=c"
    assert json.loads(base64.b64decode(result["payload"])) == {"team": "core"}
    assert result["$schema"] == "kept as data"
    del args["team"]["regulated"]  # type: ignore[attr-defined]
    result = template.evaluate(args)
    assert isinstance(result, dict) and "audit" not in result


def test_readme_args_example() -> None:
    import pytest

    from command_handle.args import ArgsError

    git_log = compile_template(
        {
            "$encode": "args",
            "git": {"log": {"--oneline": True, "-n": {"$": "count"}, "--": {"$": "paths"}}},
        }
    )
    assert git_log.evaluate({"count": 5, "paths": ["src", "-weird-name"]}) == [
        "git",
        "log",
        "--oneline",
        "-n",
        "5",
        "--",
        "src",
        "-weird-name",
    ]
    rm = compile_template({"$encode": "args", "rm": {"$args": [{"$": "path"}]}})
    with pytest.raises(ArgsError, match="begins with '-'"):
        rm.evaluate({"path": "-rf"})


def test_readme_handle_example(tmp_path: Path) -> None:
    from command_handle import CommandHandle, Executor, Policy

    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    handle = CommandHandle.load(ROOT / "fixtures" / "handles" / "search-text.json")
    result = Executor(Policy()).call_sync(
        handle, {"pattern": "beta", "files": ["notes.txt"], "directory": str(tmp_path)}
    )
    assert (result.exit_code, result.stdout, result.timed_out) == (0, "2:beta\n", False)
    assert "search-text.json" in (ROOT / "README.md").read_text()


def test_readme_utcp_tour_and_docs_utcp_examples(tmp_path: Path) -> None:
    from command_handle import utcp

    echo_chain = utcp.load(ROOT / "fixtures" / "utcp" / "protocol-echo-chain.json")
    assert utcp.call_sync(echo_chain, {"message": "hello; rm -rf ~"}) == (
        "Previous: hello; rm -rf ~"
    )
    assert "'Previous: hello; rm -rf ~'" in (ROOT / "README.md").read_text()
    assert utcp.call_sync(echo_chain, {"message": "hello"}) == "Previous: hello"
    migrated = utcp.command_handle_for(ROOT / "fixtures" / "utcp" / "protocol-sandboxing.json")
    assert migrated is not None
    arguments = migrated["handle"]["arguments"]
    assert arguments[-2:] == ["cat", "/data/{{filename}}"]
    assert f'"arguments": {json.dumps(arguments)}' in (ROOT / "docs" / "utcp.md").read_text()


def test_every_test_docs_security_cites_exists() -> None:
    """docs/security.md links each guarantee to tests; a renamed test must not
    leave the page pointing at nothing."""
    text = (ROOT / "docs" / "security.md").read_text()
    sources = {path.name: path.read_text() for path in (ROOT / "tests").glob("test_*.py")}
    cited = 0
    current = ""
    for match in re.finditer(r"`(tests/(test_\w+)\.py)(?:::(test_\w+))?`|`(test_\w+)`", text):
        path, module, name, bare = match.groups()
        if path:
            assert f"{module}.py" in sources, path
            current = f"{module}.py"
        test = name or bare
        if test:
            assert current, f"{test} is cited before any test file"
            assert f"def {test}(" in sources[current], f"{current}::{test}"
            cited += 1
    assert cited >= 60
