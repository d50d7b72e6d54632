"""Resource attacks: each fails early with bounded memory, and nothing runs.

The exponential templates and deep templates are in test_form_api; the
gibibyte of output is in test_executor. Memory is measured with tracemalloc
(Python allocations) or the process's peak RSS (what a child's output costs).
No test asserts a duration: these machines are shared.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
import trio

from command_handle import (
    ArgumentsError,
    CommandHandle,
    Executor,
    Policy,
    TemplateEvaluationError,
    utcp,
)
from command_handle.form import LimitError, evaluate

from .processes import probe_handle

MiB = 1024 * 1024


def refused(action: Callable[[], object]) -> tuple[Exception, int]:
    """What ``action`` raised, and the bytes Python allocated at its peak beyond
    what existed before."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        try:
            action()
        except Exception as exc:
            error = exc
        else:
            raise AssertionError("accepted")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return error, peak - before


def hundred_megabytes() -> dict[str, Any]:
    return {"items": ["x" * 1000 + str(i) for i in range(100_000)]}


def test_a_100_mb_arguments_object_that_fails_the_schema() -> None:
    """100,000 violations, but validation stops after the first 20 it reports."""
    handle = CommandHandle.load(
        {
            "name": "n",
            "handle": "command",
            "command": "true",
            "parameters": {
                "type": "object",
                "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
            },
        }
    )
    args = hundred_megabytes()
    executor = Executor()
    error, grown = refused(lambda: executor.call_sync(handle, args))
    assert isinstance(error, ArgumentsError) and error.more
    assert len(error.violations) == 20 and len(str(error)) < 4096
    assert executor.spawned == 0
    assert grown < 16 * MiB


def test_a_100_mb_arguments_object_the_schema_accepts() -> None:
    """The template would join it into one 100 MB argument: the output limit stops it."""
    handle = CommandHandle.load(
        {
            "name": "n",
            "handle": "command",
            "command": "true",
            "arguments": [{"$": "items", "$join": " "}],
        }
    )
    args = hundred_megabytes()
    executor = Executor()
    error, grown = refused(lambda: executor.call_sync(handle, args))
    assert isinstance(error, TemplateEvaluationError)
    assert isinstance(error.form_error, LimitError) and "characters" in str(error)
    assert executor.spawned == 0
    assert grown < 64 * MiB  # the 16 MiB output limit, not the 100 MB input


def test_arguments_nested_past_the_recursion_limit() -> None:
    deep: object = "leaf"
    for _ in range(100_000):
        deep = [deep]
    recursive_schema = {
        "type": "object",
        "properties": {"d": {"$ref": "#/$defs/n"}},
        "$defs": {
            "n": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#/$defs/n"}}]}
        },
    }
    for parameters in (recursive_schema, {"type": "object"}):
        handle = CommandHandle.load(
            {"name": "d", "handle": "command", "command": "true", "parameters": parameters}
        )
        executor = Executor()
        with pytest.raises(ArgumentsError, match="nested deeper than 64 levels") as caught:
            executor.call_sync(handle, {"d": deep})
        assert caught.value.pointer == "/d" + "/0" * 63
        assert executor.spawned == 0
    # Within the limit, the recursive schema validates and the call runs.
    shallow: object = "leaf"
    for _ in range(60):
        shallow = [shallow]
    handle = CommandHandle.load(
        {"name": "d", "handle": "command", "command": "true", "parameters": recursive_schema}
    )
    assert Executor().call_sync(handle, {"d": shallow}).exit_code == 0


def test_huge_strings_in_templates_hit_the_output_limit() -> None:
    big = "a" * (10 * MiB)
    error, grown = refused(lambda: evaluate("{{s}}{{s}}", {"s": big}))
    assert isinstance(error, LimitError) and "output exceeds" in str(error)
    assert grown < 48 * MiB


def test_an_argument_larger_than_the_system_allows_is_refused_before_launch() -> None:
    executor = Executor()
    with pytest.raises(TemplateEvaluationError, match="one argument may have at most") as caught:
        executor.call_sync(probe_handle(), {"words": ["ok", "x" * 200_000]})
    assert "argv[3] is 200000 bytes" in str(caught.value)
    with pytest.raises(TemplateEvaluationError, match="the system allows"):
        executor.call_sync(probe_handle(), {"words": ["y" * 100_000] * 30})
    assert executor.spawned == 0


def _rss_kib() -> int:
    """Reset this process's peak RSS (VmHWM) to its current RSS and return it, so
    that a later :func:`_peak_kib` measures only what came after. ru_maxrss could
    not do this: earlier tests had already pushed its high-water mark far up."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    return _peak_kib()


def _peak_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/self/status")


def test_endless_output_is_capped_and_timed_out() -> None:
    handle = CommandHandle.load(
        {"name": "yes", "handle": "command", "command": "yes", "max_output": MiB, "timeout": 1}
    )
    before = _rss_kib()
    result = Executor(Policy(kill_grace=0.5)).call_sync(handle)
    assert result.timed_out and result.stdout_truncated
    assert len(str(result.stdout)) == MiB
    assert _peak_kib() - before < 64 * 1024


def test_endless_output_in_a_utcp_plan_is_capped_and_timed_out() -> None:
    template = {"call_template_type": "cli", "commands": [{"command": "yes | cat"}]}
    policy = Policy(timeout=1, max_output=MiB, kill_grace=0.5)
    before = _rss_kib()
    result = trio.run(lambda: utcp.run(template, policy=policy))
    assert result.timed_out
    assert result.steps[0].truncated and len(result.steps[0].output) == MiB
    assert _peak_kib() - before < 64 * 1024


def test_endless_output_while_streaming_is_bounded_by_the_reader() -> None:
    """A slow consumer applies backpressure: the child blocks, memory stays flat."""
    handle = CommandHandle.load(
        {"name": "yes", "handle": "command", "command": "yes", "max_output": MiB, "timeout": 2}
    )
    executor = Executor(Policy(kill_grace=0.5))

    async def main() -> tuple[int, bool]:
        received = 0
        timed_out = False
        async with executor.stream(handle) as events:
            async for event in events:
                if event.kind == "exit":
                    assert event.result is not None
                    timed_out = event.result.timed_out
                else:
                    received += len(event.data)
                    await trio.sleep(0.01)
        return received, timed_out

    before = _rss_kib()
    received, timed_out = trio.run(main)
    assert timed_out and received > 0
    assert _peak_kib() - before < 64 * 1024
