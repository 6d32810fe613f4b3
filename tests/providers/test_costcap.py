"""The run cost cap's account: holds before sends, settlement, retention, reopening.

Real SQLite files, real child processes for the shared-account checks; the HTTP side
is `tests/runner/test_real_cost_cap.py` (a loopback wire server)."""

from __future__ import annotations

import multiprocessing
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import ProviderError, RealModeError
from continuity.messages import ModelRequest, ToolDefinition, Usage, UserMessage
from continuity.providers.costcap import (
    FRAMING,
    CapTotals,
    CostCap,
    RateCard,
    RateTier,
    price_usage,
)
from continuity.runner.cost_account import parse_cost_cap

MODEL = "openai-codex:gpt-6-mini"
CARD = RateCard(
    base=RateTier(input="0.25", output="2", cache_read="0.025", cache_write="0.25"),
)
TIERED = RateCard(
    base=RateTier(input="15", output="75", cache_read="1.5", cache_write="18.75"),
    tiers=((200_000, RateTier(input="30", output="112.5", cache_read="3", cache_write="37.5")),),
)


def account(tmp_path: Path, cap: str | None = "1.00", invocation: str = "inv-1") -> CostCap:
    return CostCap.create(
        tmp_path / "cap.sqlite3",
        cap=Decimal(cap) if cap is not None else None,
        rates={MODEL: CARD, "tiered": TIERED},
        invocation=invocation,
    )


def request(tools: int = 0, messages: int = 1) -> ModelRequest:
    return ModelRequest(
        session_id="s",
        provider="p",
        model="m",
        system="s",
        messages=tuple(UserMessage(text="hello") for _ in range(messages)),
        tools=tuple(
            ToolDefinition(name=f"t{i}", description="d", input_schema={}) for i in range(tools)
        ),
    )


def test_price_usage_is_exact_and_uses_the_tier_the_whole_input_selects() -> None:
    usage = Usage(input=1_000, cache_read=0, output=500)
    assert price_usage(CARD, usage) == Decimal("0.00125")  # 1000 x .25 + 500 x 2, / 10^6
    cached = Usage(input=1_000, cache_read=1_000, output=0, cache_write=400)
    # 600 uncached at .25, 1000 read at .025, 400 written at .25
    assert price_usage(CARD, cached) == Decimal("0.000275")
    big = Usage(input=150_000, cache_read=60_000, output=10)
    assert (
        price_usage(TIERED, big)
        == (Decimal(150_000) * 30 + Decimal(60_000) * 3 + Decimal(10) * Decimal("112.5"))
        / 1_000_000
    )
    unknown = RateCard(base=RateTier(input="1", output="1"))
    assert price_usage(unknown, Usage(input=10, cache_read=5, output=1)) is None


def test_a_hold_is_the_worst_price_of_the_body_and_the_output_cap(tmp_path: Path) -> None:
    cost = account(tmp_path)
    holds = cost.call("tiered", request(tools=2, messages=3), max_output=1_000)
    body = b"x" * 10_000
    holds.before_send(body)
    bound = 10_000 + FRAMING.per_request + FRAMING.per_message * 4 + FRAMING.per_tool * 2
    assert holds.bound == bound
    # the highest input-side rate anywhere (tier cache write 37.5), the highest output (112.5)
    assert holds.amount == (Decimal(bound) * Decimal("37.5") + 1_000 * Decimal("112.5")) / 10**6
    totals = cost.totals()
    assert Decimal(totals.active) == holds.amount
    assert Decimal(totals.committed) == holds.amount


def test_settle_release_and_retain(tmp_path: Path) -> None:
    cost = account(tmp_path)
    settled = cost.call(MODEL, request(), 100)
    settled.before_send(b"{}")
    settled.settle(Usage(input=100, cache_read=0, output=10))
    released = cost.call(MODEL, request(), 100)
    released.before_send(b"{}")
    released.not_billed("http_429")
    lost = cost.call(MODEL, request(), 100)
    lost.before_send(b"{}")
    lost.close("stream_lost")
    lost.close("again")  # closing twice changes nothing
    totals = cost.totals()
    assert Decimal(totals.settled) == Decimal("0.000045")
    assert Decimal(totals.retained) == lost.amount
    assert Decimal(totals.active) == 0
    assert (totals.settled_calls, totals.retained_calls, totals.released_attempts) == (1, 1, 1)
    assert Decimal(totals.committed) == Decimal(totals.settled) + lost.amount


def test_a_request_that_could_pass_the_cap_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    cost = account(tmp_path, cap="0.01")
    first = cost.call(MODEL, request(), 1_000)
    first.before_send(b"x" * 1_000)  # (1000 + 4608) x .25 + 1000 x 2 = 0.003402
    assert first.amount == Decimal("0.003402")
    second = cost.call(MODEL, request(), 1_000)
    second.before_send(b"x" * 1_000)
    with pytest.raises(ProviderError) as caught:  # a third: 0.010206 > 0.01
        cost.call(MODEL, request(), 1_000).before_send(b"x" * 1_000)
    assert caught.value.code == "cost_cap_reached"
    assert caught.value.stops_admission
    totals = cost.totals()
    assert Decimal(totals.committed) == Decimal("0.006804")  # the refusal wrote nothing
    assert Decimal(totals.active) == Decimal("0.006804")


