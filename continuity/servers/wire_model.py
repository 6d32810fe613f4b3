"""The scripted model behind the loopback wire server, whatever format it is asked in.

It owns which model is listed (`model_list`), what the model reads from a request
(`conversation`: the last user text, whether ConversationHistory is offered and whether
a tool was already called this turn), what it answers (`scripted_reply`), how usage is
counted (`tokens`, like Pi's faux provider: ``ceil(chars / 4)``) and how a reply is cut
into stream deltas (`pieces`). The format modules (`wire_chat`, `wire_responses`,
`wire_anthropic`) only dress the reply.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from continuity.memory.ledger_prompt import excerpt_delta, offered_parts

__all__ = [
    "HISTORY_TOOL",
    "SECTIONS",
    "Events",
    "Usage",
    "conversation",
    "model_list",
    "output_cap",
    "pieces",
    "scripted_reply",
    "tokens",
]

HISTORY_TOOL = "ConversationHistory"
SECTIONS = (
    "Goal",
    "Constraints & Preferences",
    "Progress",
    "Key Decisions",
    "Next Steps",
    "Critical Context",
)

# A streamed reply: (SSE event name, or "" for none; the data line), in wire order.
Events = list[tuple[str, str]]


class Usage(NamedTuple):
    """A reply's token counts: the whole request, its prefix cached, the output."""

    total: int
    cached: int
    output: int


def tokens(chars: int) -> int:
    """Tokens for `chars` characters, rounded up (four characters a token)."""
    return -(-chars // 4)


def output_cap(path: str, body: dict[str, Any], default: int = 4096) -> int:
    """The output cap a request asks for, in its format's field (`default` when it names
    none; Chat's ``max_completion_tokens`` counts as well as ``max_tokens``)."""
    names = {
        "/chat/completions": ("max_tokens", "max_completion_tokens"),
        "/responses": ("max_output_tokens",),
        "/messages": ("max_tokens",),
    }
    route = next((r for r in names if path.endswith(r)), "/chat/completions")
    for name in names[route]:
        value = body.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default


def model_list(model: str, context_window: int | None = None) -> dict[str, Any]:
    """``GET /v1/models``: the served `model`, in OpenAI's list format, with the fields
    Anthropic's model list adds (``type``, ``display_name``, ``created_at``, paging), so
    either SDK reads it; with a `context_window`, vLLM's ``max_model_len`` too."""
    entry: dict[str, Any] = {
        "id": model,
        "object": "model",
        "created": 0,
        "owned_by": "continuity-loopback",
        "type": "model",
        "display_name": model,
        "created_at": "1970-01-01T00:00:00Z",
    }
    if context_window is not None:
        entry["max_model_len"] = context_window
    return {
        "object": "list",
        "data": [entry],
        "has_more": False,
        "first_id": model,
        "last_id": model,
    }


def pieces(text: str, size: int = 7) -> list[str]:
    """`text` cut into stream deltas of `size` characters (one empty delta for "")."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def scripted_reply(text: str, offered: bool, called: bool) -> tuple[str, dict[str, Any] | None]:
    """The model's answer to the last user `text`: (text, tool call arguments or None).

    A ledger extraction request (it offers records under their headers) gets the faux
    extractor's delta (`continuity.memory.ledger_prompt.excerpt_delta`); a compaction
    request (it asks for a summary, no tool offered) gets the summary section skeleton;
    an offered history tool not yet called this turn is called with the question's last
    words; anything else is answered ``UNKNOWN``, on an answer line (``ANSWER: UNKNOWN``)
    when the text asks for one, as a model that reads its instruction would.
    """
    if not offered and offered_parts(text):
        return excerpt_delta(text), None
    if "summar" in text.lower() and not offered:
        return "\n".join(f"## {s}\n(summary from the loopback model)" for s in SECTIONS), None
    if offered and not called:
        words = " ".join(text.replace(":", " ").split()[-8:])
        return "", {"action": "search", "query": words, "limit": 5}
    return ("ANSWER: UNKNOWN" if "ANSWER: <value>" in text else "UNKNOWN"), None


def conversation(path: str, body: dict[str, Any]) -> tuple[str, bool, bool]:
    """(last user text, history tool offered, a tool was already called this turn)."""
    tools = body.get("tools") or []
    names = {t.get("name") or (t.get("function") or {}).get("name") for t in tools}
    offered = HISTORY_TOOL in names
    if path.endswith("/responses"):
        text, called = _responses_turn(body)
    else:
        text, called = _messages_turn(body.get("messages") or [])
    return text, offered, called


def _responses_turn(body: dict[str, Any]) -> tuple[str, bool]:
    """An OpenAI Responses input: (last user text, a function call output follows it)."""
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    user = [i for i, m in enumerate(items) if m.get("role") == "user"]
    last = user[-1] if user else -1
    text = str(items[last].get("content", "")) if user else ""
    called = any(m.get("type") == "function_call_output" for m in items[last + 1 :])
    return text, called


def _user_text(message: dict[str, Any]) -> str | None:
    """A user message's text (its last text block), or None for any other message."""
    content = message.get("content")
    if message.get("role") != "user":
        return None
    if isinstance(content, str):
        return content
    texts = [c.get("text", "") for c in content or [] if c.get("type") == "text"]
    return texts[-1] if texts else None


def _calls_a_tool(message: dict[str, Any]) -> bool:
    """A tool result (Chat), or an assistant turn with tool calls (Chat or Anthropic)."""
    if message.get("role") in ("tool",):
        return True
    if message.get("role") != "assistant":
        return False
    if message.get("tool_calls"):
        return True
    blocks = message.get("content") or []
    return any(c.get("type") == "tool_use" for c in blocks if isinstance(c, dict))


def _messages_turn(messages: list[dict[str, Any]]) -> tuple[str, bool]:
    """Chat or Anthropic messages: (last user text, a tool was called since it)."""
    last, text = -1, ""
    for index, message in enumerate(messages):
        found = _user_text(message)
        if found is not None:
            last, text = index, found
    after = messages[last + 1 :] if last >= 0 else []
    called = any(_calls_a_tool(m) for m in after)
    if last >= 0 and not isinstance(messages[last].get("content"), str):
        called = called or any(
            c.get("type") == "tool_result" for c in messages[last].get("content") or []
        )
    return text, called
