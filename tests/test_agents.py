"""The payloads of docs/agents.md against the SDKs' own request types.

Tool definitions and tool results are checked with the types the OpenAI,
Anthropic and MCP Python SDKs publish (TypedDicts validated by pydantic, and
MCP's pydantic models), and the loops run through the real SDK clients with
an in-process transport standing in for the API: nothing calls a network.
"""

from __future__ import annotations

import json
from typing import Any, get_type_hints

import anyio
import httpx2
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import ToolParam, ToolResultBlockParam
from mcp.types import CallToolResult, TextContent, Tool
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolMessageParam
from openai.types.shared_params import FunctionDefinition
from pydantic import TypeAdapter

from command_handle import Toolbox

from .processes import ROOT

HANDLES = ROOT / "fixtures" / "handles"
UTCP = ROOT / "fixtures" / "utcp"


def conforms(kind: Any, value: dict[str, Any]) -> None:
    """``value`` validates as the TypedDict ``kind``, with no key it lacks."""
    TypeAdapter(kind).validate_python(value)
    assert set(value) <= set(get_type_hints(kind)), set(value) - set(get_type_hints(kind))
    assert kind.__required_keys__ <= set(value)


@pytest.fixture(scope="module")
def toolbox() -> Toolbox:
    return Toolbox.load(HANDLES, UTCP)


@pytest.mark.parametrize("format", ["openai", "openai-strict"])
def test_openai_definitions_are_sdk_tool_params(toolbox: Toolbox, format: str) -> None:
    tools = Toolbox.load(HANDLES).describe(format)
    for tool in tools:
        conforms(ChatCompletionFunctionToolParam, tool)
        conforms(FunctionDefinition, tool["function"])
    if format == "openai":  # the UTCP fixtures too (some are not strict-expressible)
        for tool in toolbox.describe("openai"):
            conforms(ChatCompletionFunctionToolParam, tool)


def test_anthropic_definitions_are_sdk_tool_params(toolbox: Toolbox) -> None:
    for tool in toolbox.describe("anthropic"):
        conforms(ToolParam, tool)


def test_mcp_definitions_are_sdk_tools(toolbox: Toolbox) -> None:
    for described in toolbox.describe("mcp"):
        tool = Tool.model_validate(described)
        # nothing dropped on the way: the model gives back what we sent
        assert tool.model_dump(by_alias=True, exclude_none=True) == described


def test_results_are_sdk_result_params(toolbox: Toolbox) -> None:
    result = toolbox.call_sync("word-count", {"text": "a b"})
    conforms(
        ChatCompletionToolMessageParam,
        {"role": "tool", "tool_call_id": "call_1", "content": result.content},
    )
    conforms(
        ToolResultBlockParam,
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": result.content,
            "is_error": result.is_error,
        },
    )
    mcp_result = CallToolResult.model_validate(
        {
            "content": [{"type": "text", "text": result.content}],
            "structuredContent": result.structured,
            "isError": result.is_error,
        }
    )
    assert mcp_result.structured_content == {"counts": "      0       2       3\n"}
    assert mcp_result.content == [TextContent(type="text", text=result.content)]


def test_the_sdks_send_our_definitions_unchanged() -> None:
    """The SDK clients accept the definitions and put them on the wire as given."""
    toolbox = Toolbox.load(HANDLES)
    sent: list[dict[str, Any]] = []

    def api(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        sent.append(body)
        if "anthropic" in str(request.url) or request.url.path.endswith("/messages"):
            return httpx2.Response(
                200,
                json={
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": [{"type": "text", "text": "ok"}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                },
            )
        return httpx2.Response(
            200,
            json={
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
            },
        )

    transport = httpx2.MockTransport(api)

    async def main() -> None:
        openai = AsyncOpenAI(api_key="k", http_client=httpx2.AsyncClient(transport=transport))
        await openai.chat.completions.create(
            model="gpt-6.2-sol",
            messages=[{"role": "user", "content": "hi"}],
            tools=toolbox.describe("openai-strict"),  # type: ignore[arg-type]
        )
        anthropic = AsyncAnthropic(api_key="k", http_client=httpx2.AsyncClient(transport=transport))
        await anthropic.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=16,
            messages=[{"role": "user", "content": "hi"}],
            tools=toolbox.describe("anthropic"),  # type: ignore[arg-type]
        )

    anyio.run(main)
    assert sent[0]["tools"] == toolbox.describe("openai-strict")
    assert sent[1]["tools"] == toolbox.describe("anthropic")
