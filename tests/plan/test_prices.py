"""Real model prices from genai-prices' bundled data and the catalog that overrides it
(all offline).

Every expected cost is computed in the test from the rates the installed library's own
data gives the model (`tests.plan.installed_prices`), so these tests hold for any
release of genai-prices that still has an OpenAI and an Anthropic model with the
feature under test."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import genai_prices
import msgspec
import pytest
from genai_prices.types import ModelPrice as GenaiPrice
from genai_prices.types import Tier as GenaiTier
from genai_prices.types import TieredPrices

from continuity.errors import PricingError, UsageError
from continuity.messages import Usage
from continuity.plan.estimate import DryRun, check_cost_limit, check_model_limits, dry_run
from continuity.plan.plan import build_plan
from continuity.plan.price_db import convert_price
from continuity.plan.pricing import call_cost, default_catalog_path, load_catalog, model_price
from continuity.plan.workload import workload
from tests.plan.installed_prices import (
    NOON,
    SNAPSHOT,
    M,
    empty_catalog,
    expected_usd,
    has_flat_cached_input,
    has_input_tier,
    installed,
    pick,
    tier_starts,
)


def library_usd(provider: str, model: str, usage: Usage) -> float:
    """The library's own calculator (its code path, not ours) at the catalog's day."""
    price = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=usage.total_input,
            cache_read_tokens=usage.cache_read,
            cache_write_tokens=usage.cache_write,
            output_tokens=usage.output,
        ),
        model,
        provider_id=provider,
        genai_request_timestamp=NOON,
    )
    return float(price.total_price)


# -- OpenAI ------------------------------------------------------------------------------


def test_openai_cached_input_price() -> None:
    """Input, cached input and output each at the library's rate; a cache write the
    data gives no price of its own bills as input (the library's rule)."""
    model = pick("openai", "gpt-4o", "a flat cached-input price", has_flat_cached_input)
    usage = Usage(input=12_000, cache_read=30_000, cache_write=2_000, output=700)
    expected = expected_usd(model.rates, usage)
    assert expected == pytest.approx(library_usd("openai", model.info.id, usage))
    assert call_cost(empty_catalog(), model.id, usage) == pytest.approx(expected)
    # Cached input is cheaper: the same tokens all uncached cost more.
    uncached = call_cost(empty_catalog(), model.id, Usage(input=42_000, output=700))
    assert uncached is not None and uncached > expected


def test_openai_long_context_tier() -> None:
    """At the tier's threshold (cached input included) the base rates apply; one token
    above it, the tier's rates apply to every token of the call."""
    model = pick("openai", "gpt-5.4", "a long-context input tier", has_input_tier)
    tiered = model.rates["input_mtok"]
    assert isinstance(tiered, TieredPrices)
    start = tiered.tiers[0].start
    at = Usage(input=start // 3, cache_read=start - start // 3, output=10)
    above = msgspec.structs.replace(at, cache_read=at.cache_read + 1)
    assert at.total_input == start and above.total_input == start + 1
    costs = []
    for usage in (at, above):
        expected = expected_usd(model.rates, usage)
        assert expected == pytest.approx(library_usd("openai", model.info.id, usage))
        assert call_cost(empty_catalog(), model.id, usage) == pytest.approx(expected)
        costs.append(expected)
    assert costs[1] != pytest.approx(costs[0], rel=1e-3)  # one more cached token: the tier


def test_a_dated_id_is_priced_as_the_model_the_library_matches() -> None:
    for model in ("openai:gpt-4o-2024-08-06", "anthropic:claude-sonnet-4-5-20250929"):
        provider, _, name = model.partition(":")
        try:
            _, info = SNAPSHOT.find_provider_model(name, None, provider, None)
        except LookupError:
            assert model_price(empty_catalog(), model) is None
            continue
        assert model_price(empty_catalog(), model) == model_price(
            empty_catalog(), f"{provider}:{info.id}"
        )


# -- Anthropic ---------------------------------------------------------------------------


def test_anthropic_cache_read_write_and_tier() -> None:
    """Cache writes and cache reads at their own rates, below and above the input tier."""
    model = pick(
        "anthropic",
        "claude-sonnet-4-5",
        "an input tier with cache read and write prices",
        lambda m: has_input_tier(m, "cache_read_mtok", "cache_write_mtok"),
    )
    tiered = model.rates["input_mtok"]
    assert isinstance(tiered, TieredPrices)
    start = tiered.tiers[0].start
    # `input` counts the 4,000 tokens written to the cache; the rest is read from it.
    below = Usage(input=10_000, cache_write=4_000, cache_read=start - 10_000, output=1_000)
    above = msgspec.structs.replace(below, cache_read=below.cache_read + 1)
    costs = []
    for usage in (below, above):
        expected = expected_usd(model.rates, usage)
        assert expected == pytest.approx(library_usd("anthropic", model.info.id, usage))
        assert call_cost(empty_catalog(), model.id, usage) == pytest.approx(expected)
        costs.append(expected)
    assert costs[1] != pytest.approx(costs[0], rel=1e-3)  # the tier changed the rates


def test_every_openai_and_anthropic_price_matches_the_library_calculator() -> None:
    """Our conversion against genai-prices' own `calc_price` (its code path, not ours)
    for every model of both providers we price, below, across and above tiers."""
    usages = [
        Usage(input=1_000, cache_read=500, cache_write=200, output=300),
        Usage(input=150_000, cache_read=150_000, cache_write=1_000, output=10),
        Usage(input=300_000, output=5),
    ]
    compared = {"openai": 0, "anthropic": 0}
    for provider in compared:
        models = installed(provider)
        assert models, f"genai-prices prices no {provider} model we can price"
        for model in models:
            for usage in usages:
                ours = call_cost(empty_catalog(), model.id, usage)
                if ours is None:  # the library bills a rate its data lacks as 0: we do not
                    needed = {"input_mtok": usage.total_input, "output_mtok": usage.output}
                    assert any(n and k not in model.rates for k, n in needed.items()), model.id
                    continue
                theirs = library_usd(provider, model.info.id, usage)
                assert ours == pytest.approx(theirs, abs=1e-12), model.id
                compared[provider] += 1
    assert all(n >= 10 for n in compared.values()), compared


# -- the catalog overrides; unknown stays unknown ------------------------------------------


def test_the_catalog_overrides_genai_prices_for_the_ids_it_lists(tmp_path: Path) -> None:
    catalog = load_catalog()
    for name, listed in catalog.models.items():  # the checked-in catalog's entries win
        assert model_price(catalog, name) == listed
    model = pick("openai", "gpt-4o", "a flat cached-input price", has_flat_cached_input)
    library_input = float(model.rates["input_mtok"])  # type: ignore[arg-type]
    document = json.loads(default_catalog_path().read_text())
    document["models"][model.id] = {"input": library_input * 10, "output": None}
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(document))
    mine = load_catalog(path)
    assert call_cost(mine, model.id, Usage(input=M)) == pytest.approx(library_input * 10)
    # A catalog entry with unknown rates overrides a price the database has.
    assert call_cost(mine, model.id, Usage(input=M, output=1)) is None
    assert call_cost(empty_catalog(), model.id, Usage(input=M, output=1)) is not None


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
    """The library's context windows and tiers reach the dry run: a hard-suite probe
    cannot fit a model whose window is smaller, and crosses a tier below its input."""
    plan = build_plan("hard", [101], arms="native", probe_limit=1, reader="openai:gpt-4o")
    answers = [c for c in workload(plan).calls if c.role == "answer"]
    smallest = min(c.input_tokens for c in answers)
    largest = max(c.input_tokens + c.output_tokens for c in answers)
    largest_input = max(c.input_tokens for c in answers)
    models = installed("openai") + installed("anthropic")
    window = {m.id: m.info.context_window for m in models}
    first_tier = {m.id: tier_starts(m.rates)[0] for m in models if tier_starts(m.rates)}
    choices = {
        "a context window below the probe": [
            m for m in window if (window[m] or largest) < smallest
        ],
        "a tier below the probe": [m for m in first_tier if first_tier[m] < smallest],
        "a tier above the probe": [m for m in first_tier if first_tier[m] >= largest_input],
    }
    for feature, found in choices.items():
        assert found, f"no OpenAI or Anthropic model in genai-prices has {feature}"

    def run(reader: str) -> DryRun:
        chosen = msgspec.structs.replace(plan, reader=reader)
        return dry_run(chosen, workload(chosen), empty_catalog())

    small, crossed, below = (run(found[0]) for found in choices.values())
    assert small.over_limit_calls == small.answer_calls > 0
    with pytest.raises(UsageError) as caught:
        check_model_limits(small)
    assert caught.value.code == "model_limit_exceeded"
    assert crossed.tiered_calls > 0
    assert below.tiered_calls == 0


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
