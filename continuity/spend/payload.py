"""The final payload of a guarded request: its allowlists, its framing H and its U.

A guarded request's payload is an OpenAI Responses body (what Codex's request builder
sends). Before admission the guard checks it and computes

    U_k = UTF8Bytes(JSON(final payload)) + sum(previous settled raw output tokens
          in this probe run) + H(final payload)

against the envelope I. Everything here is a refusal *before* admission
(``refused_pre_send``: no hold, no send, no pilot stop), coded
``lookup_payload_invalid`` with the offending path as its location:

- **top-level keys** are allowlisted (`TOP_LEVEL_KEYS`); stored-input expansion fields
  (``conversation``, ``prompt``, ``background``, ``truncation``,
  ``previous_response_id``) are named as such; ``stream`` must be true and ``store``,
  when given, false;
- **input items** are messages (text content only: an image, a file, audio or any
  remote content is refused), function calls, function-call outputs (text) and
  reasoning items, each with its own key allowlist; any other item type is refused;
- **reasoning**: opaque reasoning (a reasoning item) is refused in a run's first
  payload; later, its ``content`` may be absent, null, empty, or one
  ``{"type": "reasoning_text", "text": ...}`` item, and all of its bytes count in U;
- **tools** are function tools only.

H (`framing`) follows assumed-v1: 4,096 per request, 256 per input item (a reasoning
item is an input item too), 1,024 per reasoning item, 1,024 per tool, 256 per schema
property counted recursively through every tool's parameters, and 4,096 when the
payload has ``instructions``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from continuity.errors import SpendError
from continuity.spend.assumptions import Assumptions

__all__ = [
    "EXPANSION_KEYS",
    "TOP_LEVEL_KEYS",
    "Admission",
    "admission_size",
    "body_digest",
    "check_payload",
    "framing",
    "schema_properties",
]

TOP_LEVEL_KEYS = frozenset(
    {
        "model",
        "instructions",
        "input",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "store",
        "stream",
        "include",
        "prompt_cache_key",
        "text",
        "max_output_tokens",
    }
)
EXPANSION_KEYS = frozenset(
    {"conversation", "prompt", "background", "truncation", "previous_response_id"}
)
_MESSAGE_KEYS = frozenset({"type", "role", "content", "id", "status"})
_ROLES = frozenset({"user", "assistant", "system", "developer"})
_TEXT_PARTS = frozenset({"input_text", "output_text"})
_PART_KEYS = frozenset({"type", "text", "annotations"})
_ITEM_KEYS = {
    "function_call": frozenset({"type", "call_id", "name", "arguments", "id", "status"}),
    "function_call_output": frozenset({"type", "call_id", "output", "id", "status"}),
    "reasoning": frozenset({"type", "id", "summary", "encrypted_content", "content"}),
}
_TOOL_KEYS = frozenset({"type", "name", "description", "parameters", "strict"})


class Admission(msgspec.Struct, frozen=True, kw_only=True):
    """What admission computed for one payload (content-free)."""

    body_bytes: int
    prior_output: int
    framing: int
    u: int  # U_k, in tokens (bytes stand in for tokens: input tokens <= UTF-8 bytes)
    digest: str  # sha256 of the serialized body


def _check_keys(value: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    for key in value:
        if key not in allowed:
            raise SpendError(
                f"{key!r} is not an allowed key here",
                code="lookup_payload_invalid",
                location=f"{where}.{key}",
                outcome="refused_pre_send",
            )


def _check_text(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise SpendError(
            "expected text",
            code="lookup_payload_invalid",
            location=where,
            outcome="refused_pre_send",
        )


def _check_message(item: Mapping[str, Any], where: str) -> None:
    _check_keys(item, _MESSAGE_KEYS, where)
    if item.get("type", "message") != "message" or item.get("role") not in _ROLES:
        raise SpendError(
            "a message needs a known role",
            code="lookup_payload_invalid",
            location=f"{where}.role",
            outcome="refused_pre_send",
        )
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise SpendError(
            "message content must be text or a list of text parts",
            code="lookup_payload_invalid",
            location=where,
            outcome="refused_pre_send",
        )
    for index, part in enumerate(content):
        at = f"{where}.content[{index}]"
        if not isinstance(part, dict) or part.get("type") not in _TEXT_PARTS:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise SpendError(
                f"content part {kind!r} is refused (text parts only)",
                code="lookup_payload_invalid",
                location=at,
                outcome="refused_pre_send",
            )
        _check_keys(part, _PART_KEYS, at)
        _check_text(part.get("text"), f"{at}.text")


def _check_reasoning(item: Mapping[str, Any], where: str, first: bool) -> None:
    if first:
        raise SpendError(
            "opaque reasoning is refused in a run's first payload",
            code="lookup_payload_invalid",
            location=where,
            outcome="refused_pre_send",
        )
    content = item.get("content")
    if content is None or content == []:
        return
    ok = (
        isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], dict)
        and set(content[0]) == {"type", "text"}
        and content[0]["type"] == "reasoning_text"
        and isinstance(content[0]["text"], str)
    )
    if not ok:
        raise SpendError(
            "reasoning content must be absent, empty or one reasoning_text",
            code="lookup_payload_invalid",
            location=where,
            outcome="refused_pre_send",
        )


def _check_item(item: Any, where: str, first: bool) -> bool:
    """Check one input item; True when it is a reasoning item."""
    if not isinstance(item, dict):
        raise SpendError(
            "an input item must be an object",
            code="lookup_payload_invalid",
            location=where,
            outcome="refused_pre_send",
        )
    kind = item.get("type", "message")
    if kind == "message":
        _check_message(item, where)
        return False
    if kind not in _ITEM_KEYS:
        raise SpendError(
            f"input item type {kind!r} is not supported",
            code="lookup_payload_invalid",
            location=f"{where}.type",
            outcome="refused_pre_send",
        )
    _check_keys(item, _ITEM_KEYS[kind], where)
    if kind == "reasoning":
        _check_reasoning(item, where, first)
        return True
    if kind == "function_call_output":
        _check_text(item.get("output"), f"{where}.output")
    return False


def _check_tools(tools: Any) -> None:
    if not isinstance(tools, list):
        raise SpendError(
            "tools must be a list",
            code="lookup_payload_invalid",
            location="payload.tools",
            outcome="refused_pre_send",
        )
    for index, tool in enumerate(tools):
        at = f"payload.tools[{index}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else type(tool).__name__
            raise SpendError(
                f"tool type {kind!r} is refused (function tools only)",
                code="lookup_payload_invalid",
                location=at,
                outcome="refused_pre_send",
            )
        _check_keys(tool, _TOOL_KEYS, at)


def check_payload(payload: Mapping[str, Any], *, first: bool) -> None:
    """Refuse a payload outside the allowlists (`first`: the run's first request).

    Raises:
        SpendError: ``lookup_payload_invalid`` (outcome ``refused_pre_send``).
    """
    for key in payload:
        if key in EXPANSION_KEYS:
            raise SpendError(
                f"stored-input expansion field {key!r} is refused",
                code="lookup_payload_invalid",
                location=f"payload.{key}",
                outcome="refused_pre_send",
            )
    _check_keys(payload, TOP_LEVEL_KEYS, "payload")
    if payload.get("stream") is not True:
        raise SpendError(
            "a guarded request streams (stream: true)",
            code="lookup_payload_invalid",
            location="payload.stream",
            outcome="refused_pre_send",
        )
    if payload.get("store", False) is not False:
        raise SpendError(
            "a guarded request is not stored (store: false)",
            code="lookup_payload_invalid",
            location="payload.store",
            outcome="refused_pre_send",
        )
    items = payload.get("input")
    if not isinstance(items, list):
        raise SpendError(
            "input must be a list of items",
            code="lookup_payload_invalid",
            location="payload.input",
            outcome="refused_pre_send",
        )
    for index, item in enumerate(items):
        _check_item(item, f"payload.input[{index}]", first)
    if "tools" in payload:
        _check_tools(payload["tools"])


def schema_properties(schema: Any) -> int:
    """Every property of a JSON schema, counted through nested objects, arrays and
    combinators (any ``properties`` object anywhere counts its keys)."""
    if isinstance(schema, list):
        return sum(schema_properties(value) for value in schema)
    if not isinstance(schema, dict):
        return 0
    found = schema.get("properties")
    own = len(found) if isinstance(found, dict) else 0
    return own + sum(schema_properties(value) for value in schema.values())


def framing(payload: Mapping[str, Any], assumptions: Assumptions) -> int:
    """H: the registered framing allowance of `payload`, in tokens."""
    h = assumptions.framing
    items: Sequence[Any] = payload.get("input") or ()
    tools: Sequence[Any] = payload.get("tools") or ()
    reasoning = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "reasoning")
    properties = sum(schema_properties(t.get("parameters")) for t in tools if isinstance(t, dict))
    return (
        h.per_request
        + h.per_input_item * len(items)
        + h.per_reasoning_item * reasoning
        + h.per_tool * len(tools)
        + h.per_schema_property * properties
        + (h.instructions if "instructions" in payload else 0)
    )


def body_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def admission_size(
    payload: Mapping[str, Any], body: bytes, prior_output: int, assumptions: Assumptions
) -> Admission:
    """U_k of `payload` serialized as `body`, after `prior_output` settled output tokens."""
    h = framing(payload, assumptions)
    return Admission(
        body_bytes=len(body),
        prior_output=prior_output,
        framing=h,
        u=len(body) + prior_output + h,
        digest=body_digest(body),
    )
