"""Loading Command Handles: the tables their templates compile with, and the files they
are read from. Calls launch real programs."""

from __future__ import annotations

from collections.abc import Iterator

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
