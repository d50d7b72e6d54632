"""Big outputs kept whole: results show sizes, not contents, wherever they are printed.

The dataclass repr of a result holding 10 MB of output was 10 MB (escaped),
and ``asyncio.run`` formats the repr of the value it returns; so does any log
line or debugger. These run real programs and check the repr's length and
that it holds no output, not how long anything took.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import trio

from command_handle import CommandHandle, Executor, Policy, Toolbox, utcp
from command_handle.toolbox import Tool

SIZE = 10 * 1000 * 1000
MARKER = "needle-in-the-output"
SHORT = 500


def _output_file(tmp_path: Path) -> Path:
    """SIZE bytes of text with MARKER in it, for ``cat`` to write."""
    path = tmp_path / "big.txt"
    line = (MARKER + " " + "x" * 79 + "\n").encode()
    path.write_bytes((line * (SIZE // len(line) + 1))[:SIZE])
    return path


def _cat(**fields: object) -> CommandHandle:
    return CommandHandle.load(
        {
            "name": "cat",
            "handler": "command",
            "command": "/bin/cat",
            "parameters": {"type": "object", "properties": {"file": {"type": "string"}}},
            "arguments": [{"$": "file"}],
            **fields,
        }
    )


def _short_and_blind(shown: str) -> None:
    assert len(shown) < SHORT, shown[:SHORT]
    assert MARKER not in shown


def test_a_command_result_s_repr_is_short_whatever_it_holds(tmp_path: Path) -> None:
    path = _output_file(tmp_path)
    executor = Executor(Policy(max_output=2 * SIZE))
    result = executor.call_sync(_cat(), {"file": str(path)})
    assert result.stdout is not None and len(result.stdout) == SIZE  # kept whole
    _short_and_blind(repr(result))
    _short_and_blind(str(result))
    assert f"<str, {SIZE} chars>" in repr(result) and "exit_code=0" in repr(result)
    # Binary output, and a result template's view, show their sizes too.
    binary = executor.call_sync(_cat(io={"encoding": "binary"}), {"file": str(path)})
    assert isinstance(binary.stdout, bytes) and len(binary.stdout) == SIZE
    _short_and_blind(repr(binary))
    shaped = executor.call_sync(_cat(result={"$": "stdout"}), {"file": str(path)})
    assert isinstance(shaped.view, str) and len(shaped.view) == SIZE
    _short_and_blind(repr(shaped))


def test_a_cut_output_s_repr_says_how_much_was_written(tmp_path: Path) -> None:
    path = _output_file(tmp_path)
    result = Executor(Policy(max_output=1000)).call_sync(_cat(), {"file": str(path)})
    assert result.stdout_truncated and result.stdout_tail is not None
    _short_and_blind(repr(result))
    assert f"kept of {SIZE} bytes" in repr(result)


def test_the_result_asyncio_run_returns_is_the_whole_output(tmp_path: Path) -> None:
    """asyncio.run formats the repr of the main task's result: now a short one."""
    path = _output_file(tmp_path)
    executor = Executor(Policy(max_output=2 * SIZE))
    result = asyncio.run(executor.call(_cat(), {"file": str(path)}))
    assert result.stdout is not None and len(result.stdout) == SIZE
    _short_and_blind(repr(result))


def test_plan_and_step_results_show_sizes_not_contents(tmp_path: Path) -> None:
    path = _output_file(tmp_path)
    executor = Executor(Policy(max_output=2 * SIZE))
    source = {
        "call_template_type": "cli",
        "commands": [{"command": f"cat {path}"}, {"command": "echo done"}],
    }
    result = executor.run_sync(utcp.prepare(source, policy=executor.policy))
    assert len(result.steps[0].output) == SIZE
    _short_and_blind(repr(result))
    _short_and_blind(repr(result.steps[0]))
    assert f"<bytes, {SIZE} bytes>" in repr(result.steps[0])


def test_a_tool_result_s_repr_is_short_whatever_it_holds(tmp_path: Path) -> None:
    """The run as JSON (``structured``) holds the whole output; the repr does not."""
    path = _output_file(tmp_path)
    toolbox = Toolbox([Tool.from_handle(_cat())], policy=Policy(max_output=2 * SIZE))
    result = trio.run(toolbox.call, "cat", {"file": str(path)})
    assert not result.is_error
    assert isinstance(result.structured, dict) and len(result.structured["stdout"]) == SIZE
    assert result.result is not None and len(repr(result.result)) < SHORT
    _short_and_blind(repr(result))
    assert "tool='cat'" in repr(result) and "is_error=False" in repr(result)
