"""Real model prices from genai-prices' bundled data, the catalog that overrides it, and
the price source a real plan binds into its digest (all offline)."""

from __future__ import annotations

import importlib.metadata
import json
from decimal import Decimal
from pathlib import Path

import genai_prices
import msgspec
import pytest
from blake3 import blake3
from genai_prices.data import providers
from genai_prices.types import ModelPrice as GenaiPrice
from genai_prices.types import Tier as GenaiTier
from genai_prices.types import TieredPrices

from continuity.errors import PricingError, RealModeError, UsageError
from continuity.messages import Usage
from continuity.plan.estimate import (
    check_cost_limit,
    check_model_limits,
    dry_run,
    format_dry_run,
    record_dry_run,
)
from continuity.plan.guards import check_real_mode
from continuity.plan.plan import build_plan, plan_digest, plan_from_options
from continuity.plan.price_catalog import Catalog
from continuity.plan.price_db import convert_price
from continuity.plan.pricing import (
    call_cost,
    default_catalog_path,
    load_catalog,
    model_price,
    price_source,
)
from continuity.plan.workload import workload
from continuity.store import Store

VERSION = importlib.metadata.version("genai-prices")
M = 1_000_000
REAL = {"provider": "anthropic", "credentials": "/c.json", "arms": "native", "probe_limit": 1}


def _empty() -> Catalog:
    return Catalog(
        schema="continuity-pricing-v1", currency="USD", unit="", as_of="", note="", models={}
    )


def _installed(provider: str, model: str) -> dict[str, object]:
    """The installed data's prices for one model (to show the figures below are its)."""
    info = next(m for p in providers if p.id == provider for m in p.models if m.id == model)
    assert isinstance(info.prices, GenaiPrice)  # no date conditions for these models
    return {k: v for k, v in vars(info.prices).items() if v is not None}


# -- OpenAI ------------------------------------------------------------------------------


def test_openai_gpt_4o_input_cached_input_and_output() -> None:
    # gpt-4o per million: input 2.50, cached input 1.25, output 10.00; no cache-write
    # price, so cache writes bill as input.
    data = _installed("openai", "gpt-4o")
    assert (data["input_mtok"], data["cache_read_mtok"], data["output_mtok"]) == (
        Decimal("2.5"),
        Decimal("1.25"),
        Decimal("10"),
    )
    assert "cache_write_mtok" not in data
    catalog = load_catalog()
    usage = Usage(input=12_000, cache_read=30_000, cache_write=2_000, output=700)
    expected = (10_000 * 2.5 + 30_000 * 1.25 + 2_000 * 2.5 + 700 * 10.0) / M
    assert call_cost(catalog, "openai:gpt-4o", usage) == pytest.approx(expected)
    # A dated id matches the model, as the library's rules say.
    assert call_cost(catalog, "openai:gpt-4o-2024-08-06", usage) == pytest.approx(expected)


def test_openai_gpt_5_4_long_context_tier() -> None:
    # gpt-5.4 per million: input 2.50 / cached 0.25 / output 15.00; above 272,000 input
    # tokens (cached included): 5.00 / 0.50 / 22.50 on every token of the call.
    data = _installed("openai", "gpt-5.4")
    tiered = data["input_mtok"]
    assert isinstance(tiered, TieredPrices)
    assert (tiered.base, [(t.start, t.price) for t in tiered.tiers]) == (
        Decimal("2.5"),
        [(272_000, Decimal("5"))],
    )
    catalog = load_catalog()
    at = call_cost(catalog, "openai:gpt-5.4", Usage(input=100_000, cache_read=172_000, output=10))
    assert at == pytest.approx((100_000 * 2.5 + 172_000 * 0.25 + 10 * 15.0) / M)
    above = call_cost(
        catalog, "openai:gpt-5.4", Usage(input=100_000, cache_read=172_001, output=10)
    )
    assert above == pytest.approx((100_000 * 5.0 + 172_001 * 0.5 + 10 * 22.5) / M)


