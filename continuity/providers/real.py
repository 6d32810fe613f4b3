"""Construct a real provider for an endpoint binding."""

from __future__ import annotations

import httpx

from continuity.providers.endpoint import EndpointSpec
from continuity.providers.http import HttpProvider

__all__ = ["make_provider"]


def make_provider(
    spec: EndpointSpec, *, transport: httpx.AsyncBaseTransport | None = None
) -> HttpProvider:
    """The provider for `spec.kind` (the credentials file is read on the first call)."""
    if spec.kind == "anthropic":
        from continuity.providers.anthropic import AnthropicProvider

        return AnthropicProvider(spec, transport=transport)
    from continuity.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider

    if spec.kind == "openai-responses":
        return OpenAIResponsesProvider(spec, transport=transport)
    return OpenAIChatProvider(spec, transport=transport)
