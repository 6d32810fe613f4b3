"""The price source a real plan binds (catalog bytes, genai-prices version, the day its
prices are taken on): shown, recorded, bound; prices never depend on the clock."""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path

import genai_prices.data_snapshot
import genai_prices.types
import msgspec
import pytest
from blake3 import blake3
from genai_prices.data import providers
from genai_prices.types import (
    ConditionalPrice,
    ModelInfo,
    StartDateConstraint,
    TimeOfDateConstraint,
)
from genai_prices.types import ModelPrice as GenaiPrice

from continuity.errors import PricingError, RealModeError
from continuity.messages import Usage
from continuity.plan import price_db
from continuity.plan.estimate import dry_run, record_dry_run
from continuity.plan.estimate_format import format_dry_run
from continuity.plan.from_request import plan_from_request
from continuity.plan.guards import check_real_mode
from continuity.plan.plan import build_plan, plan_digest
from continuity.plan.price_db import convert_price, prices_on
from continuity.plan.pricing import (
    call_cost,
    default_catalog_path,
    load_catalog,
    model_price,
    price_source,
)
from continuity.plan.request import PlanRequest
from continuity.plan.workload import workload
from continuity.store import Store
from tests.plan.installed_prices import (
    DAY,
    SNAPSHOT,
    empty_catalog,
    expected_usd,
    has_input_tier,
    pick,
)

VERSION = importlib.metadata.version("genai-prices")
REAL = {"provider": "anthropic", "credentials": "/c.json", "arms": "native", "probe_limit": 1}


def _catalog_dated(tmp_path: Path, as_of: str, *, models: bool = True) -> Path:
    """The checked-in catalog with another ``as_of`` (and, with `models` false, listing
    no model, so every price comes from genai-prices)."""
    document = json.loads(default_catalog_path().read_text())
    document["as_of"] = as_of
    document["models"] = document["models"] if models else {}
    path = tmp_path / f"catalog-{as_of}.json"
    path.write_text(json.dumps(document))
    return path


# -- the day prices are taken on ---------------------------------------------------------


def _dated_changes() -> Iterator[tuple[str, ModelInfo, date]]:
    """(provider, model, start) for each dated price change in the installed data,
    OpenAI and Anthropic first, whose price we can convert on both sides of it."""
    order = sorted(providers, key=lambda p: p.id not in ("openai", "anthropic"))
    for provider in order:
        for info in provider.models:
            if isinstance(info.prices, GenaiPrice):
                continue
            for entry in info.prices:
                if isinstance(entry.constraint, StartDateConstraint):
                    yield provider.id, info, entry.constraint.start_date


def _takes_its_id(provider: str, info: ModelInfo) -> bool:
    try:
        return SNAPSHOT.find_provider_model(info.id, None, provider, None)[1] is info
    except LookupError:
        return False


class _ClockRead(datetime):
    """A `datetime` whose clock fails the test when read."""

    @classmethod
    def now(cls, tz: object = None) -> _ClockRead:
        raise AssertionError("the clock was read while pricing")