# -- Anthropic ---------------------------------------------------------------------------


def test_anthropic_claude_sonnet_4_5_cache_read_write_and_tier() -> None:
    # claude-sonnet-4-5 per million: input 3.00, cache write 3.75, cache read 0.30,
    # output 15.00; above 200,000 input tokens: 6.00, 7.50, 0.60, 22.50.
    data = _installed("anthropic", "claude-sonnet-4-5")
    rates = {k: data[k] for k in ("input_mtok", "cache_write_mtok", "cache_read_mtok")}
    assert {k: (v.base, v.tiers[0].start, v.tiers[0].price) for k, v in rates.items()} == {  # type: ignore[attr-defined]
        "input_mtok": (Decimal("3"), 200_000, Decimal("6")),
        "cache_write_mtok": (Decimal("3.75"), 200_000, Decimal("7.5")),
        "cache_read_mtok": (Decimal("0.3"), 200_000, Decimal("0.6")),
    }
    catalog = load_catalog()
    model = "anthropic:claude-sonnet-4-5"
    # `input` counts the 4,000 tokens written to the cache; 50,000 more are read from it.
    base = call_cost(
        catalog, model, Usage(input=10_000, cache_write=4_000, cache_read=50_000, output=1_000)
    )
    assert base == pytest.approx((6_000 * 3.0 + 4_000 * 3.75 + 50_000 * 0.3 + 1_000 * 15.0) / M)
    long = call_cost(
        catalog, model, Usage(input=10_000, cache_write=4_000, cache_read=190_001, output=1_000)
    )
    assert long == pytest.approx((6_000 * 6.0 + 4_000 * 7.5 + 190_001 * 0.6 + 1_000 * 22.5) / M)
    # A dated id is the same model.
    assert model_price(catalog, "anthropic:claude-sonnet-4-5-20250929") == model_price(
        catalog, model
    )


def test_every_openai_and_anthropic_price_matches_the_library_calculator() -> None:
    """Our conversion against genai-prices' own `calc_price` (its code path, not ours)
    for every model of both providers we can price, below, across and above tiers."""
    usages = [
        Usage(input=1_000, cache_read=500, cache_write=200, output=300),
        Usage(input=150_000, cache_read=150_000, cache_write=1_000, output=10),
        Usage(input=300_000, output=5),
    ]
    compared = 0
    for provider in (p for p in providers if p.id in ("openai", "anthropic")):
        for info in provider.models:
            for usage in usages:
                ours = call_cost(_empty(), f"{provider.id}:{info.id}", usage)
                if ours is None:
                    continue
                theirs = genai_prices.calc_price(
                    genai_prices.Usage(
                        input_tokens=usage.total_input,
                        cache_read_tokens=usage.cache_read,
                        cache_write_tokens=usage.cache_write,
                        output_tokens=usage.output,
                    ),
                    info.id,
                    provider_id=provider.id,
                )
                assert ours == pytest.approx(float(theirs.total_price), abs=1e-12), info.id
                compared += 1
    assert compared > 200


# -- the catalog overrides; unknown stays unknown ------------------------------------------


def test_the_catalog_overrides_genai_prices_for_the_ids_it_lists(tmp_path: Path) -> None:
    catalog = load_catalog()
    # claude-opus-5-5 is in both: the catalog's fictional 15.00 input wins over 4.00.
    assert float(_installed("anthropic", "claude-opus-5-5")["input_mtok"]) == 4.0  # type: ignore[arg-type]
    short = Usage(input=100_000)  # below the catalog's 200k tier
    assert call_cost(catalog, "anthropic:claude-opus-5-5", short) == pytest.approx(1.5)
    assert call_cost(_empty(), "anthropic:claude-opus-5-5", short) == pytest.approx(0.4)
    # A catalog entry with unknown rates overrides a price the database has.
    document = json.loads(default_catalog_path().read_text())
    document["models"]["openai:gpt-4o"] = {"input": 1.0, "output": None}
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(document))
    mine = load_catalog(path)
    assert call_cost(mine, "openai:gpt-4o", Usage(input=M)) == pytest.approx(1.0)
    assert call_cost(mine, "openai:gpt-4o", Usage(input=M, output=1)) is None


