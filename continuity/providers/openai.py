"""OpenAI-compatible endpoints: Chat Completions and Responses, both streamed over SSE.

Any base URL works (OpenAI, vLLM, Ollama, llama.cpp server, OpenRouter). OpenAI counts
cached tokens inside its input count (``prompt_tokens_details.cached_tokens`` /
``input_tokens_details.cached_tokens``); usage is normalised so they are counted once,
under ``cache_read``.
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

__all__ = ["OpenAIChatProvider", "OpenAIResponsesProvider", "openai_usage"]


def openai_usage(input_tokens: int, cached: int, output: int) -> Usage:
    """OpenAI usage (cached tokens inside the input count) in normalised form."""
    cached = min(cached, input_tokens)
    return Usage(input=input_tokens - cached, cache_read=cached, output=output)


def _bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"} if key else {}


def _stream_error(data: dict[str, Any], where: str) -> ProviderError:
    error = data.get("error") or data.get("response", {}).get("error") or {}
    text = str(error.get("message", error)) if isinstance(error, dict) else str(error)
    code = str(error.get("code", "")) if isinstance(error, dict) else ""
    kind = "provider_quota_exhausted" if "quota" in code else "provider_stream_interrupted"
    return ProviderError(f"the stream reported an error: {text}", code=kind, location=where)


class OpenAIChatProvider(HttpProvider):
    """``POST {base}/chat/completions`` with ``stream: true`` and usage in the last chunk."""

    path = "/chat/completions"

    def headers(self) -> dict[str, str]:
        return _bearer(self.api_key())

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}]
        for message in request.messages:
            if isinstance(message, UserMessage):
                messages.append({"role": "user", "content": message.text})
            elif isinstance(message, ToolResultMessage):
                messages.append(
                    {"role": "tool", "tool_call_id": message.call_id, "content": message.text}
                )
            else:
                wire: dict[str, Any] = {"role": "assistant", "content": message.text or None}
                if message.tool_calls:
                    wire["tool_calls"] = [
                        {
                            "id": c.call_id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": msgspec.json.encode(c.arguments).decode(),
                            },
                        }
                        for c in message.tool_calls
                    ]
                messages.append(wire)
        body: dict[str, Any] = {
            "model": self.spec.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_completion_tokens": self.spec.max_output_tokens,
        }
        if self.spec.effort:
            body["reasoning_effort"] = self.spec.effort
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    },
                }
                for t in request.tools
            ]
        return body

    async def events(self, stream: AsyncIterator[tuple[str, str]]) -> AsyncIterator[ProviderEvent]:
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage = Usage()
        reported = False
        model = self.spec.model
        finish = None
        ended = False
        async for _, data in stream:
            if data.strip() == "[DONE]":
                ended = True
                break
            chunk = msgspec.json.decode(data)
            if "error" in chunk:
                raise _stream_error(chunk, self.url)
            model = chunk.get("model") or model
            if chunk.get("usage"):
                raw = chunk["usage"]
                reported = "prompt_tokens" in raw and "completion_tokens" in raw
                details = raw.get("prompt_tokens_details") or {}
                usage = openai_usage(
                    int(raw.get("prompt_tokens") or 0),
                    int(details.get("cached_tokens") or 0),
                    int(raw.get("completion_tokens") or 0),
                )
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    text.append(delta["content"])
                    yield TextDelta(delta["content"])
                for call in delta.get("tool_calls") or ():
                    slot = calls.setdefault(
                        int(call.get("index", 0)), {"id": "", "name": "", "arguments": ""}
                    )
                    function = call.get("function") or {}
                    slot["id"] = call.get("id") or slot["id"]
                    slot["name"] += function.get("name") or ""
                    slot["arguments"] += function.get("arguments") or ""
                finish = choice.get("finish_reason") or finish
        if not ended:
            raise ProviderError(
                "the stream ended without data: [DONE]",
                code="provider_stream_interrupted",
                location=self.url,
            )
        tool_calls = tuple(
            ToolCallRequest(c["id"] or f"call-{i}", c["name"], parse_arguments(c["arguments"]))
            for i, c in sorted(calls.items())
        )
        for call in tool_calls:
            yield ToolCallEvent(call)
        yield Completed(
            message=AssistantMessage(text="".join(text), tool_calls=tool_calls),
            usage=usage,
            stop_reason="tool_use" if tool_calls else "stop",
            provider=self.name,
            model=model,
            usage_reported=reported,
        )


class OpenAIResponsesProvider(HttpProvider):
    """``POST {base}/responses`` with ``stream: true``; the final message and usage come
    from ``response.completed``."""

    path = "/responses"

    def headers(self) -> dict[str, str]:
        return _bearer(self.api_key())

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        items: list[dict[str, Any]] = []
        for message in request.messages:
            if isinstance(message, UserMessage):
                items.append({"role": "user", "content": message.text})
            elif isinstance(message, ToolResultMessage):
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": message.call_id,
                        "output": message.text,
                    }
                )
            elif isinstance(message, AssistantMessage):
                if message.text:
                    items.append({"role": "assistant", "content": message.text})
                items.extend(
                    {
                        "type": "function_call",
                        "call_id": c.call_id,
                        "name": c.name,
                        "arguments": msgspec.json.encode(c.arguments).decode(),
                    }
                    for c in message.tool_calls
                )
        body: dict[str, Any] = {
            "model": self.spec.model,
            "instructions": request.system,
            "input": items,
            "stream": True,
            "store": False,
            "max_output_tokens": self.spec.max_output_tokens,
        }
        if self.spec.effort:
            body["reasoning"] = {"effort": self.spec.effort}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                }
                for t in request.tools
            ]
        return body

    async def events(self, stream: AsyncIterator[tuple[str, str]]) -> AsyncIterator[ProviderEvent]:
        text: list[str] = []
        final: dict[str, Any] | None = None
        async for _, data in stream:
            event = msgspec.json.decode(data)
            kind = event.get("type")
            if kind == "response.output_text.delta":
                text.append(event["delta"])
                yield TextDelta(event["delta"])
            elif kind in ("response.failed", "error"):
                raise _stream_error(event, self.url)
            elif kind in ("response.completed", "response.incomplete"):
                final = event["response"]
        if final is None:
            raise ProviderError(
                "the stream ended without response.completed",
                code="provider_stream_interrupted",
                location=self.url,
            )
        tool_calls = tuple(
            ToolCallRequest(item["call_id"], item["name"], parse_arguments(item["arguments"]))
            for item in final.get("output") or ()
            if item.get("type") == "function_call"
        )
        message_text = "".join(
            part.get("text", "")
            for item in final.get("output") or ()
            if item.get("type") == "message"
            for part in item.get("content") or ()
            if part.get("type") == "output_text"
        )
        if message_text != "".join(text):
            raise ProviderError(
                "response.completed disagrees with the streamed text",
                code="provider_stream_invalid",
                location=self.url,
            )
        for call in tool_calls:
            yield ToolCallEvent(call)
        raw = final.get("usage") or {}
        details = raw.get("input_tokens_details") or {}
        yield Completed(
            message=AssistantMessage(text=message_text, tool_calls=tool_calls),
            usage=openai_usage(
                int(raw.get("input_tokens") or 0),
                int(details.get("cached_tokens") or 0),
                int(raw.get("output_tokens") or 0),
            ),
            stop_reason="tool_use" if tool_calls else "stop",
            provider=self.name,
            model=str(final.get("model") or self.spec.model),
            usage_reported="input_tokens" in raw and "output_tokens" in raw,
        )
