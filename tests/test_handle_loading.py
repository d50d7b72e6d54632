"""Loading Command Handles: the tables their templates compile with, and the files they
are read from. Calls launch real programs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from command_handle import CommandHandle, Executor, HandleLoadError
from command_handle.form import DEFAULT_REGISTRY, UNDEFINED, compile_template


@pytest.fixture
def default_registry() -> Iterator[None]:
    """Put ``DEFAULT_REGISTRY``'s transforms back as they were after the test."""
    saved = dict(DEFAULT_REGISTRY.transforms)
    yield
    DEFAULT_REGISTRY.transforms.clear()
    DEFAULT_REGISTRY.transforms.update(saved)
    DEFAULT_REGISTRY.generation += 1  # handles loaded later copy the restored table


def _shout(value: object) -> object:
    return value.upper() if isinstance(value, str) else UNDEFINED


def _echo_handle() -> dict[str, object]:
    return {
        "name": "shout",
        "handler": "command",
        "command": "/bin/echo",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
        "arguments": [{"$": "word | shout_h4"}, {"$use": {"$": "word"}, "$transform": "shout_h4"}],
    }


def test_a_transform_registered_after_import_works_in_a_handle_loaded_afterwards(
    default_registry: None,
) -> None:
    with pytest.raises(HandleLoadError, match="unknown transform 'shout_h4'"):
        CommandHandle.load(_echo_handle())
    DEFAULT_REGISTRY.add_transform("shout_h4", _shout)
    assert compile_template({"$": "word | shout_h4"}).evaluate({"word": "hi"}) == "HI"
    handle = CommandHandle.load(_echo_handle())
    result = Executor().call_sync(handle, {"word": "quiet"})
    assert result.exit_code == 0 and result.stdout == "QUIET QUIET\n"


def test_a_loaded_handle_keeps_the_transforms_it_was_compiled_with(
    default_registry: None,
) -> None:
    DEFAULT_REGISTRY.add_transform("shout_h4", _shout)
    handle = CommandHandle.load(_echo_handle())
    DEFAULT_REGISTRY.add_transform("shout_h4", lambda value: "replaced")
    assert Executor().call_sync(handle, {"word": "a"}).stdout == "A A\n"
    assert Executor().call_sync(CommandHandle.load(_echo_handle()), {"word": "a"}).stdout == (
        "replaced replaced\n"
    )


def test_a_yaml_handle_with_a_key_written_twice_is_refused_like_json(tmp_path: Path) -> None:
    (tmp_path / "twice.yaml").write_text(
        "name: twice\n"
        "handler: command\n"
        "command: /bin/echo\n"
        "environment:\n"
        "  MODE: safe\n"
        "  OTHER: x\n"
        "  MODE: unsafe\n"
    )
    with pytest.raises(HandleLoadError) as caught:
        CommandHandle.load(tmp_path / "twice.yaml")
    assert str(caught.value) == (
        "twice.yaml is not valid YAML: duplicate mapping key 'MODE': YAML mappings here "
        "must have unique keys (at /environment/MODE, line 7, column 3)"
    )
    (tmp_path / "twice.json").write_text(
        '{"name": "twice", "handler": "command", "command": "/bin/echo",\n'
        ' "environment": {"MODE": "safe", "OTHER": "x", "MODE": "unsafe"}}'
    )
    with pytest.raises(HandleLoadError) as caught:
        CommandHandle.load(tmp_path / "twice.json")
    assert str(caught.value) == (
        "twice.json is not valid JSON: duplicate object key 'MODE': JSON objects here "
        "must have unique keys (at /environment/MODE)"
    )


def test_yaml_keys_are_compared_as_yaml_reads_them(tmp_path: Path) -> None:
    """``echo`` and ``"echo"`` are one key; ``1`` and ``0x1`` are one integer."""
    cases = {
        "quoted.yaml": ('name: q\n"name": r\n', "'name'", "/name, line 2, column 1"),
        "numbers.yaml": ("a:\n  - {1: x, 0x1: y}\n", "'0x1'", "/a/0/0x1, line 2, column 12"),
    }
    for file, (text, key, where) in cases.items():
        (tmp_path / file).write_text(text)
        with pytest.raises(HandleLoadError, match=f"duplicate mapping key {key}") as caught:
            CommandHandle.load(tmp_path / file)
        assert str(caught.value).endswith(f"(at {where})")


def test_a_yaml_merge_key_may_be_overridden(tmp_path: Path) -> None:
    """Writing a key a ``<<`` merge brought in is what merging is for, not a duplicate."""
    (tmp_path / "merge.yaml").write_text(
        "name: merge\n"
        "handler: command\n"
        "command: /bin/echo\n"
        "parameters:\n"
        "  type: object\n"
        "  properties:\n"
        "    word: &text {type: string, description: a word}\n"
        "    count: {<<: *text, type: integer}\n"
        'arguments: [{$: word}, "{{count}}"]\n'
    )
    handle = CommandHandle.load(tmp_path / "merge.yaml")
    assert handle.parameters["properties"]["count"] == {"type": "integer", "description": "a word"}
    result = Executor().call_sync(handle, {"word": "hi", "count": 2})
    assert result.stdout == "hi 2\n"


def test_a_schema_reference_never_reaches_the_network_and_must_resolve(tmp_path: Path) -> None:
    """A ``$ref`` to a URL used to be fetched on every call, from the application
    itself, on the event loop; a dangling local one loaded, then every call
    raised. Both are load errors now, naming where the reference stands."""
    import http.server
    import threading

    requests: list[str] = []

    class Count(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            body = b'{"type": "string"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Count)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/s.json"
        for ref, where in ((url, "/parameters/properties/x/$ref"), ("#/$defs/gone", None)):
            document = {
                "name": "r",
                "handle": "command",
                "command": "/bin/echo",
                "arguments": ["{{x}}"],
                "parameters": {"type": "object", "properties": {"x": {"$ref": ref}}},
            }
            with pytest.raises(HandleLoadError, match="does not resolve") as caught:
                CommandHandle.load(document)
            assert caught.value.pointer == (where or "/parameters/properties/x/$ref")
        local = {
            "name": "r",
            "handle": "command",
            "command": "/bin/echo",
            "arguments": ["{{x}}"],
            "parameters": {
                "type": "object",
                "$defs": {"word": {"type": "string"}},
                "properties": {"x": {"$ref": "#/$defs/word"}},
            },
        }
        assert Executor().call_sync(CommandHandle.load(local), {"x": "ok"}).stdout == "ok\n"
    finally:
        server.shutdown()
        server.server_close()
    assert requests == []
