"""CAP/0 messages and their JSON-RPC 2.0 framing (one message per line).

Methods (continuity -> adapter): ``initialize``, ``session/open``, ``turn/run``,
``turn/steer`` (sent while that ``turn/run`` is pending) and ``shutdown``; and, for the
v1 boundaries an adapter declares, ``session/compact`` (compact the session's context
now with the agent's own mechanism: ``compaction: manual``), ``session/switch_model``
(later requests of the session name another model: ``model_switch``) and
``context/inject`` (add a text to the session's context the way the agent documents:
``context_inject``); with ``session_tools``, ``session/open`` may carry more
``mcp_servers`` the new session offers besides those of ``initialize``. Restart is
not a method: continuity kills the adapter's process group and relaunches it with
``initialize`` carrying ``resume``. A new session is ``session/open`` with a new key.
A probe is an ordinary ``turn/run``. The adapter may send ``agent/event``
notifications (attested, never trusted as evidence).

Every line that is not a JSON-RPC 2.0 object of the expected shape is
``adapter_protocol_error``, located at the method (or ``stdout``).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from continuity.errors import AdapterError
from continuity.nesting import MAX_DEPTH, too_deep

__all__ = [
    "PROTOCOL",
    "AgentIdentity",
    "AgentInfo",
    "ApiName",
    "Capabilities",
    "CompactResult",
    "InitParams",
    "McpServer",
    "ModelEndpoint",
    "SteerResult",
    "TurnResult",
    "decode_line",
    "encode",
    "result_as",
]

PROTOCOL = "cap/0"


# The wire formats the model proxy serves (at one base URL ending in /v1).
ApiName = Literal["openai-chat", "openai-responses", "anthropic"]


class ModelEndpoint(msgspec.Struct, frozen=True, kw_only=True):
    api: ApiName = "openai-chat"  # the manifest's first: the format the agent speaks
    base_url: str
    api_key: str  # a dummy key: real credentials never reach the agent
    roles: dict[str, str] = msgspec.field(default_factory=dict)


class McpServer(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    transport: Literal["http"] = "http"
    url: str


class InitParams(msgspec.Struct, frozen=True, kw_only=True):
    protocol: str = PROTOCOL
    workspace: str  # an empty directory continuity owns (the agent's durable state)
    model: ModelEndpoint
    mcp_servers: list[McpServer] = msgspec.field(default_factory=list)
    identity: dict[str, str] = msgspec.field(default_factory=dict)
    resume: dict[str, str] | None = None  # {"session_id": ...} after a restart


class Capabilities(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=False):
    api: list[str] = msgspec.field(default_factory=lambda: ["openai-chat"])
    tools: Literal["mcp-http", "mcp-stdio", "harness-executed", "none"] = "mcp-http"
    steer: Literal["injected", "queued", "none"] = "none"
    parallel_tool_calls: bool = False
    resume_after_restart: bool = False
    new_session: bool = False
    # How the agent compacts its own context: on ``session/compact`` (manual), on its own
    # by a threshold (auto: observed at the probe turn), or not at all.
    compaction: Literal["manual", "auto", "none"] = "none"
    model_switch: bool = False  # it answers session/switch_model
    context_inject: bool = False  # it answers context/inject
    session_tools: bool = False  # session/open takes more mcp_servers


class AgentIdentity(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    version: str
    framework: str = ""


class AgentInfo(msgspec.Struct, frozen=True, kw_only=True):
    agent: AgentIdentity
    capabilities: Capabilities


class TurnResult(msgspec.Struct, frozen=True, kw_only=True):
    turn_id: str
    status: Literal["completed", "failed"]
    reply: dict[str, str] = msgspec.field(default_factory=dict)  # {"text": ...}
    error: str | None = None


class SteerResult(msgspec.Struct, frozen=True, kw_only=True):
    delivery: Literal["injected", "queued", "rejected"]


class CompactResult(msgspec.Struct, frozen=True, kw_only=True):
    compacted: bool  # what the adapter says; the proxy's observation decides


_encoder = msgspec.json.Encoder()


def encode(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as one line (no newline inside: JSON escapes them)."""
    return _encoder.encode(message) + b"\n"


def decode_line(line: bytes) -> dict[str, Any]:
    """One JSON-RPC 2.0 message from one line.

    Raises:
        AdapterError: ``adapter_protocol_error`` for anything else.
    """
    if too_deep(line):
        raise AdapterError(
            f"a line nesting deeper than {MAX_DEPTH} levels ({len(line):,} bytes)",
            code="adapter_protocol_error",
            location="stdout",
        )
    try:
        message = msgspec.json.decode(line)
    except msgspec.DecodeError:
        raise AdapterError(
            f"not JSON: {line[:80]!r}", code="adapter_protocol_error", location="stdout"
        ) from None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise AdapterError(
            f"not a JSON-RPC 2.0 message: {line[:80]!r}",
            code="adapter_protocol_error",
            location="stdout",
        )
    return message


def result_as(result: Any, kind: type[Any], method: str) -> Any:
    """`result` converted to `kind`, or ``adapter_protocol_error`` at `method`."""
    try:
        return msgspec.convert(result, kind)
    except msgspec.ValidationError as exc:
        raise AdapterError(
            f"the result does not fit CAP/0: {exc}", code="adapter_protocol_error", location=method
        ) from None
