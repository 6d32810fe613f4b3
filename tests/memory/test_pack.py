"""The deterministic continuity pack and its content-free receipt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from continuity.memory.history import CanonicalHistory
from continuity.memory.pack import PACK_BUDGET_TOKENS, PACK_HEADER, build_pack, is_pack
from continuity.memory.retained import RetainedStore

SECRET = "Zq8#kW3mRt6!pL"


@pytest.fixture
def sources(tmp_path: Path) -> Iterator[tuple[RetainedStore, CanonicalHistory]]:
    store = RetainedStore(tmp_path / "retained.sqlite3")
    history = CanonicalHistory.create(tmp_path / "history.jsonl")
    store.retain_owner(
        "Never mention Project Tamarisk to the hire desk.", source="owner", entry_ref="e1"
    )
    store.retain_owner("Share it view-only with Wren.", source="steer", entry_ref="e2")
    store.retain_tool_result(
        f"Portal.\nTemporary password: {SECRET}",
        tool="email_search",
        tool_kind="email",
        entry_ref="e3",
    )
    for index in range(60):
        store.retain_tool_result(
            f"Rig note {index}: " + "dimmer rack and truss " * 60,
            tool="document_open",
            tool_kind="document",
            entry_ref=f"d{index}",
        )
    history.append(
        "user",
        "Never mention Project Tamarisk.",
        attribution="owner",
        source="owner",
        entry_id="e1",
    )
    history.append(
        "assistant",
        "I've shared the load-in checklist with the crew.",
        attribution="host",
        source="model",
        entry_id="e4",
    )
    history.append(
        "user", "a note from someone", attribution="unknown", source="steer", entry_id="e5"
    )
    yield store, history
    store.close()
    history.close()


def test_sections_budget_and_receipt(sources: tuple[RetainedStore, CanonicalHistory]) -> None:
    store, history = sources
    pack = build_pack(store, history)
    assert pack.text.startswith(PACK_HEADER) and pack.text.endswith("</continuity-pack>")
    assert is_pack(pack.message()) and pack.message().source == "pack"
    receipt = pack.receipt
    assert receipt.total_tokens <= PACK_BUDGET_TOKENS
    sections = {s.name: s for s in receipt.sections}
    assert list(sections) == ["owner", "tool", "summary", "neutral"]
    assert sections["owner"].included == 2 and "[c2] Share it view-only" in pack.text
    assert sections["tool"].omitted > 0 and receipt.status == "overflow"  # recorded, valid
    assert sections["summary"].included == 1 and sections["neutral"].included == 1
    assert receipt.omitted_credential_results == 1
    assert SECRET not in pack.text and SECRET[:8] not in pack.text
    encoded = msgspec.json.encode(receipt).decode()
    assert "Tamarisk" not in encoded and "dimmer" not in encoded  # content-free


def test_uncertain_overlap_counts_items_already_in_context(
    sources: tuple[RetainedStore, CanonicalHistory],
) -> None:
    from continuity.messages import UserMessage

    store, history = sources
    context = [UserMessage(text="Never mention Project Tamarisk to the hire desk.")]
    assert build_pack(store, history, context=context).receipt.uncertain_overlap >= 1
    assert build_pack(store, history).receipt.uncertain_overlap == 0


def test_source_and_headroom_failures_invalidate(
    sources: tuple[RetainedStore, CanonicalHistory],
) -> None:
    store, history = sources
    missing = build_pack(None, history)
    assert (missing.receipt.status, missing.receipt.reason, missing.text) == (
        "invalid",
        "source_unavailable",
        "",
    )
    tight = build_pack(store, history, window_tokens=32_000, context_tokens=31_000)
    assert (tight.receipt.status, tight.receipt.reason) == ("invalid", "headroom")
    store.db.execute("DROP TABLE records_fts")
    store.db.execute("DROP TABLE records")
    assert build_pack(store, history).receipt.reason == "source_unavailable"