def test_the_cap_is_exact_at_the_boundary(tmp_path: Path) -> None:
    cost = account(tmp_path, cap="0.01")
    holds = cost.call(MODEL, request(), 0)
    # (bytes + 4608) x 0.25 / 10^6 = 0.01 exactly at 35,392 bytes
    holds.before_send(b"x" * 35_392)
    assert holds.amount == Decimal("0.01")
    with pytest.raises(ProviderError):
        cost.call(MODEL, request(), 0).before_send(b"")  # any more is past it


def test_a_broken_bound_settles_high_and_stops_the_account(tmp_path: Path) -> None:
    cost = account(tmp_path)
    holds = cost.call(MODEL, request(), 10)
    holds.before_send(b"{}")
    holds.settle(Usage(input=100, cache_read=0, output=11))  # output above max_output
    totals = cost.totals()
    assert totals.stopped is not None
    assert totals.stopped.startswith("cost_cap_assumption_broken: output 11 > max_output 10")
    assert Decimal(totals.settled) == holds.amount  # the higher of price and hold
    with pytest.raises(ProviderError) as caught:
        cost.call(MODEL, request(), 10).before_send(b"{}")
    assert caught.value.code == "cost_cap_assumption_broken"
    assert caught.value.stops_admission


def test_input_above_the_bound_also_breaks_it(tmp_path: Path) -> None:
    cost = account(tmp_path)
    holds = cost.call(MODEL, request(), 10)
    holds.before_send(b"{}")
    holds.settle(Usage(input=holds.bound + 1, cache_read=0, output=1))
    assert (cost.totals().stopped or "").startswith("cost_cap_assumption_broken: input")


def test_reopening_retains_what_an_ended_invocation_left_active(tmp_path: Path) -> None:
    cost = account(tmp_path, invocation="killed")
    holds = cost.call(MODEL, request(), 100)
    holds.before_send(b"{}")
    cost.close()  # the process died with the hold active
    resumed = account(tmp_path, cap=None, invocation="resumed")
    totals = resumed.totals()
    assert totals.cap == "1.00"  # no new cap given: the stored one holds
    assert Decimal(totals.retained) == holds.amount
    assert Decimal(totals.active) == 0
    raised = CostCap.create(  # another cap takes --raise-cap
        tmp_path / "cap.sqlite3", cap=Decimal("2.50"), rates={}, invocation="third", raise_cap=True
    )
    assert raised.totals().cap == "2.50"
    assert Decimal(raised.totals().retained) == holds.amount  # still counted, for good


def test_no_rates_for_a_model_is_refused(tmp_path: Path) -> None:
    cost = account(tmp_path)
    with pytest.raises(ProviderError) as caught:
        cost.call("nobody:knows", request(), 1).before_send(b"{}")
    assert caught.value.code == "cost_cap_price_unknown"


def test_a_missing_or_foreign_account_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as caught:
        CostCap.open(tmp_path / "absent.sqlite3", "x")
    assert caught.value.code == "cost_cap_account_invalid"
    foreign = tmp_path / "foreign" / "cap.sqlite3"
    foreign.parent.mkdir()
    foreign.write_bytes(b"not a database, just some bytes " * 64)
    with pytest.raises(ProviderError) as caught:
        CostCap.create(foreign, cap=Decimal(1), rates={}, invocation="x")
    assert caught.value.code == "cost_cap_account_invalid"


def test_rate_card_missing_names_every_absent_rate() -> None:
    card = RateCard(
        base=RateTier(input=None, output="1"),
        tiers=((10, RateTier(input="1", output=None)),),
    )
    assert card.missing() == ["base.input", "tier>10.output"]
    assert CARD.missing() == []


def _hold_many(path: str, count: int) -> None:
    cost = CostCap.open(path, "inv-1")
    for _ in range(count):
        try:
            cost.call(MODEL, request(), 1_000).before_send(b"x" * 1_000)
        except ProviderError:
            return


def test_processes_sharing_the_account_never_pass_the_cap_together(tmp_path: Path) -> None:
    cost = account(tmp_path, cap="0.10")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_hold_many, args=(str(cost.path), 20)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    totals = cost.totals()
    # 0.003402 each: 29 fit under 0.10 (0.098658); the 30th would not
    assert Decimal(totals.committed) == Decimal("0.003402") * 29
    assert Decimal(totals.committed) <= Decimal("0.10")