@pytest.mark.parametrize(
    "model",
    ["openai:gpt-99-nonsense", "nobody:knows", "nocolon", ":gpt-4o", "openai:", "anthropic:gpt-4o"],
)
def test_a_model_nobody_prices_stays_unknown(model: str) -> None:
    assert model_price(load_catalog(), model) is None
    assert call_cost(load_catalog(), model, Usage(input=10, output=1)) is None


def test_an_unknown_real_model_leaves_the_plan_unpriced_never_free() -> None:
    plan = build_plan(arms="native", probe_limit=1, reader="openai:gpt-99-nonsense")
    result = dry_run(plan, workload(plan), load_catalog())
    assert result.upper_bound.usd is None and result.upper_bound.unpriced_calls > 0
    with pytest.raises(UsageError) as caught:
        check_cost_limit(result, 1_000.0)
    assert caught.value.code == "cost_unknown"


def test_genai_prices_limits_and_tiers_reach_the_dry_run() -> None:
    """A hard-suite probe (~226k tokens) cannot fit gpt-4o's 128k window, and crosses
    claude-sonnet-4-5's 200k tier: both come from the library's data."""
    small = build_plan("hard", [101], arms="native", probe_limit=1, reader="openai:gpt-4o")
    result = dry_run(small, workload(small), load_catalog())
    assert result.over_limit_calls == result.answer_calls > 0
    with pytest.raises(UsageError) as caught:
        check_model_limits(result)
    assert caught.value.code == "model_limit_exceeded"
    tiered = build_plan("hard", [101], arms="native", probe_limit=1, reader="openai:gpt-5.4")
    assert dry_run(tiered, workload(tiered), load_catalog()).tiered_calls == 0  # < 272k
    sonnet = msgspec.structs.replace(tiered, reader="anthropic:claude-sonnet-4-5")
    assert dry_run(sonnet, workload(sonnet), load_catalog()).tiered_calls > 0


# -- bad prices ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "price",
    [
        GenaiPrice(input_mtok=Decimal("-1")),
        GenaiPrice(input_mtok=Decimal("NaN")),
        GenaiPrice(
            output_mtok=TieredPrices(
                base=Decimal(1), tiers=[GenaiTier(start=5, price=Decimal("-2"))]
            )
        ),
        GenaiPrice(
            input_mtok=TieredPrices(base=Decimal(1), tiers=[GenaiTier(start=-5, price=Decimal(2))])
        ),
    ],
)
def test_a_bad_database_price_is_refused(price: GenaiPrice) -> None:
    with pytest.raises(PricingError) as caught:
        convert_price(price, None, where="genai-prices x:p/m")
    assert caught.value.code == "pricing_invalid"
    assert caught.value.location.startswith("genai-prices x:p/m")


def test_a_price_per_request_makes_the_model_unknown_but_media_prices_are_ignored() -> None:
    per_request = GenaiPrice(input_mtok=Decimal(1), requests_kcount=Decimal(5))
    assert convert_price(per_request, None, where="w") is None
    media = GenaiPrice(
        input_mtok=Decimal(1), input_audio_mtok=Decimal(40), web_searches_kcount=Decimal(10)
    )
    converted = convert_price(media, 8_000, where="w")
    assert converted is not None and converted.input == 1.0 and converted.context_window == 8_000


def test_a_bad_catalog_is_still_refused_by_a_real_plan(tmp_path: Path) -> None:
    with pytest.raises(PricingError) as caught:
        price_source(tmp_path / "missing.json")
    assert caught.value.code == "pricing_invalid"
    with pytest.raises(PricingError) as caught:
        plan_from_options({**REAL, "pricing": str(tmp_path / "missing.json")})
    assert caught.value.code == "pricing_invalid"
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "other"}')
    with pytest.raises(PricingError) as caught:
        load_catalog(bad)
    assert caught.value.code == "pricing_invalid"


