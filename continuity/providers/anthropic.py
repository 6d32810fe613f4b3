"""The Anthropic Messages endpoint, streamed over SSE.

Anthropic reports cached input on top of its input count: ``input_tokens`` excludes both
``cache_read_input_tokens`` and ``cache_creation_input_tokens``. Usage is normalised so
every input token is counted once: ``input`` = input + cache creation (of which
``cache_write`` = cache creation), ``cache_read`` = cache read.

Anthropic caches only up to explicit breakpoints, so every request marks three (of the
four allowed) with ``cache_control: ephemeral``: the system prompt (tools and system),
the second-to-last content block (in a probe's first request, the end of the shared
history its sibling probes fork from, so the second probe reads what the first wrote)
and the last block (each tool round reads the previous round's prefix, which lies
within the API's 20-block lookback).

The plan's reasoning effort is not sent: extended thinking would require replaying
signed thinking blocks across tool rounds, which the harness does not keep.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec

from continuity.errors import ProviderError
from continuity.messages import (
    AssistantMessage,
    ModelRequest,
    ToolCallRequest,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from continuity.providers.http import HttpProvider, parse_arguments
from continuity.providers.protocol import Completed, ProviderEvent, TextDelta, ToolCallEvent

__all__ = ["ANTHROPIC_VERSION", "CACHE_CONTROL", "AnthropicProvider", "anthropic_usage"]

ANTHROPIC_VERSION = "2023-06-01"
CACHE_CONTROL = {"type": "ephemeral"}


def anthropic_usage(raw: dict[str, Any]) -> Usage:
    written = int(raw.get("cache_creation_input_tokens") or 0)
    return Usage(
        input=int(raw.get("input_tokens") or 0) + written,
        cache_read=int(raw.get("cache_read_input_tokens") or 0),
        cache_write=written,
        output=int(raw.get("output_tokens") or 0),
    )


class AnthropicProvider(HttpProvider):
    """``POST {base}/v1/messages`` with ``stream: true``."""

    path = "/v1/messages"

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        key = self.api_key()
        if key:
            headers["x-api-key"] = key
        return headers

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []

        def add(role: str, block: dict[str, Any]) -> None:
            # Consecutive same-role content (tool results, then a user message) is one turn.
            if messages and messages[-1]["role"] == role:
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": role, "content": [block]})

        for message in request.messages:
            if isinstance(message, UserMessage):
                add("user", {"type": "text", "text": message.text})
            elif isinstance(message, ToolResultMessage):
                result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.call_id}
                if message.text:  # the API refuses an empty text; no content is allowed
                    result["content"] = message.text
                if message.is_error:
                    result["is_error"] = True
                add("user", result)
            elif isinstance(message, AssistantMessage):
                if message.text:
                    add("assistant", {"type": "text", "text": message.text})
                for call in message.tool_calls:
                    add(
                        "assistant",
                        {
                            "type": "tool_use",
                            "id": call.call_id,
                            "name": call.name,
                            "input": call.arguments,
                        },
                    )
        # Cache breakpoints on the last two content blocks (the system prompt's is below).
        marked = 0
        for turn in reversed(messages):
            for index in range(len(turn["content"]) - 1, -1, -1):
                if marked == 2:
                    break
                turn["content"][index] = {**turn["content"][index], "cache_control": CACHE_CONTROL}
                marked += 1
        body: dict[str, Any] = {
            "model": self.spec.model,
            "max_tokens": self.spec.max_output_tokens,
            "messages": messages,
            "stream": True,
        }
        if request.system:
            body["system"] = [
                {"type": "text", "text": request.system, "cache_control": CACHE_CONTROL}
            ]
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in request.tools
            ]
        return body

    async def events(self, stream: AsyncIterator[tuple[str, str]]) -> AsyncIterator[ProviderEvent]:
        blocks: dict[int, dict[str, Any]] = {}
        usage_raw: dict[str, Any] = {}
        model = self.spec.model
        stop = None
        finished = False
        async for _, data in stream:
            event = msgspec.json.decode(data)
            kind = event.get("type")
            if kind == "message_start":
                message = event["message"]
                model = message.get("model") or model
                usage_raw.update(message.get("usage") or {})
            elif kind == "content_block_start":
                block = dict(event["content_block"])
                block["partial_json"] = ""
                blocks[int(event["index"])] = block
            elif kind == "content_block_delta":
                delta = event["delta"]
                block = blocks[int(event["index"])]
                if delta.get("type") == "text_delta":
                    self.count_output(delta["text"])
                    block["text"] = block.get("text", "") + delta["text"]
                    yield TextDelta(delta["text"])
                elif delta.get("type") == "input_json_delta":
                    block["partial_json"] += delta.get("partial_json", "")
            elif kind == "message_delta":
                stop = (event.get("delta") or {}).get("stop_reason") or stop
                # message_delta usage is cumulative: it replaces the counts it carries.
                usage_raw.update(
                    {k: v for k, v in (event.get("usage") or {}).items() if v is not None}
                )
            elif kind == "message_stop":
                finished = True
            elif kind == "error":
                raise self.reported_error(event.get("error"))
        if not finished:
            raise ProviderError(
                "the stream ended without message_stop",
                code="provider_stream_interrupted",
                location=self.url,
            )
        text = "".join(
            b.get("text", "") for _, b in sorted(blocks.items()) if b.get("type") == "text"
        )
        tool_calls = tuple(
            ToolCallRequest(
                b["id"],
                b["name"],
                parse_arguments(b["partial_json"])
                if b["partial_json"]
                else dict(b.get("input") or {}),
            )
            for _, b in sorted(blocks.items())
            if b.get("type") == "tool_use"
        )
        for call in tool_calls:
            yield ToolCallEvent(call)
        yield Completed(
            message=AssistantMessage(text=text, tool_calls=tool_calls),
            usage=anthropic_usage(usage_raw),
            stop_reason="tool_use" if stop == "tool_use" or tool_calls else "stop",
            provider=self.name,
            model=model,
            usage_reported="input_tokens" in usage_raw and "output_tokens" in usage_raw,
        )

    def completed_document(self, document: dict[str, Any]) -> Completed:
        """A ``message`` object (a request without ``stream``)."""
        blocks = list(document.get("content") or ())
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        tool_calls = tuple(
            ToolCallRequest(b["id"], b["name"], dict(b.get("input") or {}))
            for b in blocks
            if b.get("type") == "tool_use"
        )
        usage_raw = dict(document.get("usage") or {})
        return Completed(
            message=AssistantMessage(text=text, tool_calls=tool_calls),
            usage=anthropic_usage(usage_raw),
            stop_reason="tool_use" if tool_calls else "stop",
            provider=self.name,
            model=str(document.get("model") or self.spec.model),
            usage_reported="input_tokens" in usage_raw and "output_tokens" in usage_raw,
        )
