"""Upkeep source selection: which spans of which retained records one ledger upkeep
pass offers its extractor. Deterministic and provider-free: it reads sizes, kinds,
ordinals, attestation and offer history, never a word of the text.

A source's text is cut into **spans** (`spans_of`): an owner record gives one span per
paragraph (blank-line separated), a tool result packs its paragraphs into spans of at
most 4 KiB; a paragraph longer than that is cut at whitespace. A span is offered at
most once: a dispatched offer is settled for good (a failed extraction leaves a gap,
never a repeat), a released one was never offered.

One pass (`select_offer`), over the never-offered spans:

1. **Delta cap**: at most ``max_spans`` spans, and never more than half of the
   never-offered spans (rounded up), so three boundaries over one history each have new
   material to offer.
2. **Budget**: the request must fit the pass's input reservation less a tenth kept as
   headroom (for the tokenizer and the wire encoding, which escapes newlines and
   quotes); every span costs its bytes plus a fixed header, at four bytes a token,
   after the prompt frame and the rendered ledger (`fixed_tokens`).
3. **Oldest-never-offered fitting reservation**: the oldest never-offered span that fits
   a one-span allowance takes the first slot, so old material is reached even when
   newer material would fill every pass.
4. **Round robin** over the owner and tool queues (owner first), each newest first
   (within a record, its spans in order); a span that does not fit the remaining budget
   is skipped, the next one tried.
5. **Bounded bonus**: never-offered, host-attested owner paragraphs of at most 256 UTF-8
   bytes get a score bonus that admits up to ``bonus_cap`` of them beside the delta cap
   (oldest first, within the budget). The bonus is a band of its own, so it never
   displaces a span the base selection offers; it has no vocabulary and no tool-header
   priority.

The offer is returned in source order (ordinal, then span index): extraction inputs are
source-ordered. A pass with nothing to offer says why: ``no_source`` (no retained
record), ``already_covered`` (every span was offered) or ``input_budget`` (the frame and
ledger leave no room for one span).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

import msgspec

from continuity.digest import digest_bytes, value_digest
from continuity.memory.upkeep_sources import SourceDescriptor

__all__ = [
    "BOOTSTRAP_CAPS",
    "HEADROOM_DIVISOR",
    "INCREMENTAL_CAPS",
    "SHORT_OWNER_BYTES",
    "SPAN_BYTES",
    "SPAN_FRAME_BYTES",
    "Offer",
    "SelectionCaps",
    "Span",
    "caps_for",
    "select_offer",
    "span_cost",
    "spans_of",
]

SPAN_BYTES = 4096
SHORT_OWNER_BYTES = 256
SPAN_FRAME_BYTES = 48  # the span's header line in the extraction request
HEADROOM_DIVISOR = 10  # a tenth of the input reservation is never budgeted
_PARAGRAPHS = re.compile(r"\n[ \t]*\n+")


class SelectionCaps(msgspec.Struct, frozen=True, kw_only=True):
    """One pass's caps and budget (`caps_for`: bootstrap or incremental)."""

    kind: Literal["bootstrap", "incremental"]
    input_tokens: int  # the pass's input reservation
    output_tokens: int
    max_spans: int
    share_numerator: int = 1  # at most this share of the never-offered spans, rounded up
    share_denominator: int = 2
    bonus_cap: int = 8


BOOTSTRAP_CAPS = SelectionCaps(
    kind="bootstrap", input_tokens=128_000, output_tokens=4_096, max_spans=256
)
INCREMENTAL_CAPS = SelectionCaps(
    kind="incremental", input_tokens=64_000, output_tokens=4_096, max_spans=128
)


def caps_for(kind: Literal["bootstrap", "incremental"]) -> SelectionCaps:
    return BOOTSTRAP_CAPS if kind == "bootstrap" else INCREMENTAL_CAPS


class Span(msgspec.Struct, frozen=True, kw_only=True):
    ordinal: int
    index: int
    kind: Literal["owner", "tool"]
    text: str
    bytes: int
    digest: str
    short_owner: bool  # a host-attested owner paragraph of at most 256 bytes

    @property
    def slot(self) -> tuple[int, int]:
        return (self.ordinal, self.index)


class Offer(msgspec.Struct, frozen=True, kw_only=True):
    """The spans one pass offers, in source order, and its content-free projection."""

    spans: tuple[Span, ...]
    limit: int
    budget_bytes: int
    bonus: int  # spans admitted by the bonus band
    projected_tokens: int  # fixed tokens plus the spans' cost

    @property
    def owner_ordinals(self) -> list[int]:
        return sorted({s.ordinal for s in self.spans if s.kind == "owner"})

    @property
    def tool_ordinals(self) -> list[int]:
        return sorted({s.ordinal for s in self.spans if s.kind == "tool"})

    @property
    def digest(self) -> str:
        return value_digest(("continuity-upkeep-offer", [(s.slot, s.digest) for s in self.spans]))