# -- the price source: shown, recorded, bound ---------------------------------------------


def test_the_dry_run_shows_and_records_the_price_source(tmp_path: Path) -> None:
    catalog_digest = blake3(default_catalog_path().read_bytes()).hexdigest()
    for plan in (plan_from_options(REAL), build_plan(arms="native", probe_limit=1)):
        source = plan.pricing or price_source()
        result = dry_run(plan, workload(plan), load_catalog(), prices=source)
        assert result.prices is not None
        assert result.prices.catalog_blake3 == catalog_digest
        assert (result.prices.library, result.prices.library_version) == ("genai-prices", VERSION)
        text = format_dry_run(result, load_catalog())
        assert f"genai-prices {VERSION}" in text and catalog_digest[:16] in text
        assert ("bound into the digest" in text) == (plan.mode == "real")
        path = record_dry_run(Store(tmp_path / "store"), result, tmp_path / "out")
        recorded = json.loads(path.read_text())["prices"]
        assert recorded["library_version"] == VERSION
        assert recorded["catalog_blake3"] == catalog_digest


def test_the_price_source_binds_a_real_plans_digest_only(tmp_path: Path) -> None:
    plan = plan_from_options(REAL)
    assert plan.pricing is not None and plan.pricing.library_version == VERSION
    digest = plan_digest(plan)
    upgraded = msgspec.structs.replace(
        plan, pricing=msgspec.structs.replace(plan.pricing, library_version=VERSION + ".post1")
    )
    assert plan_digest(upgraded) != digest
    # The catalog binds by content: a copy elsewhere keeps the digest, an edit moves it.
    copy = tmp_path / "copy.json"
    copy.write_bytes(default_catalog_path().read_bytes())
    assert plan_digest(plan_from_options({**REAL, "pricing": str(copy)})) == digest
    edited = tmp_path / "edited.json"
    edited.write_text(default_catalog_path().read_text().replace("2026-11-29", "2026-12-01"))
    assert plan_digest(plan_from_options({**REAL, "pricing": str(edited)})) != digest
    # Offline plans bind no prices: the catalog never moves their digest.
    offline = plan_from_options({"pricing": str(edited)})
    assert offline.pricing is None and offline == build_plan()


def test_a_price_database_upgrade_refuses_the_old_confirmation(tmp_path: Path) -> None:
    """A dry run confirmed under one genai-prices version does not confirm the plan the
    next version binds: guard 5 (confirmation_mismatch), before any credential."""
    store = Store(tmp_path / "store")
    old = plan_from_options(REAL)
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
    its own input (one crosses claude-sonnet-4-5's 200k tier, one does not); a call
    replayed under the same key is paid once; a judge on an unknown model is unknown."""
    from continuity.report.spend import arm_spend, judge_spend
    from continuity.report.summary import UnitSummary

    model = "anthropic:claude-sonnet-4-5"
    short = Usage(input=10_000, cache_write=4_000, cache_read=50_000, output=1_000)
    long = Usage(input=10_000, cache_write=4_000, cache_read=190_001, output=1_000)
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
            ("k1", "answer", model, short),
            ("k2", "answer", model, long),
            ("k2", "answer", model, long),  # replayed from the call cache: paid once
            ("j1", "judge", "openai:gpt-99-nonsense", Usage(input=100, output=5)),
        ],
    )
    spend = arm_spend(load_catalog(), [unit], ["original"])
    expected = (6_000 * 3.0 + 4_000 * 3.75 + 50_000 * 0.3 + 1_000 * 15.0) / M + (
        6_000 * 6.0 + 4_000 * 7.5 + 190_001 * 0.6 + 1_000 * 22.5
    ) / M
    assert spend.model_calls == 2 and spend.unpriced_calls == 0
    assert spend.cost_usd == pytest.approx(expected, abs=1e-6)
    judge = judge_spend(load_catalog(), [unit], verdicts=1)
    assert judge.cost_usd is None and judge.unpriced_calls == 1
