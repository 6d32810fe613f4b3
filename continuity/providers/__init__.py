"""Model providers behind one async, streaming protocol."""

from continuity.providers.protocol import (
    Completed,
    Provider,
    ProviderEvent,
    TextDelta,
    ToolCallEvent,
    complete,
)
from continuity.providers.scripted import RequestRecord, ScriptedProvider, ScriptedStep

__all__ = [
    "Completed",
    "Provider",
    "ProviderEvent",
    "RequestRecord",
    "ScriptedProvider",
    "ScriptedStep",
    "TextDelta",
    "ToolCallEvent",
    "attempts",
    "cache",
    "complete",
    "costcap",
    "efforts",
    "endpoint",
    "endpoint_facts",
    "http",
    "openai",
    "protocol",
    "rates",
    "real",
    "scripted",
    "shared_accounts",
    "shared_ledger",
    "window",
]