def test_an_unknown_cache_rate_is_priced_at_the_worst_input_rate(tmp_path: Path) -> None:
    card = RateCard(base=RateTier(input="1", output="4"))  # no cache rates at all
    cost = CostCap.create(
        tmp_path / "cap.sqlite3", cap=Decimal(1), rates={"m": card}, invocation="i"
    )
    holds = cost.call("m", request(), 100)
    holds.before_send(b"x" * 100)
    holds.settle(Usage(input=10, cache_read=30, output=5))
    totals = cost.totals()
    assert totals.stopped is None  # an upper bound, not a broken assumption
    assert Decimal(totals.settled) == Decimal(10 + 30 + 5 * 4) / 10**6


def test_a_failing_account_file_is_a_typed_stop(tmp_path: Path) -> None:
    cost = account(tmp_path)
    cost._db.close()  # the file can no longer be written through this connection
    with pytest.raises(ProviderError) as caught:
        cost.call(MODEL, request(), 10).before_send(b"{}")
    assert caught.value.code == "cost_cap_account_failed"
    assert caught.value.stops_admission


def test_another_cap_on_an_existing_account_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    first = account(tmp_path, cap="1.00")
    held = first.call(MODEL, request(), 100)
    held.before_send(b"{}")  # active: a refused invocation must not retain it
    with pytest.raises(RealModeError) as caught:
        account(tmp_path, cap="2.00", invocation="inv-2")
    assert caught.value.code == "cost_cap_mismatch"
    assert caught.value.location == "--cost-cap"
    assert "$1.00" in caught.value.message and "$2.00" in caught.value.message
    assert "--raise-cap" in caught.value.message
    totals = first.totals()
    assert (totals.cap, totals.cap_changes, totals.active) == ("1.00", (), str(held.amount))
    # the same cap spelled otherwise, or none at all, keeps the stored one
    account(tmp_path, cap="1", invocation="inv-3").close()
    account(tmp_path, cap=None, invocation="inv-4").close()
    assert (first.totals().cap, first.totals().cap_changes) == ("1.00", ())
    first.close()


def test_raise_cap_changes_the_cap_and_the_account_records_who_when_old_and_new(
    tmp_path: Path,
) -> None:
    account(tmp_path, cap="1.00").close()
    before = time.time()
    raised = CostCap.create(
        tmp_path / "cap.sqlite3",
        cap=Decimal("2.50"),
        rates={MODEL: CARD},
        invocation="inv-2",
        raise_cap=True,
    )
    totals = raised.totals()
    assert totals.cap == "2.50"
    (change,) = totals.cap_changes
    assert (change.old, change.new, change.invocation) == ("1.00", "2.50", "inv-2")
    assert "@" in change.who and before <= change.at <= time.time()
    assert "cap changed from $1.00 to $2.50 by " in totals.line()
    # a lower cap is a change too; both are kept, oldest first, and in spend.json's shape
    raised.close()
    lowered = CostCap.create(
        tmp_path / "cap.sqlite3", cap=Decimal("0.50"), rates={}, invocation="i3", raise_cap=True
    )
    changes = lowered.totals().cap_changes
    assert [(c.old, c.new) for c in changes] == [("1.00", "2.50"), ("2.50", "0.50")]
    encoded = msgspec.json.decode(msgspec.json.encode(lowered.totals()), type=CapTotals)
    assert encoded.cap_changes == changes
    with pytest.raises(ProviderError) as stopped:  # the new cap is the one enforced
        lowered.call(MODEL, request(), 1_000_000).before_send(b"{}")
    assert stopped.value.code == "cost_cap_reached"
    lowered.close()


def test_raise_cap_without_a_cost_cap_is_refused() -> None:
    with pytest.raises(RealModeError) as caught:
        parse_cost_cap(None, raise_cap=True)
    assert (caught.value.code, caught.value.location) == ("cost_cap_invalid", "--raise-cap")
    assert parse_cost_cap("3", raise_cap=True) == Decimal(3)


def _change_cap(path: str, cap: str, invocation: str, results: Any) -> None:
    try:
        CostCap.create(
            Path(path), cap=Decimal(cap), rates={}, invocation=invocation, raise_cap=True
        ).close()
        results.put("changed")
    except RealModeError as error:
        results.put(error.code)


def test_cap_changes_from_racing_processes_are_each_recorded(tmp_path: Path) -> None:
    cost = account(tmp_path, cap="1.00")
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    caps = [f"{n}.00" for n in range(2, 8)]
    workers = [
        context.Process(target=_change_cap, args=(str(cost.path), cap, f"inv-{cap}", results))
        for cap in caps
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert outcomes == ["changed"] * len(caps)
    totals = cost.totals()
    changes = totals.cap_changes
    # one chain: each change starts from the cap the previous one stored
    assert [c.old for c in changes] == ["1.00", *[c.new for c in changes[:-1]]]
    assert sorted(c.new for c in changes) == caps and totals.cap == changes[-1].new
    cost.close()
