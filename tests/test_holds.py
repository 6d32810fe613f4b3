"""The shared hold account: its arithmetic and cap rule, and the same scenario on both
books (in memory, SQLite) giving the same keys, refusals, totals and states."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.holds import (
    HoldAccount,
    HoldRecord,
    HoldTable,
    MemoryBook,
    Over,
    SqliteBook,
    Tally,
    counted,
    exceeds,
    tally,
)

# the two shapes of the package's account files: a key SQLite assigns, or the caller's
_SCHEMAS = {
    "assigned": (
        "CREATE TABLE holds (id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, "
        "amount TEXT NOT NULL, state TEXT NOT NULL, cost TEXT, reason TEXT, "
        "opened REAL NOT NULL, closed REAL)",
        HoldTable(key="id", reason="reason", tags=("owner",), opened="opened", closed="closed"),
    ),
    "given": (
        "CREATE TABLE holds (request_id TEXT PRIMARY KEY, slot_id TEXT NOT NULL, "
        "amount TEXT NOT NULL, state TEXT NOT NULL, cost TEXT, kind TEXT)",
        HoldTable(key="request_id", reason="kind", tags=("slot_id",)),
    ),
}


class Failed(Exception):
    pass


@contextmanager
def sqlite_book(shape: str, stamp: dict[str, str] | None = None) -> Iterator[SqliteBook]:
    schema, table = _SCHEMAS[shape]
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.execute(schema)
    try:
        yield SqliteBook(db, table, lambda exc: Failed(str(exc)), stamp)
    finally:
        db.close()


def test_what_a_hold_counts() -> None:
    assert counted("active", Decimal("3.92"), None) == Decimal("3.92")
    assert counted("settled", Decimal("3.92"), Decimal("0.25")) == Decimal("0.25")
    assert counted("settled", Decimal("3.92"), None) == Decimal("3.92")
    assert counted("retained", Decimal("3.92"), None) == Decimal("3.92")
    assert counted("retained", Decimal("3.92"), Decimal("5")) == Decimal("5")  # a larger partial
    assert counted("retained", Decimal("3.92"), Decimal("1")) == Decimal("3.92")
    assert counted("released", Decimal("3.92"), None) == 0


def test_the_cap_rule_admits_at_the_boundary_and_refuses_past_it() -> None:
    assert not exceeds(Decimal("0.006"), Decimal("0.004"), Decimal("0.01"))
    assert exceeds(Decimal("0.006"), Decimal("0.004000001"), Decimal("0.01"))
    assert not exceeds(Decimal("10") ** 20, Decimal(1), None)  # no cap


def test_the_tally_keeps_each_sums_decimal_text() -> None:
    records = [
        HoldRecord(1, Decimal("0.003152"), "settled", Decimal("0.00002")),
        HoldRecord(2, Decimal("0.003277"), "released"),
        HoldRecord(3, Decimal("0.003402"), "retained"),
        HoldRecord(4, Decimal("0.50"), "active"),
    ]
    totals = tally(records)
    assert (str(totals.settled), str(totals.retained), str(totals.active)) == (
        "0.00002",
        "0.003402",
        "0.50",
    )
    assert str(totals.committed) == "0.503422"
    assert (totals.settled_calls, totals.retained_calls, totals.released) == (1, 1, 1)
    assert str(tally([]).committed) == "0"


@pytest.mark.parametrize("shape", sorted(_SCHEMAS))
def test_a_refused_hold_writes_nothing_and_a_hold_closes_once(shape: str) -> None:
    with sqlite_book(shape) as book:
        account = HoldAccount(book, late_close=False)
        key = "r1" if shape == "given" else None
        tags = {"slot_id": "s"} if shape == "given" else {"owner": "me"}
        first = account.hold(Decimal("0.60"), Decimal("1.00"), key=key, tags=tags)
        assert first == ("r1" if shape == "given" else 1)
        over = account.hold(Decimal("0.41"), Decimal("1.00"), key="r2" if key else None, tags=tags)
        assert over == Over(Decimal("0.60"))
        assert len(book.records()) == 1
        assert not isinstance(first, Over)
        assert account.settle(first, Decimal("0.10"), "settled")
        assert not account.settle(first, Decimal("0.20"))  # closed: unchanged
        assert not account.retain(first)
        record = book.record(first)
        assert record is not None and (record.state, record.cost) == ("settled", Decimal("0.10"))
        assert record.tags == tags


def test_late_close_lets_a_retained_hold_settle() -> None:
    for late in (False, True):
        book = MemoryBook()
        account = HoldAccount(book, late_close=late)
        key = account.hold(Decimal(1), None)
        assert not isinstance(key, Over)
        account.retain(key, reason="invocation_ended")
        assert account.settle(key, Decimal("0.5")) is late
        assert account.committed() == (Decimal("0.5") if late else Decimal(1))


def test_retain_active_spares_the_owners_own_holds() -> None:
    with sqlite_book("assigned", stamp={"owner": "old"}) as old:
        account = HoldAccount(old, late_close=True)
        account.hold(Decimal(1), None)
        mine = SqliteBook(old.db, old.table, lambda exc: Failed(str(exc)), {"owner": "new"})
        HoldAccount(mine, late_close=True).hold(Decimal(2), None)
        mine.retain_active("invocation_ended", unless=("owner", "new"))
        states = [(r.tags["owner"], r.state, r.reason) for r in mine.records()]
        assert states == [("old", "retained", "invocation_ended"), ("new", "active", None)]


def test_an_sqlite_failure_goes_through_the_callers_mapping() -> None:
    with sqlite_book("given") as book:
        book.db.execute("DROP TABLE holds")
        with pytest.raises(Failed, match="no such table"):
            HoldAccount(book, late_close=False).committed()


# -- one scenario, both books

_OPS = st.lists(
    st.tuples(
        st.sampled_from(("hold", "settle", "retain", "release")),
        st.integers(min_value=0, max_value=9),  # which hold (by the order they were made)
        st.integers(min_value=0, max_value=500),  # cents: an amount, a cost or a partial
        st.booleans(),  # a retain with a known partial, or without
    ),
    max_size=40,
)


def _run(
    account: HoldAccount, cap: Decimal | None, ops: list[tuple[str, int, int, bool]]
) -> list[tuple[object, tuple[str, ...]]]:
    """Apply `ops`; what each returned, and the tally after it."""
    keys: list[object] = []
    seen: list[tuple[object, tuple[str, ...]]] = []
    for op, index, cents, partial in ops:
        money = Decimal(cents) / 100
        if op == "hold":
            result: object = account.hold(money, cap)
            if not isinstance(result, Over):
                keys.append(result)
        elif not keys:
            result = "no hold"
        else:
            key = keys[index % len(keys)]
            assert isinstance(key, int)
            if op == "settle":
                result = account.settle(key, money, "settled")
            elif op == "retain":
                result = account.retain(key, money if partial else None, "lost")
            else:
                result = account.release(key, "not_billed")
        seen.append((result, _text(account.tally())))
    return seen


def _text(totals: Tally) -> tuple[str, ...]:
    """The tally as decimal text (the form the accounts report and store)."""
    return (
        str(totals.settled),
        str(totals.retained),
        str(totals.active),
        str(totals.committed),
        str((totals.settled_calls, totals.retained_calls, totals.active_calls, totals.released)),
    )


@settings(max_examples=150, deadline=None)
@given(
    cap_cents=st.one_of(st.none(), st.integers(min_value=0, max_value=2_000)),
    late=st.booleans(),
    ops=_OPS,
)
def test_both_books_give_the_same_refusals_totals_and_states(
    cap_cents: int | None, late: bool, ops: list[tuple[str, int, int, bool]]
) -> None:
    cap = None if cap_cents is None else Decimal(cap_cents) / 100
    memory = MemoryBook()
    in_memory = _run(HoldAccount(memory, late_close=late), cap, ops)
    with sqlite_book("assigned", stamp={"owner": "o"}) as book:
        on_disk = _run(HoldAccount(book, late_close=late), cap, ops)
        stored = [(r.key, r.amount, r.state, r.cost, r.reason) for r in book.records()]
    assert in_memory == on_disk
    assert stored == [(r.key, r.amount, r.state, r.cost, r.reason) for r in memory.records()]
    if cap is not None:  # an admitted hold never takes the total past the cap (a cost
        # settled above its hold can: the callers bound that, not the account)
        before = [Decimal(0), *(Decimal(totals[3]) for _, totals in in_memory)]
        for (op, *_), (result, totals), committed in zip(ops, in_memory, before, strict=False):
            if op == "hold" and not isinstance(result, Over):
                assert Decimal(totals[3]) <= cap
            elif op == "hold":
                assert result == Over(committed)
