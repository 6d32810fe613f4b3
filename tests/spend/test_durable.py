"""The durable permit source: holds on disk before a permit is granted, a SIGKILLed
controller's holds retained on reopening, stale permits refused, stops and totals kept."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.errors import SpendError
from continuity.spend.durable import DurablePermitSource
from continuity.spend.permits import Permit, Refusal, Settlement, assert_real_permit_source
from continuity.sqlite_open import PERMIT_ACCOUNT
from tests.spend.conftest import RMAX, Rig
from tests.spend.sse import text_reply

REPO = Path(__file__).resolve().parents[2]
CAP = Decimal("10.00")


def _hold_states(path: Path) -> list[tuple[str, str]]:
    """What another connection reads from the file: (request id, state)."""
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return reader.execute("SELECT request_id, state FROM holds ORDER BY rowid").fetchall()
    finally:
        reader.close()


@pytest.mark.anyio
async def test_a_hold_is_on_disk_before_its_permit_is_granted(tmp_path: Path) -> None:
    path = tmp_path / "account.sqlite"
    source = DurablePermitSource.open(path, CAP, RMAX)
    assert assert_real_permit_source(source) is source
    permit = await source.admit("r1", "slot-1", 1, "d1", RMAX)
    assert isinstance(permit, Permit)
    assert _hold_states(path) == [("r1", "active")]
    await source.consume(permit, "d1")
    await source.settle(permit, Settlement(kind="settled", cost="0.25"), None, None)
    assert _hold_states(path) == [("r1", "settled")]
    source.close()


ADMIT_THEN_HANG = """
    import asyncio, json, sys, time
    from decimal import Decimal
    from pathlib import Path
    from continuity.spend.durable import DurablePermitSource
    from continuity.spend.assumptions import ASSUMED_V1, reservation
    source = DurablePermitSource.open(Path(sys.argv[1]), Decimal("10.00"), reservation(ASSUMED_V1))
    permit = asyncio.run(source.admit("r1", "slot-1", 1, "d1", reservation(ASSUMED_V1)))
    print(json.dumps({"epoch": permit.epoch, "permit_id": permit.permit_id}), flush=True)
    time.sleep(120)
