"""`continuity.sqlite_open`: one way to open SQLite, and the named policies."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from continuity import sqlite_open
from continuity.sqlite_open import (
    CALL_LEDGER,
    COST_CAP,
    DEFAULT_TIMEOUT_S,
    LEASE,
    LEASE_PROBE,
    LEASE_READER,
    LEDGER_STORE_CREATE,
    LEDGER_STORE_READER,
    LEDGER_STORE_WRITER,
    PERMIT_ACCOUNT,
    READ_ONLY,
    RETAINED_READER,
    RETAINED_WRITER,
    STEER_INBOX,
    Policy,
    apply_pragmas,
    connect,
    open_db,
)


def _made(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
        db.execute("INSERT INTO t VALUES (1)")
    return path


# What each site opened with before the policies existed: (timeout, read_only, uri,
# autocommit, any_thread, pragmas).
EXPECTED = {
    "READ_ONLY": (5.0, True, False, False, False, ()),
    "STEER_INBOX": (30, False, False, True, False, ("journal_mode=WAL", "synchronous=FULL")),
    "LEDGER_STORE_CREATE": (5.0, False, False, True, True, ("journal_mode=DELETE",)),
    "LEDGER_STORE_WRITER": (5.0, False, True, True, True, ("synchronous=FULL",)),
    "LEDGER_STORE_READER": (5.0, True, False, True, True, ()),
    "RETAINED_WRITER": (5.0, False, False, False, True, ()),
    "RETAINED_READER": (5.0, True, False, False, True, ()),
    "CALL_LEDGER": (30, False, False, True, False, ()),
    "COST_CAP": (60, False, False, True, True, ("synchronous=FULL",)),
    "PERMIT_ACCOUNT": (10.0, False, False, True, False, ("synchronous=FULL",)),
    "LEASE": (0, False, False, True, False, ("journal_mode=DELETE",)),
    "LEASE_PROBE": (0, False, False, True, False, ()),
    "LEASE_READER": (0, True, False, False, False, ()),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_policy_keeps_its_sites_parameters(name: str) -> None:
    policy = getattr(sqlite_open, name)
    fields = (policy.timeout, policy.read_only, policy.uri, policy.autocommit)
    assert (*fields, policy.any_thread, policy.pragmas) == EXPECTED[name]


def test_every_policy_is_listed_and_frozen() -> None:
    policies = {n for n in sqlite_open.__all__ if isinstance(getattr(sqlite_open, n), Policy)}
    assert policies == set(EXPECTED)
    assert DEFAULT_TIMEOUT_S == 5.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        READ_ONLY.timeout = 1  # type: ignore[misc]


@pytest.mark.parametrize("policy", [READ_ONLY, LEASE_READER, RETAINED_READER, LEDGER_STORE_READER])
def test_a_read_only_policy_refuses_every_write(tmp_path: Path, policy: Policy) -> None:
    db = open_db(_made(tmp_path / "a.sqlite3"), policy)
    try:
        assert db.execute("SELECT x FROM t").fetchall() == [(1,)]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            db.execute("INSERT INTO t VALUES (2)")
    finally:
        db.close()


def test_a_read_only_open_never_creates_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite3"
    with pytest.raises(sqlite3.OperationalError):
        open_db(missing, READ_ONLY)
    assert not missing.exists()


def test_a_writer_creates_its_file(tmp_path: Path) -> None:
    for policy in (RETAINED_WRITER, LEDGER_STORE_WRITER, CALL_LEDGER):
        path = tmp_path / f"{id(policy)}.sqlite3"
        db = open_db(path, policy)
        db.execute("CREATE TABLE t (x INTEGER)")
        db.close()
        assert path.is_file()


def _locked(path: Path) -> sqlite3.Connection:
    holder = open_db(path, LEASE)
    holder.execute("BEGIN IMMEDIATE")  # the writer lock, held until rollback
    return holder


def test_the_zero_timeout_policies_fail_fast_on_a_locked_file(tmp_path: Path) -> None:
    path = tmp_path / "lease.sqlite3"
    holder = _locked(path)
    try:
        probe = open_db(path, LEASE_PROBE)
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            probe.execute("BEGIN IMMEDIATE")
        assert time.monotonic() - started < 1.0  # not sqlite3's default 5 s
        probe.close()
    finally:
        holder.rollback()
        holder.close()


def test_a_waiting_policy_waits_its_timeout(tmp_path: Path) -> None:
    path = tmp_path / "busy.sqlite3"
    holder = _locked(path)
    try:
        waiter = open_db(path, Policy(timeout=0.3, autocommit=True))
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            waiter.execute("BEGIN IMMEDIATE")
        assert time.monotonic() - started >= 0.25
        waiter.close()
    finally:
        holder.rollback()
        holder.close()


def test_the_pragmas_are_applied_in_order(tmp_path: Path) -> None:
    db = open_db(tmp_path / "inbox.sqlite3", STEER_INBOX)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    db.close()
    for policy in (LEASE, LEDGER_STORE_CREATE):
        db = open_db(tmp_path / f"{id(policy)}.sqlite3", policy)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        db.close()
    for policy in (COST_CAP, PERMIT_ACCOUNT):
        db = open_db(tmp_path / f"{id(policy)}.sqlite3", policy)
        assert db.execute("PRAGMA synchronous").fetchone() == (2,)
        db.close()


def test_connect_leaves_the_pragmas_to_apply_pragmas(tmp_path: Path) -> None:
    db = connect(tmp_path / "a.sqlite3", STEER_INBOX)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    apply_pragmas(db, STEER_INBOX)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    db.close()


def test_autocommit_opens_no_implicit_transaction(tmp_path: Path) -> None:
    auto = open_db(_made(tmp_path / "a.sqlite3"), CALL_LEDGER)
    assert auto.isolation_level is None
    auto.execute("INSERT INTO t VALUES (2)")
    assert not auto.in_transaction
    auto.close()
    legacy = open_db(tmp_path / "a.sqlite3", RETAINED_WRITER)
    assert legacy.isolation_level is not None  # sqlite3's default: implicit BEGIN
    legacy.execute("INSERT INTO t VALUES (3)")
    assert legacy.in_transaction
    legacy.rollback()
    legacy.close()


def _from_another_thread(db: sqlite3.Connection) -> BaseException | None:
    caught: list[BaseException] = []

    def use() -> None:
        try:
            db.execute("SELECT 1").fetchone()
        except BaseException as exc:
            caught.append(exc)

    thread = threading.Thread(target=use)
    thread.start()
    thread.join(10)
    return caught[0] if caught else None


def test_any_thread_lets_another_thread_use_the_connection(tmp_path: Path) -> None:
    shared = open_db(tmp_path / "a.sqlite3", RETAINED_WRITER)
    assert _from_another_thread(shared) is None
    shared.close()
    own = open_db(tmp_path / "a.sqlite3", CALL_LEDGER)
    assert isinstance(_from_another_thread(own), sqlite3.ProgrammingError)
    own.close()


def test_a_failing_pragma_closes_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[bool] = []

    class Spy(sqlite3.Connection):
        def close(self) -> None:
            closed.append(True)
            super().close()

    real = sqlite3.connect

    def spying(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real(*args, **kwargs, factory=Spy)

    monkeypatch.setattr(sqlite3, "connect", spying)
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"not a database, but long enough to be read as a header" * 4)
    with pytest.raises(sqlite3.DatabaseError, match="not a database"):
        open_db(junk, LEASE)
    assert closed == [True]
