"""The deterministic continuity pack: a bounded digest of retained evidence.

No model writes it (no paid upkeep). It has four sections, each with a share of an
8,000-token budget (unused share rolls forward): **owner** (owner turns and owner
steers, newest first), **tool** (heads of tool results, newest first), **generated
summary** (a deterministic digest of the assistant's own recent statements) and
**neutral** (live input of unknown authorship). Items carry packed ids (``c31``) that
ConversationHistory's ``get`` accepts.

The receipt is content-free: section counts, omissions, token estimates and the number
of included items whose text is already in context (uncertain overlap). A pack whose
source is unavailable, or that leaves no headroom in the reader's window, is invalid;
running over the budget is expected and recorded as omissions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from continuity.memory.history import CanonicalHistory
from continuity.memory.retained import RetainedStore
from continuity.messages import Message, UserMessage

__all__ = [
    "PACK_BUDGET_TOKENS",
    "PACK_HEADER",
    "PACK_RETRIEVAL_GUIDANCE",
    "Pack",
    "PackReceipt",
    "PackSection",
    "build_pack",
    "invalid_pack",
    "is_pack",
]

PACK_BUDGET_TOKENS = 8_000
PACK_HEADER = "<continuity-pack v1>"
# How to reach what the pack only points at. Value-free (it names no record), and
# rendered only when the reader may call ConversationHistory in lookup mode: it is the
# treatment a cross-checkout comparison attributes (`continuity.roles.guidance`).
PACK_RETRIEVAL_GUIDANCE = (
    "Retrieval: items are clipped; a bracketed id such as [c31] is a packed record id. "
    'To read that record in full, call ConversationHistory with action "get" and id "c31". '
    'When the pack lacks what you need, call it with action "search" first, then "get".'
)
_SHARES = (("owner", 0.40), ("tool", 0.35), ("summary", 0.15), ("neutral", 0.10))
_FRAME_TOKENS = 64
_ITEM_CHARS = {"owner": 600, "tool": 480, "summary": 300, "neutral": 300}
_TITLES = {
    "owner": "Owner",
    "tool": "Tool results",
    "summary": "Generated summary",
    "neutral": "Neutral",
}


class PackSection(msgspec.Struct, frozen=True):
    name: str
    included: int
    omitted: int
    tokens: int


class PackReceipt(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = "continuity-pack-receipt-v1"
    status: Literal["ok", "overflow", "invalid"]
    reason: str | None = None
    budget_tokens: int
    total_tokens: int
    sections: list[PackSection]
    omitted_credential_results: int
    uncertain_overlap: int


class Pack(msgspec.Struct, frozen=True):
    text: str
    receipt: PackReceipt

    def message(self) -> UserMessage:
        return UserMessage(text=self.text, attribution="host", source="pack")


def is_pack(message: Message) -> bool:
    return isinstance(message, UserMessage) and message.text.startswith(PACK_HEADER)


def _tokens(text: str) -> int:
    return -(-len(text) // 4)


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def invalid_pack(reason: str) -> Pack:
    return Pack(
        "",
        PackReceipt(
            status="invalid",
            reason=reason,
            budget_tokens=PACK_BUDGET_TOKENS,
            total_tokens=0,
            sections=[],
            omitted_credential_results=0,
            uncertain_overlap=0,
        ),
    )


def build_pack(
    store: RetainedStore | None,
    history: CanonicalHistory,
    *,
    context: Sequence[Message] = (),
    budget_tokens: int = PACK_BUDGET_TOKENS,
    window_tokens: int | None = None,
    context_tokens: int = 0,
    lookup_history: bool = False,
) -> Pack:
    """Build the pack from retained evidence and canonical history.

    Args:
        lookup_history: the reader may look records up with ConversationHistory in
            lookup mode; a renderer that carries retrieval guidance renders it only
            then (recall-only packs never change).
    """
    if store is None:
        return invalid_pack("source_unavailable")
    try:
        owner = [(rid, text) for rid, _, _, text in store.records("owner")]
        tools = [(rid, f"{source}: {text}") for rid, _, source, text in store.records("tool")]
        stats = store.stats()
    except Exception:  # an unreadable store is a source failure, never an empty pack
        return invalid_pack("source_unavailable")
    packed = {rid: f"c{int(rid.split('-')[1])}" for rid, _ in owner + tools}
    assistant = [r.text for r in history.records if r.role == "assistant"]
    neutral = [r.text for r in history.records if r.role == "user" and r.attribution == "unknown"]
    candidates: dict[str, list[str]] = {
        "owner": [f"[{packed[rid]}] {_clip(t, _ITEM_CHARS['owner'])}" for rid, t in owner],
        "tool": [f"[{packed[rid]}] {_clip(t, _ITEM_CHARS['tool'])}" for rid, t in tools],
        "summary": [_clip(t, _ITEM_CHARS["summary"]) for t in assistant],
        "neutral": [_clip(t, _ITEM_CHARS["neutral"]) for t in neutral],
    }
    in_context = "\n".join(getattr(m, "text", "") for m in context)
    sections: list[PackSection] = []
    rendered: list[str] = [PACK_HEADER]
    items_budget = budget_tokens - _FRAME_TOKENS  # header, section titles, closing tag
    if lookup_history:
        rendered.append(PACK_RETRIEVAL_GUIDANCE)
        items_budget -= _tokens(PACK_RETRIEVAL_GUIDANCE) + 1  # the guidance is framing too
    carry = 0
    overlap = 0
    for name, share in _SHARES:
        allowance = int(items_budget * share) + carry
        chosen: list[str] = []
        used = 0
        for item in reversed(candidates[name]):  # newest first
            cost = _tokens(item) + 1
            if used + cost > allowance:
                break
            chosen.append(item)
            used += cost
        chosen.reverse()  # rendered in conversation order
        carry = allowance - used
        overlap += sum(1 for item in chosen if item.split("] ", 1)[-1][:80] in in_context)
        sections.append(PackSection(name, len(chosen), len(candidates[name]) - len(chosen), used))
        body = "\n".join(f"- {c}" for c in chosen) or "- (none)"
        rendered.append(f"## {_TITLES[name]}\n{body}")
    rendered.append("</continuity-pack>")
    text = "\n".join(rendered)
    total = _tokens(text)
    if window_tokens is not None and context_tokens + total > window_tokens:
        return invalid_pack("headroom")
    status: Literal["ok", "overflow"] = "overflow" if any(s.omitted for s in sections) else "ok"
    return Pack(
        text,
        PackReceipt(
            status=status,
            budget_tokens=budget_tokens,
            total_tokens=total,
            sections=sections,
            omitted_credential_results=stats.omitted_tool_results,
            uncertain_overlap=overlap,
        ),
    )
