"""OpenAI-compatible endpoints: Chat Completions and Responses, both streamed over SSE.

Any base URL works (OpenAI, vLLM, Ollama, llama.cpp server, OpenRouter). OpenAI counts
cached tokens inside its input count (``prompt_tokens_details.cached_tokens`` /
``input_tokens_details.cached_tokens``); usage is normalised so they are counted once,
under ``cache_read``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

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

__all__ = [
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "chat_messages",
    "openai_usage",
    "output_cap_field",
]

# Hosts of the OpenAI API itself, where Chat Completions takes the output cap as
# ``max_completion_tokens`` (``max_tokens`` is deprecated there and refused by reasoning
# models). Every other OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio,
# OpenRouter) honours ``max_tokens``; llama-cpp-python ignores ``max_completion_tokens``.
_OPENAI_HOSTS = ("api.openai.com",)
# Azure OpenAI's hosts (its resources and AI Foundry's), which follow the OpenAI API.
_AZURE_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")


def output_cap_field(base_url: str) -> str:
    """The Chat Completions field that carries the output cap at `base_url`."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host in _OPENAI_HOSTS or host.endswith(_AZURE_SUFFIXES):
        return "max_completion_tokens"
    return "max_tokens"


def chat_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """`request` as Chat Completions messages, in the shape every server accepts.

    An assistant turn that only calls tools carries ``"content": ""``, never ``null``
    and never no ``content`` at all: llama.cpp's server refuses ``null`` (its request
    model types ``content`` as a string), and chat templates that read every message's
    ``content`` (SmolLM2's, through llama-cpp-python) fail on a message without one,
    which the server reports only by ending the stream. The OpenAI API, vLLM and Ollama
    take an empty string beside ``tool_calls``. An empty system prompt is left out.
    """
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": message.text})
        elif isinstance(message, ToolResultMessage):
            messages.append(
                {"role": "tool", "tool_call_id": message.call_id, "content": message.text}
            )
        else:
            messages.append(_assistant(message))
    return messages


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": "assistant", "content": message.text}
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
    return wire


def openai_usage(input_tokens: int, cached: int, output: int) -> Usage:
    """OpenAI usage (cached tokens inside the input count) in normalised form."""
    cached = min(cached, input_tokens)
    return Usage(input=input_tokens - cached, cache_read=cached, output=output)


def _bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"} if key else {}


class OpenAIChatProvider(HttpProvider):
    """``POST {base}/chat/completions`` with ``stream: true`` and usage in the last chunk."""

    path = "/chat/completions"

    def headers(self) -> dict[str, str]:
        return _bearer(self.api_key())

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.spec.model,
            "messages": chat_messages(request),
            "stream": True,
            "stream_options": {"include_usage": True},
            output_cap_field(self.spec.base_url): self.spec.max_output_tokens,
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
                raise self.reported_error(chunk.get("error"))
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
                    self.count_output(delta["content"])
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

    def completed_document(self, document: dict[str, Any]) -> Completed:
        """A ``chat.completion`` object (a request without ``stream``)."""
        choices = document.get("choices") or [{}]
        message = choices[0].get("message") or {}
        tool_calls = tuple(
            ToolCallRequest(
                c.get("id") or f"call-{i}",
                (c.get("function") or {})["name"],
                parse_arguments((c.get("function") or {}).get("arguments") or ""),
            )
            for i, c in enumerate(message.get("tool_calls") or ())
        )
        raw = document.get("usage") or {}
        details = raw.get("prompt_tokens_details") or {}
        return Completed(
            message=AssistantMessage(text=message.get("content") or "", tool_calls=tool_calls),
            usage=openai_usage(
                int(raw.get("prompt_tokens") or 0),
                int(details.get("cached_tokens") or 0),
                int(raw.get("completion_tokens") or 0),
            ),
            stop_reason="tool_use" if tool_calls else "stop",
            provider=self.name,
            model=str(document.get("model") or self.spec.model),
            usage_reported="prompt_tokens" in raw and "completion_tokens" in raw,
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
            "input": items,
            "stream": True,
            "store": False,
            "max_output_tokens": self.spec.max_output_tokens,
        }
        if request.system:
            body["instructions"] = request.system
        if self.spec.effort:
            body["reasoning"] = {"effort": self.spec.effort}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                    # Responses makes function tools strict unless told otherwise, and
                    # strict mode would refuse the schemas of tools it did not write.
                    "strict": False,
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
                self.count_output(event["delta"])
                text.append(event["delta"])
                yield TextDelta(event["delta"])
            elif kind in ("response.failed", "error"):
                raise self.reported_error(
                    event.get("error") or (event.get("response") or {}).get("error")
                )
            elif kind in ("response.completed", "response.incomplete"):
                final = event["response"]
        if final is None:
            raise ProviderError(
                "the stream ended without response.completed",
                code="provider_stream_interrupted",
                location=self.url,
            )
        completed = self.completed_document(final)
        if completed.message.text != "".join(text):
            raise ProviderError(
                "response.completed disagrees with the streamed text",
                code="provider_stream_invalid",
                location=self.url,
            )
        for call in completed.message.tool_calls:
            yield ToolCallEvent(call)
        yield completed

    def completed_document(self, document: dict[str, Any]) -> Completed:
        """A ``response`` object (``response.completed``'s, or a request without
        ``stream``)."""
        output = document.get("output") or ()
        tool_calls = tuple(
            ToolCallRequest(item["call_id"], item["name"], parse_arguments(item["arguments"]))
            for item in output
            if item.get("type") == "function_call"
        )
        message_text = "".join(
            part.get("text", "")
            for item in output
            if item.get("type") == "message"
            for part in item.get("content") or ()
            if part.get("type") == "output_text"
        )
        raw = document.get("usage") or {}
        details = raw.get("input_tokens_details") or {}
        return Completed(
            message=AssistantMessage(text=message_text, tool_calls=tool_calls),
            usage=openai_usage(
                int(raw.get("input_tokens") or 0),
                int(details.get("cached_tokens") or 0),
                int(raw.get("output_tokens") or 0),
            ),
            stop_reason="tool_use" if tool_calls else "stop",
            provider=self.name,
            model=str(document.get("model") or self.spec.model),
            usage_reported="input_tokens" in raw and "output_tokens" in raw,
        )