def _cut(text: str, limit: int) -> list[str]:
    """`text` in pieces of at most `limit` UTF-8 bytes, cut at whitespace where one is
    near the limit, never inside a character."""
    pieces = []
    rest = text
    while len(rest.encode("utf-8")) > limit:
        head = rest.encode("utf-8")[:limit].decode("utf-8", errors="ignore")
        cut = max(head.rfind(" "), head.rfind("\n"))
        if cut < len(head) // 2:
            cut = len(head)
        pieces.append(head[:cut].strip())
        rest = rest[cut:].lstrip()
    if rest.strip():
        pieces.append(rest.strip())
    return [p for p in pieces if p]


def _pack(paragraphs: list[str], limit: int) -> list[str]:
    spans: list[str] = []
    current = ""
    for paragraph in paragraphs:
        candidate = f"{current}\n\n{paragraph}" if current else paragraph
        if len(candidate.encode("utf-8")) <= limit:
            current = candidate
            continue
        if current:
            spans.append(current)
        current = paragraph
    if current:
        spans.append(current)
    return spans


def spans_of(descriptor: SourceDescriptor, text: str) -> list[Span]:
    """The spans of one source, in text order."""
    paragraphs: list[str] = []
    for paragraph in _PARAGRAPHS.split(text):
        paragraphs.extend(_cut(paragraph.strip(), SPAN_BYTES))
    pieces = paragraphs if descriptor.kind == "owner" else _pack(paragraphs, SPAN_BYTES)
    attested = descriptor.kind == "owner" and descriptor.attestation == "host"
    spans = []
    for index, piece in enumerate(pieces):
        data = piece.encode("utf-8")
        spans.append(
            Span(
                ordinal=descriptor.ordinal,
                index=index,
                kind=descriptor.kind,
                text=piece,
                bytes=len(data),
                digest=digest_bytes(data),
                short_owner=attested and len(data) <= SHORT_OWNER_BYTES,
            )
        )
    return spans


def span_cost(span: Span) -> int:
    """The bytes a span takes in the request: its text and its header line."""
    return span.bytes + SPAN_FRAME_BYTES


def _queue(candidates: Iterable[Span], kind: str) -> list[Span]:
    return sorted((s for s in candidates if s.kind == kind), key=lambda s: (-s.ordinal, s.index))


def select_offer(
    spans: Sequence[Span],
    offered: Iterable[tuple[int, int]],
    caps: SelectionCaps,
    *,
    fixed_tokens: int,
) -> Offer | Literal["no_source", "already_covered", "input_budget"]:
    """One pass's offer over `spans` (every span of every source), given the slots
    already offered and the tokens the request spends before its first span. See the
    module doc for the rules."""
    if not spans:
        return "no_source"
    done = set(offered)
    candidates = [s for s in spans if s.slot not in done]
    if not candidates:
        return "already_covered"
    budget = (caps.input_tokens - caps.input_tokens // HEADROOM_DIVISOR - fixed_tokens) * 4
    if budget < min(span_cost(s) for s in candidates):
        return "input_budget"
    share = -(-len(candidates) * caps.share_numerator // caps.share_denominator)
    limit = min(caps.max_spans, share)
    chosen: dict[tuple[int, int], Span] = {}
    used = 0

    def take(span: Span) -> bool:
        nonlocal used
        if span.slot in chosen or used + span_cost(span) > budget:
            return False
        chosen[span.slot] = span
        used += span_cost(span)
        return True

    allowance = SPAN_BYTES + SPAN_FRAME_BYTES
    for span in sorted(candidates, key=lambda s: s.slot):  # the oldest that fits one slot
        if span_cost(span) <= allowance and take(span):
            break
    queues = [_queue(candidates, "owner"), _queue(candidates, "tool")]
    positions = [0, 0]
    turn = 0
    while len(chosen) < limit and any(p < len(q) for p, q in zip(positions, queues, strict=True)):
        queue = queues[turn % 2]
        while positions[turn % 2] < len(queue):
            span = queue[positions[turn % 2]]
            positions[turn % 2] += 1
            if take(span):
                break
        turn += 1
    bonus = 0
    for span in sorted(candidates, key=lambda s: s.slot):
        if bonus >= caps.bonus_cap:
            break
        if span.short_owner and take(span):
            bonus += 1
    ordered = tuple(sorted(chosen.values(), key=lambda s: s.slot))
    return Offer(
        spans=ordered,
        limit=limit,
        budget_bytes=budget,
        bonus=bonus,
        projected_tokens=fixed_tokens + -(-used // 4),
    )
