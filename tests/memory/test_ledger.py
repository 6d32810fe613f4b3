"""The continuity ledger: delta validation, merge, generations and rendering."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.errors import LedgerError
from continuity.memory.ledger import (
    DELTA_SCHEMA,
    Ledger,
    LedgerEntry,
    check_ledger,
    empty_generation,
    is_ledger,
    merge,
    next_generation,
    parse_delta,
    render,
)


def _delta(*entries: dict[str, Any]) -> str:
    return json.dumps({"schema": DELTA_SCHEMA, "entries": list(entries)})


def _entry(
    kind: str = "key_identifier",
    text: str = "ref QX-1",
    cites: list[int] | None = None,
    status: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {"kind": kind, "text": text, "status": status, "cites": cites or [3], **extra}


LEDGER = Ledger(
    entries=(
        LedgerEntry(id="e1", kind="commitment", text="reply drafted", status="DRAFTED", cites=(4,)),
        LedgerEntry(id="e2", kind="owner_constraint", text="no calls before nine", cites=(1,)),
    )
)


def test_a_valid_delta_parses_and_merges_without_losing_an_entry() -> None:
    text = _delta(
        _entry("commitment", "reply sent", [9], "SENT", id="e1"),
        _entry("next_action", "book the van by Friday", [9]),
    )
    delta = parse_delta(text, {9}, LEDGER)
    merged = merge(LEDGER, delta)
    assert [e.id for e in merged.entries] == ["e1", "e2", "e3"]
    assert merged.entries[0].status == "SENT"
    assert merged.entries[0].cites == (4, 9)  # the update adds its cites
    assert merged.entries[2].kind == "next_action"


def test_a_single_fenced_json_block_is_read_but_prose_never_is() -> None:
    fenced = "```json\n" + _delta(_entry()) + "\n```"
    assert len(parse_delta(fenced, {3}, Ledger()).entries) == 1
    with pytest.raises(LedgerError) as refused:
        parse_delta("Here is the delta: " + _delta(_entry()), {3}, Ledger())
    assert (refused.value.code, refused.value.location) == ("ledger_delta_invalid", "not_json")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "not_json"),
        ("{not json", "not_json"),
        (json.dumps({"schema": DELTA_SCHEMA}), "schema"),
        (json.dumps({"schema": "other", "entries": []}), "schema"),
        (_delta(_entry(extra_key=1)), "schema"),
        (_delta(_entry(kind="feeling")), "schema"),
        (_delta(*[_entry(text=f"ref {i}") for i in range(65)]), "too_many_entries"),
        (_delta(_entry(text="")), "text_bounds"),
        (_delta(_entry(text="x" * 513)), "text_bounds"),
        (_delta(_entry(text="two\nlines")), "text_bounds"),
        (_delta(_entry("commitment")), "status"),
        (_delta(_entry("owner_constraint", status="SENT")), "status"),
        (_delta(_entry("artifact", status="SENT")), "status"),
        (_delta(_entry(cites=[3, 3])), "cites_bounds"),
        (_delta(_entry(cites=list(range(1, 18)))), "cites_bounds"),
        (_delta(_entry(cites=[4])), "cites_not_offered"),
        (_delta(_entry(id="e9")), "unknown_entry"),
        (_delta(_entry("key_identifier", id="e1")), "kind_changed"),
        (
            _delta(
                _entry("commitment", "a", [3], "SENT", id="e1"),
                _entry("commitment", "b", [3], "OPEN", id="e1"),
            ),
            "duplicate_update",
        ),
    ],
)
def test_a_bad_delta_is_refused_whole_with_its_reason(text: str, reason: str) -> None:
    with pytest.raises(LedgerError) as refused:
        parse_delta(text, {3}, LEDGER)
    assert refused.value.code == "ledger_delta_invalid"
    assert refused.value.location == reason


def test_generations_have_identity_and_lineage() -> None:
    genesis = empty_generation()
    assert genesis == empty_generation()  # stable
    first = next_generation(genesis, LEDGER, "op-1")
    assert (first.number, first.parent, first.op_id) == (1, genesis.id, "op-1")
    again = next_generation(first, LEDGER, "op-2")
    assert again.id != first.id  # the same entries under another parent are another generation
    assert next_generation(genesis, LEDGER, "op-9").id == first.id  # the id binds parent + entries


def test_rendered_entries_are_ordered_by_their_latest_cited_ordinal() -> None:
    ledger = Ledger(
        entries=(
            LedgerEntry(id="e1", kind="key_identifier", text="late", cites=(2, 40)),
            LedgerEntry(id="e2", kind="key_identifier", text="early", cites=(7,)),
            LedgerEntry(id="e3", kind="artifact", text="mid", status="FINAL", cites=(1, 12)),
        )
    )
    text = render(next_generation(empty_generation(), ledger, "op"))
    assert is_ledger(text)
    lines = [line for line in text.splitlines() if line.startswith("- [")]
    assert [line.split("] ", 1)[1].split(" [")[0] for line in lines] == ["early", "mid", "late"]
    assert "[artifact: FINAL] mid [c1, c12]" in text
    assert "- (no entries)" in render(empty_generation())


_kinds = st.sampled_from(["owner_constraint", "next_action", "key_identifier"])
_cites = st.lists(st.integers(1, 500), min_size=1, max_size=5, unique=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_kinds, _cites), max_size=20), st.lists(_cites, max_size=20))
def test_merge_never_loses_an_entry_and_render_is_chronological(
    first: list[tuple[str, list[int]]], second: list[list[int]]
) -> None:
    ledger = Ledger()
    for kind, cites in first:
        delta = parse_delta(_delta(_entry(kind, "fact", cites)), set(cites), ledger)
        ledger = merge(ledger, delta)
    before = {e.id for e in ledger.entries}
    for cites in second:
        delta = parse_delta(_delta(_entry("key_identifier", "more", cites)), set(cites), ledger)
        ledger = merge(ledger, delta)
    assert before <= {e.id for e in ledger.entries}
    check_ledger(ledger, location="test")
    lines = render(next_generation(empty_generation(), ledger, "op")).splitlines()
    latest = [
        max(int(c[1:]) for c in line.rsplit(" [", 1)[1].rstrip("]").split(", "))
        for line in lines
        if line.startswith("- [")
    ]
    assert latest == sorted(latest)


@pytest.mark.parametrize(
    "entry",
    [
        LedgerEntry(id="x1", kind="key_identifier", text="t", cites=(1,)),
        LedgerEntry(id="e1", kind="commitment", text="t", cites=(1,)),
        LedgerEntry(id="e1", kind="key_identifier", text="t", status="SENT", cites=(1,)),
        LedgerEntry(id="e1", kind="key_identifier", text="t", cites=()),
        LedgerEntry(id="e1", kind="key_identifier", text="t", cites=(5, 2)),
        LedgerEntry(id="e1", kind="key_identifier", text="t", cites=(0,)),
        LedgerEntry(id="e1", kind="key_identifier", text="x" * 600, cites=(1,)),
    ],
)
def test_a_ledger_read_back_that_breaks_the_schema_fails_closed(entry: LedgerEntry) -> None:
    with pytest.raises(LedgerError) as refused:
        check_ledger(Ledger(entries=(entry,)), location="disk")
    assert refused.value.code == "ledger_store_corrupt"
