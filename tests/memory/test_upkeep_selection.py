"""Upkeep source selection: spans, the delta cap, the budget, the oldest-never-offered
reservation, the round robin, the bounded bonus; never the words."""

from __future__ import annotations

import random

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.digest import digest_bytes
from continuity.memory.upkeep_selection import (
    BOOTSTRAP_CAPS,
    HEADROOM_DIVISOR,
    INCREMENTAL_CAPS,
    SHORT_OWNER_BYTES,
    SPAN_BYTES,
    Offer,
    Span,
    select_offer,
    span_cost,
    spans_of,
)
from continuity.memory.upkeep_sources import SourceDescriptor


def _descriptor(ordinal: int, kind: str, text: str) -> SourceDescriptor:
    return SourceDescriptor(
        ordinal=ordinal,
        kind=kind,  # type: ignore[arg-type]
        input_id=f"entry-{ordinal}",
        digest=digest_bytes(text.encode()),
        revision=1,
        bytes=len(text.encode()),
        attestation="host" if kind == "owner" else None,
    )


def _spans(records: list[tuple[str, str]]) -> list[Span]:
    out: list[Span] = []
    for ordinal, (kind, text) in enumerate(records, start=1):
        out += spans_of(_descriptor(ordinal, kind, text), text)
    return out


def _words(rng: random.Random, count: int) -> str:
    return " ".join(f"w{rng.randrange(10_000)}" for _ in range(count))


def _history(seed: int, records: int = 60) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for index in range(records):
        if index % 3 == 2:
            out.append(("tool", "\n\n".join(_words(rng, rng.randrange(40, 900)) for _ in range(3))))
        else:
            out.append(("owner", _words(rng, rng.randrange(4, 120))))
    return out


def test_owner_records_give_a_span_per_paragraph_and_tool_results_pack_theirs() -> None:
    owner = spans_of(
        _descriptor(1, "owner", "first\n\nsecond\n \n\nthird"), "first\n\nsecond\n \n\nthird"
    )
    assert [s.text for s in owner] == ["first", "second", "third"]
    assert all(s.short_owner for s in owner)
    text = "\n\n".join("p" * 1_500 for _ in range(5))
    tool = spans_of(_descriptor(2, "tool", text), text)
    assert [s.bytes for s in tool] == [3_002, 3_002, 1_500]
    assert not any(s.short_owner for s in tool)


@settings(max_examples=80, deadline=None)
@given(st.text(min_size=1, max_size=12_000))
def test_spans_are_bounded_and_never_split_a_character(text: str) -> None:
    for kind in ("owner", "tool"):
        for span in spans_of(_descriptor(1, kind, text), text):
            assert 0 < span.bytes <= SPAN_BYTES
            assert span.bytes == len(span.text.encode("utf-8"))
            assert span.short_owner == (kind == "owner" and span.bytes <= SHORT_OWNER_BYTES)


def test_nothing_to_offer_says_why() -> None:
    spans = _spans(_history(1, 6))
    assert select_offer([], (), BOOTSTRAP_CAPS, fixed_tokens=500) == "no_source"
    every = [s.slot for s in spans]
    assert select_offer(spans, every, BOOTSTRAP_CAPS, fixed_tokens=500) == "already_covered"
    full = BOOTSTRAP_CAPS.input_tokens - BOOTSTRAP_CAPS.input_tokens // HEADROOM_DIVISOR
    assert select_offer(spans, (), BOOTSTRAP_CAPS, fixed_tokens=full) == "input_budget"


def _offer(spans: list[Span], offered: set[tuple[int, int]], *, incremental: bool = False) -> Offer:
    caps = INCREMENTAL_CAPS if incremental else BOOTSTRAP_CAPS
    offer = select_offer(spans, offered, caps, fixed_tokens=2_000)
    assert isinstance(offer, Offer)
    return offer


@pytest.mark.parametrize("seed", [3, 5, 8])
def test_three_passes_are_progressive_capped_budgeted_and_source_ordered(seed: int) -> None:
    spans = _spans(_history(seed))
    offered: set[tuple[int, int]] = set()
    for number in range(3):
        caps = BOOTSTRAP_CAPS if number == 0 else INCREMENTAL_CAPS
        remaining = [s for s in spans if s.slot not in offered]
        offer = _offer(spans, offered, incremental=number > 0)
        slots = [s.slot for s in offer.spans]
        assert slots == sorted(slots)  # source order
        assert not set(slots) & offered  # never offered twice
        assert len(slots) - offer.bonus <= min(caps.max_spans, -(-len(remaining) // 2))
        assert offer.bonus <= caps.bonus_cap
        budget = caps.input_tokens - caps.input_tokens // HEADROOM_DIVISOR
        assert offer.projected_tokens <= budget
        assert 2_000 + sum(span_cost(s) for s in offer.spans) / 4 <= budget
        # The oldest never-offered span that fits one slot is always in the pass.
        oldest = min(s.slot for s in remaining if span_cost(s) <= SPAN_BYTES + 48)
        assert oldest in slots
        # The round robin offers both kinds while both have candidates.
        assert {s.kind for s in offer.spans} == {s.kind for s in remaining}
        offered |= set(slots)


def test_the_bonus_band_never_displaces_a_base_offer() -> None:
    spans = _spans(_history(11, 90))
    base_caps = msgspec.structs.replace(BOOTSTRAP_CAPS, bonus_cap=0)
    base = select_offer(spans, (), base_caps, fixed_tokens=2_000)
    bonus = _offer(spans, set())
    assert isinstance(base, Offer)
    assert {s.slot for s in base.spans} <= {s.slot for s in bonus.spans}
    extra = [s for s in bonus.spans if s.slot not in {b.slot for b in base.spans}]
    assert len(extra) == bonus.bonus <= BOOTSTRAP_CAPS.bonus_cap
    assert all(s.short_owner for s in extra)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_selection_reads_sizes_kinds_and_order_never_words(seed: int) -> None:
    """Every record's text replaced by other words of the same byte length: the same
    slots are offered (no vocabulary priority, no tool-header priority)."""
    history = _history(seed, 40)
    rng = random.Random(seed + 1)

    def same_length(text: str) -> str:
        return "".join(c if c in " \n" else rng.choice("abcdefghij") for c in text)

    disguised = [(kind, same_length(text)) for kind, text in history]
    for incremental in (False, True):
        original = _offer(_spans(history), set(), incremental=incremental)
        other = _offer(_spans(disguised), set(), incremental=incremental)
        assert [s.slot for s in original.spans] == [s.slot for s in other.spans]