"""


@pytest.mark.anyio
async def test_a_sigkilled_controllers_hold_is_retained_and_its_permit_stale(
    tmp_path: Path,
) -> None:
    path = tmp_path / "account.sqlite"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(ADMIT_THEN_HANG), str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert child.stdout is not None
        granted = json.loads(child.stdout.readline())
    finally:
        child.kill()  # SIGKILL: no settlement, no cleanup
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    source = DurablePermitSource.open(path, CAP, RMAX)
    assert source.epoch != granted["epoch"]
    assert source.account.total() == RMAX  # nobody knows whether it was sent: kept
    assert _hold_states(path) == [("r1", "retained")]
    old = Permit(
        permit_id=granted["permit_id"],
        epoch=granted["epoch"],
        request_id="r1",
        slot_id="slot-1",
        round=1,
        payload_digest="d1",
        rmax=str(RMAX),
    )
    with pytest.raises(SpendError) as caught:
        await source.consume(old, "d1")
    assert caught.value.code == "lookup_permit_stale"
    assert await source.admit("r1", "slot-1", 1, "d1", RMAX) == Refusal(
        "lookup_permit_reused", policy=True
    )
    source.close()


@pytest.mark.anyio
async def test_stops_and_settled_costs_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "account.sqlite"
    source = DurablePermitSource.open(path, CAP, RMAX)
    permit = await source.admit("r1", "slot-1", 1, "d1", RMAX)
    assert isinstance(permit, Permit)
    await source.consume(permit, "d1")
    await source.settle(permit, Settlement(kind="settled", cost="1.50"), None, None)
    await source.stop("lookup_unknown_tier")
    source.close()
    again = DurablePermitSource.open(path, CAP, RMAX)
    assert again.account.total() == Decimal("1.50")
    assert await again.admit("r2", "slot-2", 1, "d2", RMAX) == Refusal("lookup_unknown_tier")
    again.close()


@pytest.mark.anyio
async def test_the_loss_count_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "account.sqlite"
    source = DurablePermitSource.open(path, Decimal("20"), RMAX)
    permit = await source.admit("r1", "slot-1", 1, "d1", RMAX)
    assert isinstance(permit, Permit)
    await source.settle(permit, Settlement(kind="lost", code="lookup_usage_missing"), None, None)
    source.close()
    again = DurablePermitSource.open(path, Decimal("20"), RMAX)
    second = await again.admit("r2", "slot-2", 1, "d2", RMAX)
    assert isinstance(second, Permit)
    await again.settle(second, Settlement(kind="lost"), None, None)
    assert again.account.stopped == "lookup_repeated_loss"
    again.close()


def test_reopening_with_another_cap_or_a_foreign_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "account.sqlite"
    DurablePermitSource.open(path, CAP, RMAX).close()
    with pytest.raises(SpendError) as caught:
        DurablePermitSource.open(path, Decimal("20.00"), RMAX)
    assert caught.value.code == "lookup_cap_invalid"
    junk = tmp_path / "junk"
    junk.write_bytes(b"not sqlite " * 100)
    with pytest.raises(SpendError) as caught:
        DurablePermitSource.open(junk, CAP, RMAX)
    assert caught.value.code == "lookup_account_invalid"
    with pytest.raises(SpendError) as caught:
        DurablePermitSource.open(tmp_path / "new", Decimal("3.00"), RMAX)
    assert caught.value.code == "lookup_cap_invalid"
    assert not (tmp_path / "new").exists()  # refused before any file is made


@pytest.mark.anyio
async def test_the_guard_settles_into_the_durable_source(rig: Rig, tmp_path: Path) -> None:
    path = tmp_path / "account.sqlite"
    source = DurablePermitSource.open(path, CAP, RMAX)
    rig.script(text_reply())
    guard = rig.guard(permits=source)
    from continuity.providers.protocol import complete
    from tests.spend.conftest import request

    await complete(guard, request())
    assert _hold_states(path) == [("run-7f3a:slot-1:1", "settled")]
    source.close()
    assert DurablePermitSource.open(path, CAP, RMAX).account.total() == Decimal("0.00502")


_KINDS = ("settled", "lost", "own_abort_after_send", "integrity_stop", "reopen")


@settings(max_examples=25, deadline=None)
@given(
    cap_cents=st.integers(min_value=392, max_value=2_000),
    steps=st.lists(
        st.tuples(st.sampled_from(_KINDS), st.integers(min_value=0, max_value=392)), max_size=15
    ),
)
def test_the_total_never_exceeds_the_cap_across_restarts(
    cap_cents: int, steps: list[tuple[str, int]]
) -> None:
    import anyio

    async def run(path: Path) -> None:
        cap = Decimal(cap_cents) / 100
        source = DurablePermitSource.open(path, cap, RMAX)
        for index, (kind, cents) in enumerate(steps):
            if kind == "reopen":  # a restart with the request in flight
                await source.admit(f"r{index}", f"slot-{index}", 1, "d", RMAX)
                source.close()
                source = DurablePermitSource.open(path, cap, RMAX)
            else:
                permit = await source.admit(f"r{index}", f"slot-{index}", 1, "d", RMAX)
                if isinstance(permit, Permit):
                    cost = str(Decimal(cents) / 100) if kind == "settled" else None
                    await source.settle(permit, Settlement(kind=kind, cost=cost), None, None)  # type: ignore[arg-type]
            assert source.account.total() <= cap
        source.close()
        reopened = DurablePermitSource.open(path, cap, RMAX)
        assert reopened.account.total() <= cap
        reopened.close()

    with tempfile.TemporaryDirectory() as scratch:
        anyio.run(run, Path(scratch) / "account.sqlite")


@pytest.mark.anyio
async def test_a_child_asking_after_a_stop_learns_only_that_the_pilot_stopped(
    tmp_path: Path,
) -> None:
    from continuity.spend.exchange import SlotState, serve_message

    source = DurablePermitSource.open(tmp_path / "account.sqlite", CAP, RMAX, epoch="e-1")
    try:
        await source.stop("lookup_repeated_loss")
        admit = {
            "kind": "admit",
            "request_id": "r1",
            "slot_id": "slot-1",
            "round": 1,
            "payload_digest": "d1",
            "rmax": str(RMAX),
        }
        reply, fields = await serve_message(admit, source, SlotState(), "slot-1")
        assert (reply, fields["code"]) == ("refused", "lookup_stopped")  # continuable
        assert source.account.stopped == "lookup_repeated_loss"  # the stop keeps its code
    finally:
        source.close()


def test_an_epoch_is_never_started_twice(tmp_path: Path) -> None:
    path = tmp_path / "account.sqlite"
    DurablePermitSource.open(path, CAP, RMAX, epoch="e-1").close()
    with pytest.raises(SpendError) as caught:
        DurablePermitSource.open(path, CAP, RMAX, epoch="e-1")
    assert caught.value.code == "lookup_account_invalid"
    DurablePermitSource.open(path, CAP, RMAX, epoch="e-2").close()


@pytest.mark.anyio
async def test_an_account_locked_past_its_timeout_is_a_typed_stop_that_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from continuity.spend import durable

    # the policy durable opens its file with, waiting 50 ms for another writer
    monkeypatch.setattr(durable, "PERMIT_ACCOUNT", replace(PERMIT_ACCOUNT, timeout=0.05))
    path = tmp_path / "account.sqlite"
    source = DurablePermitSource.open(path, CAP, RMAX)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer that never lets go
    try:
        with pytest.raises(SpendError) as caught:
            await source.admit("r1", "slot-1", 1, "d1", RMAX)
        assert (caught.value.code, caught.value.outcome) == (
            "lookup_account_failed",
            "integrity_stop",
        )
        with pytest.raises(SpendError) as failed:
            await source.stop("lookup_integrity_stop")
        assert failed.value.code == "lookup_account_failed"
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert _hold_states(path) == []  # no permit without its hold
    # the stop this process could not write still closes its admission
    assert await source.admit("r2", "slot-1", 1, "d2", RMAX) == Refusal("lookup_integrity_stop")
    source.close()


@settings(max_examples=25, deadline=None)
@given(
    cap_cents=st.integers(min_value=392, max_value=2_000),
    steps=st.lists(
        st.tuples(st.sampled_from(_KINDS[:-1]), st.integers(min_value=0, max_value=392)),
        max_size=15,
    ),
)
def test_the_file_and_the_memory_account_decide_alike(
    cap_cents: int, steps: list[tuple[str, int]]
) -> None:
    """One account core, two books: the same admissions, refusals, totals and stops."""
    import anyio

    from continuity.spend.permits import TestOnlyPermitSource

    async def run(path: Path) -> None:
        cap = Decimal(cap_cents) / 100
        durable = DurablePermitSource.open(path, cap, RMAX, epoch="epoch-1")
        memory = TestOnlyPermitSource(cap, RMAX)
        try:
            for index, (kind, cents) in enumerate(steps):
                outcomes = []
                for source in (durable, memory):
                    permit = await source.admit(f"r{index}", f"slot-{index // 2}", 1, "d", RMAX)
                    if isinstance(permit, Permit):
                        cost = str(Decimal(cents) / 100) if kind == "settled" else None
                        settlement = Settlement(kind=kind, cost=cost)  # type: ignore[arg-type]
                        await source.settle(permit, settlement, None, None)
                    granted = permit.request_id if isinstance(permit, Permit) else permit
                    account = source.account
                    outcomes.append((granted, account.total(), account.stopped, account.holds))
                assert outcomes[0] == outcomes[1]
        finally:
            durable.close()

    with tempfile.TemporaryDirectory() as scratch:
        anyio.run(run, Path(scratch) / "account.sqlite")
