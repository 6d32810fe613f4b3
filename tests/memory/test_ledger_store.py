"""The ledger store: the durable journal's states, offers, generations, ownership, and
corrupt rows failing closed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from continuity.errors import LedgerError
from continuity.memory.ledger import Ledger, LedgerEntry, empty_generation
from continuity.memory.ledger_journal import operation_id
from continuity.memory.ledger_sources import admit_sources, scan_sources
from continuity.memory.ledger_store import LedgerStore
from continuity.memory.retained import RetainedStore
from continuity.memory.upkeep_selection import BOOTSTRAP_CAPS, Offer, select_offer
from continuity.messages import Usage

LEDGER = Ledger(entries=(LedgerEntry(id="e1", kind="key_identifier", text="QX-1", cites=(1,)),))


@pytest.fixture
def retained(tmp_path: Path) -> RetainedStore:
    store = RetainedStore(tmp_path / "retained.sqlite3")
    for index in range(6):
        store.retain_owner(f"owner turn {index}", source="owner", entry_ref=f"o{index}")
        store.retain_tool_result(
            f"result {index}\n\n" + "x" * 900,
            tool="doc_read",
            tool_kind="document",
            entry_ref=f"t{index}",
        )
    return store


def _offer(store: LedgerStore, retained: RetainedStore) -> Offer:
    admit_sources(store, retained)
    scan = scan_sources(store, retained)
    offer = select_offer(scan.spans, store.offered_slots(), BOOTSTRAP_CAPS, fixed_tokens=100)
    assert isinstance(offer, Offer)
    return offer


def _reserve(store: LedgerStore, offer: Offer | None, stage: int, kind: str = "bootstrap") -> str:
    op_id = operation_id(stage, f"p{stage}", offer.digest if offer else "", "g")
    store.reserve(
        op_id=op_id,
        stage=stage,
        tag=f"p{stage}",
        kind=kind,  # type: ignore[arg-type]
        input_reservation=128_000,
        output_reservation=4_096,
        offer=offer,
        generation_before=store.head().id,
    )
    return op_id


def test_an_operation_moves_reserved_dispatched_settled_and_publishes(
    tmp_path: Path, retained: RetainedStore
) -> None:
    store = LedgerStore.create(tmp_path / "ledger.sqlite3", owner="s1")
    assert store.head() == empty_generation()
    assert store.claim() == ("bootstrap", [])
    offer = _offer(store, retained)
    op = _reserve(store, offer, 1)
    assert store.offered_slots() == set()  # a reservation offers nothing yet
    store.dispatch(op)
    assert store.offered_slots() == {s.slot for s in offer.spans}  # dispatched: for good
    head = store.settle(op, outcome="published", usage=Usage(input=10, output=2), publish=LEDGER)
    store.close()
    reopened = LedgerStore.open(tmp_path / "ledger.sqlite3", owner="s1")
    [row] = reopened.operations()
    assert (row.state, row.outcome, row.usage, row.offers) == (
        "settled",
        "published",
        Usage(input=10, output=2),
        len(offer.spans),
    )
    assert reopened.head() == head and head.number == 1 and head.parent == empty_generation().id
    assert reopened.claim()[0] == "incremental"


def test_a_reservation_never_dispatched_is_released_at_the_next_claim_and_consumes_nothing(
    tmp_path: Path, retained: RetainedStore
) -> None:
    store = LedgerStore.create(tmp_path / "ledger.sqlite3", owner="s1")
    offer = _offer(store, retained)
    stale = _reserve(store, offer, 1)
    kind, released = store.claim()
    assert (kind, released) == ("bootstrap", [stale])  # the bootstrap is still due
    [row] = store.operations()
    assert (row.state, row.outcome) == ("released", "released_at_claim")
    assert store.offered_slots() == set()
    with pytest.raises(LedgerError) as refused:
        store.dispatch(stale)
    assert refused.value.code == "ledger_journal_invalid"


def test_a_settle_or_release_out_of_order_is_refused(tmp_path: Path) -> None:
    store = LedgerStore.create(tmp_path / "ledger.sqlite3", owner="s1")
    op = _reserve(store, None, 1)
    with pytest.raises(LedgerError) as refused:
        store.settle(op, outcome="published", usage=None)
    assert refused.value.code == "ledger_journal_invalid"
    store.dispatch(op)
    with pytest.raises(LedgerError):
        store.release(op, "no_source")


def test_the_store_belongs_to_its_session(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    LedgerStore.create(path, owner="s1").close()
    with pytest.raises(LedgerError) as refused:
        LedgerStore.open(path, owner="s2")
    assert refused.value.code == "ledger_unowned"
    with pytest.raises(LedgerError) as missing:
        LedgerStore.open(tmp_path / "none.sqlite3", owner="s1")
    assert missing.value.code == "ledger_store_missing"
    with pytest.raises(LedgerError) as again:
        LedgerStore.create(path, owner="s1")
    assert again.value.code == "ledger_store_corrupt"


@pytest.mark.parametrize("content", [b"not a database at all", b""])
def test_a_file_that_is_not_a_ledger_store_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "ledger.sqlite3"
    path.write_bytes(content)
    with pytest.raises(LedgerError) as refused:
        LedgerStore.open(path, owner=None)
    assert refused.value.code == "ledger_store_corrupt"


def _published(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.sqlite3"
    store = LedgerStore.create(path, owner="s1")
    op = _reserve(store, None, 1)
    store.dispatch(op)
    store.settle(op, outcome="published", usage=None, publish=LEDGER)
    store.close()
    return path


@pytest.mark.parametrize(
    ("statement", "read"),
    [
        ("UPDATE generations SET ledger = x'7b7d' WHERE number = 1", "generations"),
        ("UPDATE generations SET ledger = 'not json' WHERE number = 1", "generations"),
        ("UPDATE generations SET id = 'forged' WHERE number = 1", "generations"),
        ("UPDATE generations SET parent = NULL WHERE number = 1", "generations"),
        ("DELETE FROM generations WHERE number = 0", "generations"),
        (
            'UPDATE generations SET ledger = \'{"entries": [{"id": "e1", "kind": '
            '"commitment", "text": "t", "cites": [1]}]}\' WHERE number = 1',
            "generations",
        ),
        ("UPDATE operations SET state = 'half-done'", "operations"),
        ("UPDATE operations SET usage = 'garbage'", "operations"),
    ],
)
def test_a_tampered_row_fails_closed(tmp_path: Path, statement: str, read: str) -> None:
    path = _published(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute(statement)
    store = LedgerStore.open(path, owner="s1")
    with pytest.raises(LedgerError) as refused:
        getattr(store, read)()
    assert refused.value.code == "ledger_store_corrupt"


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE sources SET descriptor = 'not json' WHERE ordinal = 1",
        "UPDATE sources SET descriptor = zeroblob(70000) WHERE ordinal = 1",
        'UPDATE sources SET descriptor = replace(descriptor, \'"digest":"\', \'"digest":"0\') '
        "WHERE ordinal = 1",
    ],
)
def test_a_corrupt_source_row_fails_the_scan_closed(
    tmp_path: Path, retained: RetainedStore, statement: str
) -> None:
    path = tmp_path / "ledger.sqlite3"
    store = LedgerStore.create(path, owner="s1")
    admit_sources(store, retained)
    with sqlite3.connect(path) as db:
        db.execute(statement)
    with pytest.raises(LedgerError) as refused:
        scan_sources(store, retained)
    assert refused.value.code == "ledger_source_corrupt"


def test_a_source_whose_retained_text_changed_fails_the_scan_closed(
    tmp_path: Path, retained: RetainedStore
) -> None:
    store = LedgerStore.create(tmp_path / "ledger.sqlite3", owner="s1")
    admit_sources(store, retained)
    with retained.db:
        retained.db.execute("UPDATE records SET digest = ? WHERE seq = 2", ("cd" * 32,))
    with pytest.raises(LedgerError) as refused:
        scan_sources(store, retained)
    assert refused.value.code == "ledger_source_corrupt"


def test_an_oversized_source_is_refused_at_admission_and_never_offered(
    tmp_path: Path, retained: RetainedStore
) -> None:
    retained.retain_tool_result("big", tool="t" * 600, tool_kind="other", entry_ref="t99")
    store = LedgerStore.create(tmp_path / "ledger.sqlite3", owner="s1")
    assert admit_sources(store, retained) == 1
    scan = scan_sources(store, retained, oversized=1)
    assert 13 not in {d.ordinal for d in scan.descriptors}
    assert scan.oversized == 1


def test_a_store_is_made_whole_or_not_at_all(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    (tmp_path / "ledger.sqlite3.creating").write_bytes(b"left by a killed attempt")
    store = LedgerStore.create(path, owner="s1")
    assert store.head() == empty_generation()
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.sqlite3"]


def test_a_refused_row_is_coded_not_a_traceback(tmp_path: Path) -> None:
    store = LedgerStore.create(tmp_path / "ledger.sqlite3", owner="s1")
    _reserve(store, None, 1)
    with pytest.raises(LedgerError) as refused:
        _reserve(store, None, 1)  # the same operation id again
    assert refused.value.code == "ledger_journal_invalid"