def test_prices_are_taken_on_the_catalogs_day_and_the_clock_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model whose price changes on a date is priced as the library prices it on the
    catalog's ``as_of`` day: the day before the change and the day of it give the two
    prices, whatever the clock says (reading it fails the test)."""
    for module in (genai_prices.types, genai_prices.data_snapshot, price_db):
        monkeypatch.setattr(module, "datetime", _ClockRead, raising=False)
    price_db.database_price.cache_clear()
    seen = 0
    for provider, info, start in _dated_changes():
        before, on = start - timedelta(days=1), start
        model = f"{provider}:{info.id}"
        library = [
            info.get_prices(datetime.combine(day, time(12), tzinfo=UTC)) for day in (before, on)
        ]
        converted = [convert_price(p, info.context_window, where="w") for p in library]
        if None in converted or converted[0] == converted[1]:
            continue
        if not _takes_its_id(provider, info):
            continue  # another of the provider's models takes this id
        paths = [_catalog_dated(tmp_path, d.isoformat(), models=False) for d in (before, on)]
        ours = [model_price(load_catalog(path), model) for path in paths]
        assert ours == converted, model
        seen += 1
        if seen == 3:
            break
    if seen == 0:
        pytest.skip("the installed genai-prices has no dated price change")


def test_a_price_that_changes_within_the_day_is_unknown() -> None:
    flat = GenaiPrice(input_mtok=Decimal(1), output_mtok=Decimal(2))
    raised = GenaiPrice(input_mtok=Decimal(3), output_mtok=Decimal(4))
    off_peak = GenaiPrice(input_mtok=Decimal("0.5"), output_mtok=Decimal(1))

    def model(*conditions: ConditionalPrice) -> ModelInfo:
        return ModelInfo(
            id="m", match=genai_prices.types.ClauseEquals(equals="m"), prices=list(conditions)
        )

    dated = model(
        ConditionalPrice(prices=flat),
        ConditionalPrice(StartDateConstraint(start_date=date(2026, 3, 1)), prices=raised),
    )
    assert prices_on(dated, date(2026, 2, 28)) is flat
    assert prices_on(dated, date(2026, 3, 1)) is raised
    # No condition holds: the first price, as the library does.
    future = model(
        ConditionalPrice(StartDateConstraint(start_date=date(2099, 1, 1)), prices=raised)
    )
    assert prices_on(future, date(2026, 3, 1)) is raised
    window = TimeOfDateConstraint(start_time=time(16, 30), end_time=time(0, 30))
    daily = model(ConditionalPrice(prices=flat), ConditionalPrice(window, prices=off_peak))
    assert prices_on(daily, date(2026, 3, 1)) is None
    # A later dated price replaces the time-of-day one from its start on.
    ended = model(
        ConditionalPrice(prices=flat),
        ConditionalPrice(window, prices=off_peak),
        ConditionalPrice(StartDateConstraint(start_date=date(2026, 3, 1)), prices=raised),
    )
    assert prices_on(ended, date(2026, 2, 28)) is None
    assert prices_on(ended, date(2026, 3, 1)) is raised
    for provider in providers:  # the installed data's time-of-day prices, if any
        for info in provider.models:
            if prices_on(info, DAY) is None and _takes_its_id(provider.id, info):
                assert model_price(empty_catalog(), f"{provider.id}:{info.id}") is None


def test_the_days_price_is_the_librarys_all_through_that_day() -> None:
    """Against the library's own rule (`ModelInfo.get_prices`) for every conditionally
    priced model of the installed data: the day's price is its price every 5 minutes of the day; a
    model we call unknown for the day has more than one price within it."""
    midnight = datetime.combine(DAY, time(0), tzinfo=UTC)
    hours = [midnight + timedelta(minutes=m) for m in range(0, 24 * 60, 5)]  # every 5 min
    conditional = [
        info
        for provider in providers
        for info in provider.models
        if not isinstance(info.prices, GenaiPrice)
    ]
    assert conditional, "the installed genai-prices has no conditional price"
    for info in conditional:
        day_price = prices_on(info, DAY)
        library = [info.get_prices(at) for at in hours]
        if day_price is None:
            assert any(p is not library[0] for p in library), info.id
        else:
            assert all(p is day_price for p in library), info.id


@pytest.mark.parametrize("as_of", ["", "2026-13-01", "29 Nov 2026", "20261129", "2026-11-29T00:00"])
def test_a_catalog_whose_as_of_is_not_a_day_is_refused(tmp_path: Path, as_of: str) -> None:
    path = _catalog_dated(tmp_path, as_of)
    for load in (load_catalog, price_source):
        with pytest.raises(PricingError) as caught:
            load(path)
        assert caught.value.code == "pricing_invalid"
        assert caught.value.location == f"{path}:$.as_of"
    with pytest.raises(PricingError) as caught:
        model_price(empty_catalog(as_of), "openai:gpt-4o")
    assert caught.value.code == "pricing_invalid" and caught.value.location == "catalog:$.as_of"


# -- shown, recorded, bound ----------------------------------------------------------------


def test_the_dry_run_shows_and_records_the_price_source(tmp_path: Path) -> None:
    catalog_digest = blake3(default_catalog_path().read_bytes()).hexdigest()
    for plan in (plan_from_request(PlanRequest.of(REAL)), build_plan(arms="native", probe_limit=1)):
        source = plan.pricing or price_source()
        result = dry_run(plan, workload(plan), load_catalog(), prices=source)
        assert result.prices is not None
        assert result.prices.catalog_blake3 == catalog_digest
        assert (result.prices.library, result.prices.library_version) == ("genai-prices", VERSION)
        assert result.prices.prices_on == load_catalog().as_of == DAY.isoformat()
        text = format_dry_run(result, load_catalog())
        assert f"genai-prices {VERSION} as of {DAY.isoformat()}" in text
        assert catalog_digest[:16] in text
        assert ("bound into the digest" in text) == (plan.mode == "real")
        path = record_dry_run(Store(tmp_path / "store"), result, tmp_path / "out")
        recorded = json.loads(path.read_text())["prices"]
        assert recorded["library_version"] == VERSION
        assert recorded["catalog_blake3"] == catalog_digest
        assert recorded["prices_on"] == DAY.isoformat()


def test_the_price_source_binds_a_real_plans_digest_only(tmp_path: Path) -> None:
    plan = plan_from_request(PlanRequest.of(REAL))
    assert plan.pricing is not None and plan.pricing.library_version == VERSION
    digest = plan_digest(plan)
    for change in ({"library_version": VERSION + ".post1"}, {"prices_on": "2030-01-01"}):
        moved = msgspec.structs.replace(plan.pricing, **change)
        assert plan_digest(msgspec.structs.replace(plan, pricing=moved)) != digest
    # The catalog binds by content: a copy elsewhere keeps the digest, an edit moves it.
    copy = tmp_path / "copy.json"
    copy.write_bytes(default_catalog_path().read_bytes())
    assert plan_digest(plan_from_request(PlanRequest.of({**REAL, "pricing": str(copy)}))) == digest
    edited = _catalog_dated(tmp_path, "2026-12-01")
    later = plan_from_request(PlanRequest.of({**REAL, "pricing": str(edited)}))
    assert later.pricing is not None and later.pricing.prices_on == "2026-12-01"
    assert plan_digest(later) != digest
    # Offline plans bind no prices: the catalog never moves their digest.
    offline = plan_from_request(PlanRequest.of({"pricing": str(edited)}))
    assert offline.pricing is None and offline == build_plan()


def test_a_price_database_upgrade_refuses_the_old_confirmation(tmp_path: Path) -> None:
    """A dry run confirmed under one genai-prices version does not confirm the plan the
    next version binds: guard 5 (confirmation_mismatch), before any credential."""
    store = Store(tmp_path / "store")
    old = plan_from_request(PlanRequest.of(REAL))
    assert old.pricing is not None
    confirmed = dry_run(old, workload(old), load_catalog())
    record_dry_run(store, confirmed, tmp_path / "out")
    new = msgspec.structs.replace(
        old, pricing=msgspec.structs.replace(old.pricing, library_version="999.0")
    )
    with pytest.raises(RealModeError) as caught:
        check_real_mode(
            new,
            confirm=confirmed.digest,
            credentials="/c.json",
            output=str(tmp_path / "run"),
            store=store,
            environ={},
        )
    assert caught.value.code == "confirmation_mismatch"


def test_the_spend_report_prices_real_calls_per_call_with_tiers_and_cache() -> None:
    """The report's spend goes through the same lookup: each distinct call is priced on
    its own input (one crosses the model's input tier, one does not); a call replayed
    under the same key is paid once; a judge on an unknown model is unknown."""
    from continuity.report.spend import arm_spend, judge_spend
    from continuity.report.summary import UnitSummary

    model = pick(
        "anthropic",
        "claude-sonnet-4-5",
        "an input tier with cache read and write prices",
        lambda m: has_input_tier(m, "cache_read_mtok", "cache_write_mtok"),
    )
    start = model.rates["input_mtok"].tiers[0].start  # type: ignore[union-attr]
    short = Usage(input=10_000, cache_write=4_000, cache_read=start - 10_000, output=1_000)
    long = msgspec.structs.replace(short, cache_read=short.cache_read + 1)
    unit = UnitSummary(
        key="u",
        repeat=1,
        family="original",
        trace_id="t",
        arm="native",
        rows=[],
        usage=Usage(),
        compaction_usage=Usage(),
        judge=[],
        calls=[
            ("k1", "answer", model.id, short),
            ("k2", "answer", model.id, long),
            ("k2", "answer", model.id, long),  # replayed from the call cache: paid once
            ("j1", "judge", "openai:gpt-99-nonsense", Usage(input=100, output=5)),
        ],
    )
    catalog = empty_catalog()
    spend = arm_spend(catalog, [unit], ["original"])
    expected = expected_usd(model.rates, short) + expected_usd(model.rates, long)
    assert spend.model_calls == 2 and spend.unpriced_calls == 0
    assert spend.cost_usd == pytest.approx(expected, abs=1e-6)
    assert call_cost(catalog, model.id, long) != pytest.approx(
        call_cost(catalog, model.id, short), rel=1e-3
    )
    judge = judge_spend(load_catalog(), [unit], verdicts=1)
    assert judge.cost_usd is None and judge.unpriced_calls == 1
