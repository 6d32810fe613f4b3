"""`doit units --real --cost-cap`: a hard cap on a real run, against the loopback wire
server, with lost streams and a SIGKILL mid-run.

Everything but the model is the real path: guards, unit workers, forked probe
processes, httpx streaming over loopback, the call cache, the invocation ledger and the
cost-cap account in SQLite. The invariant checked everywhere: settled + retained +
in-flight holds never exceed the cap.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest

from continuity.errors import RealModeError, RunIncomplete
from continuity.plan.pricing import load_catalog, model_price, rate_card
from continuity.providers.costcap import CapTotals, CostCap, price_usage
from continuity.runner.units.build import UnitRecord
from continuity.servers.wire import Faults, WireServer, serve_in_thread
from tests.conftest import REPO
from tests.runner.test_real import Rig, _start_killable

READER = "openai-codex:gpt-6-mini"


def spend(rig: Rig) -> CapTotals:
    return msgspec.json.decode((rig.output / "spend.json").read_bytes(), type=CapTotals)


def account_rows(rig: Rig) -> list[tuple[str, str, str | None]]:
    cost = CostCap.open(rig.output / ".spend" / "cost-cap.sqlite3", "test")
    try:
        rows = cost._db.execute("SELECT state, amount, reason FROM holds ORDER BY id").fetchall()
    finally:
        cost.close()
    return [(state, amount, reason) for state, amount, reason in rows]


def within_cap(totals: CapTotals) -> None:
    assert totals.cap is not None
    committed = Decimal(totals.settled) + Decimal(totals.retained) + Decimal(totals.active)
    assert Decimal(totals.committed) == committed
    assert committed <= Decimal(totals.cap)


def fresh_call_prices(records: list[UnitRecord], replayed: set[str]) -> Decimal:
    """What the calls the run made (not replayed) cost at list price, from their receipts."""
    price = model_price(load_catalog(), READER)
    assert price is not None
    card = rate_card(price)
    total = Decimal(0)
    for record in records:
        for probe in record.probes:
            for call in probe.evidence.calls if probe.evidence else ():
                if call.key not in replayed:
                    cost = price_usage(card, call.usage)
                    assert cost is not None
                    total += cost
    return total


def test_a_capped_run_settles_every_call_retains_lost_streams_and_resumes_within_the_cap(
    tmp_path: Path, clean_checkout: Path
) -> None:
    # native, two probes: call 1 completes, call 2's stream is cut halfway (lost).
    app = WireServer(faults=Faults(truncate_from=2))
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", arms="native", judge="none")
        with pytest.raises(RunIncomplete):
            rig.run(cost_cap="1.00")
        assert app.count() == 2
        first = spend(rig)
        within_cap(first)
        assert (first.settled_calls, first.retained_calls, first.active) == (1, 1, "0")
        lost_hold = Decimal(first.retained)
        assert lost_hold > 0
        app.faults = Faults()
        resumed = rig.run(cost_cap="1.00")  # call 1 replays from the cache, for free
        assert app.count() == 3
    totals = resumed.spend
    assert totals is not None and totals == spend(rig)
    within_cap(totals)
    assert (totals.settled_calls, totals.retained_calls) == (2, 1)
    assert Decimal(totals.retained) == lost_hold  # the lost call stays counted, for good
    assert [p.status for p in resumed.records[0].probes] == ["valid", "valid"]
    # every settlement is the list price of the usage the endpoint reported
    assert Decimal(totals.settled) == fresh_call_prices(resumed.records, replayed=set())
    assert [s for s, _, _ in account_rows(rig)] == ["settled", "retained", "settled"]


def test_a_request_that_could_pass_the_cap_is_never_sent(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "anthropic", arms="native", judge="none")
        # any hold is above 4,096 output tokens x $2 / 10^6 = $0.008192 plus its input
        with pytest.raises(RunIncomplete) as caught:
            rig.run(cost_cap="0.01", traces=None)
        assert app.count() == 0
    assert caught.value.code == "run_stopped"
    assert "cost_cap_reached" in caught.value.message
    totals = spend(rig)
    assert (totals.committed, totals.settled_calls, totals.retained_calls) == ("0", 0, 0)
    assert not list((rig.output / "units").glob("*.json"))


def test_the_cap_stops_admission_once_the_next_hold_would_pass_it(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-responses", arms="native", judge="none")
        with pytest.raises(RunIncomplete) as caught:
            # four traces, two live turns each; a hold is about $0.033 and a settled call
            # at most $0.004 here, so a few calls fit and the rest never start
            rig.run(cost_cap="0.04", traces=None)
        sent = app.count()
    assert 1 <= sent < 8
    assert "cost_cap_reached" in caught.value.message
    totals = spend(rig)
    within_cap(totals)
    assert totals.settled_calls == sent
    # the refusal names the hold that did not fit and the committed spend it saw
    match = re.search(
        r"up to \$([0-9.]+) would take committed spend \$([0-9.]+)", caught.value.message
    )
    assert match is not None
    refused, seen = Decimal(match.group(1)), Decimal(match.group(2))
    assert seen == Decimal(totals.committed)
    assert seen + refused > Decimal("0.04")


def test_a_sigkilled_capped_run_resumes_with_its_held_request_counted(
    tmp_path: Path, clean_checkout: Path
) -> None:
    # native over four traces, one call at a time: call 1 completes, call 2's stream is
    # cut (lost), call 3 hangs with its hold active, and the whole run is SIGKILLed there.
    app = WireServer(faults=Faults(truncate_from=2, hang_from=3))
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", arms="native", judge="none")
        proc = _start_killable(tmp_path, rig, clean_checkout, cost_cap="0.50", traces=None)
        try:
            deadline = time.monotonic() + 120
            while app.count() < 3:
                assert proc.poll() is None, "the run ended before it could be killed"
                assert time.monotonic() < deadline, "the run never reached call 3"
                time.sleep(0.05)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        # the hung request's hold was on disk before it was sent; the lost one retained
        assert [s for s, _, _ in account_rows(rig)] == ["settled", "retained", "active"]
        app.faults = Faults()
        resumed = rig.run(cost_cap="0.50", traces=None)
    totals = resumed.spend
    assert totals is not None
    within_cap(totals)
    rows = account_rows(rig)
    assert [r for _, _, r in rows[:3]] == [None, "stream_lost", "invocation_ended"]
    assert [s for s, _, _ in rows[3:]] == ["settled"] * (len(rows) - 3)
    assert Decimal(totals.active) == 0 and totals.retained_calls == 2
    assert len(resumed.records) == 4
    assert all(p.status == "valid" for r in resumed.records for p in r.probes)


def test_cost_cap_values_are_checked_before_anything_runs(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", arms="native", judge="none")
        for bad in ("0", "-1", "1.005", "1e3", "abc", "0.00"):
            with pytest.raises(RealModeError) as caught:
                rig.run(cost_cap=bad)
            assert caught.value.code == "cost_cap_invalid"
            assert caught.value.location == "--cost-cap"
        assert app.count() == 0
    assert not rig.output.exists()


def test_a_cap_needs_known_rates_for_every_model_the_run_calls(
    tmp_path: Path, clean_checkout: Path
) -> None:
    catalog = msgspec.json.decode((REPO / "fixtures/pricing/catalog.json").read_bytes())
    catalog["models"][READER]["output"] = None
    pricing = tmp_path / "catalog.json"
    pricing.write_bytes(msgspec.json.encode(catalog))
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", arms="native", judge="none")
        with pytest.raises(RealModeError) as caught:
            rig.run(cost_cap="1", pricing=str(pricing))
        assert app.count() == 0
    assert caught.value.code == "cost_cap_price_unknown"
    assert caught.value.location == READER
    assert "base.output" in caught.value.message


def test_judge_calls_are_held_and_unreported_usage_keeps_its_hold(
    tmp_path: Path, clean_checkout: Path
) -> None:
    # every call reports its input but no output count: nothing says what was billed
    app = WireServer(faults=Faults(partial_usage_from=1))
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", arms="native")  # with a judge
        with contextlib.suppress(RunIncomplete):  # whether units finish is not the point
            rig.run(cost_cap="2.00")
        sent = app.count()
    rows = account_rows(rig)
    assert sent >= 2 and len(rows) == sent  # every call, the judge's too, was held first
    assert {state for state, _, _ in rows} == {"retained"}
    assert {reason for _, _, reason in rows} == {"usage_unreported"}
    within_cap(spend(rig))


def test_a_resumed_run_keeps_its_cap_unless_raise_cap_changes_it_on_record(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", arms="native", judge="none")
        first = rig.run(cost_cap="1.00")
        sent = app.count()
        with pytest.raises(RealModeError) as caught:  # last writer no longer wins
            rig.run(cost_cap="2.00")
        assert (caught.value.code, caught.value.location) == ("cost_cap_mismatch", "--cost-cap")
        assert "$1.00" in caught.value.message and "$2.00" in caught.value.message
        assert spend(rig) == first.spend  # nothing ran, nothing was written
        raised = rig.run(cost_cap="2.00", raise_cap=True)
        assert app.count() == sent  # every call replays from the cache
    totals = spend(rig)
    assert totals == raised.spend and totals.cap == "2.00"
    (change,) = totals.cap_changes
    assert (change.old, change.new) == ("1.00", "2.00")
    assert f"cap changed from $1.00 to $2.00 by {change.who}" in totals.line()
    within_cap(totals)


def test_doit_units_refuses_raise_cap_offline(tmp_path: Path) -> None:
    from tests.graph.test_dodo import doit

    result = doit(tmp_path, "units", "--raise-cap", check=False)  # a cap change is --real
    assert result.returncode != 0
    assert "real_flag_required" in result.stdout + result.stderr
    assert "--raise-cap" in result.stdout + result.stderr
