"""A workflow of an application's own that runs tool calls as activities
(docs/temporal.md, "From a workflow of your own"). It lives in a module of
its own, as Temporal's sandbox requires, and imports this package through
the sandbox's passthrough."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from command_handle.temporal import ToolCall, execute_tool_call


@workflow.defn
class CountThenList:
    """Two tool calls in one workflow: count words, then list a directory."""

    @workflow.run
    async def run(self, text: str) -> list[dict[str, Any]]:
        counted = await execute_tool_call(ToolCall("word-count", {"text": text}))
        listed = await execute_tool_call(ToolCall("list-directory", {"path": "docs"}))
        return [counted, listed]
