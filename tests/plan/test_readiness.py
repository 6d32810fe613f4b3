"""The reader readiness diagnostic: three components apart, any unknown one blocks."""

from __future__ import annotations

import inspect

import msgspec
import pytest
from msgspec.structs import replace

from continuity.plan.plan import Endpoint
from continuity.plan.pricing import ModelPrice, Tier, load_catalog, model_price
from continuity.plan.readiness import ReaderReadiness, reader_readiness, reader_transport
from continuity.spend import output_caps

OPUS = "anthropic:claude-opus-5-5"
SOL = "openai-codex:gpt-6.1-sol"
FULL = ModelPrice(
    input=3.0,
    output=15.0,
    cache_read=0.3,
    cache_write=3.75,
    context_window=400_000,
    max_output=64_000,
    tiers=(Tier(200_000, input=6.0, output=22.5, cache_read=0.6, cache_write=7.5),),
)


def ready(
    reader: str, price: ModelPrice | None, *, peak: int = 200_000, endpoint: Endpoint | None = None
) -> ReaderReadiness:
    return reader_readiness(
        reader,
        price,
        turns_per_slot=10,
        output_tokens_per_turn=300,
        peak_input_tokens=peak,
        input_tokens_per_slot=peak * 9,
        endpoint=endpoint,
    )


def statuses(result: ReaderReadiness) -> tuple[str, str, str]:
    return result.output_cap.status, result.input_envelope.status, result.pricing.status


def test_a_fully_known_reader_on_a_vendor_api_is_ready() -> None:
    # genai-prices lists no output limit for Opus 5.5 (the catalog's seed price with one
    # is gone): a fully known price, with that limit, is ready; the bundled one is not.
    assert ready(OPUS, model_price(load_catalog(), OPUS)).output_cap.status == "unknown"
    result = ready(OPUS, FULL)
    assert result.transport == "request_cap"
    assert statuses(result) == ("ready", "ready", "ready")
    assert result.ready is True
    # The envelope is tokens and turns beside the catalog's limits, never dollars.
    envelope = result.envelope
    assert (envelope.turns_per_slot, envelope.output_tokens_per_turn) == (10, 300)
    assert (envelope.context_window, envelope.output_limit) == (400_000, 64_000)
    assert "usd" not in str(result).lower() and "never an authorization" in result.note
    # The same on an explicit vendor endpoint.
    vendor = Endpoint(kind="anthropic", base_url="https://api.anthropic.com")
    assert ready(OPUS, FULL, endpoint=vendor).ready is True


def test_the_seeds_sol_is_not_ready_its_cap_unsupported_and_envelope_unknown() -> None:
    result = ready(SOL, model_price(load_catalog(), SOL))
    assert result.transport == "subscription"
    assert statuses(result) == ("unsupported", "unknown", "ready")
    assert result.ready is False


@pytest.mark.parametrize(
    ("reader", "endpoint", "transport"),
    [
        # No adapter here speaks this provider.
        ("acme:model-1", None, "unknown"),
        # A compatible server may ignore the cap it is sent.
        ("openai:gpt-x", Endpoint(kind="openai-chat", base_url="http://127.0.0.1:8000/v1"), None),
    ],
)
def test_an_unknown_output_cap_blocks(
    reader: str, endpoint: Endpoint | None, transport: str | None
) -> None:
    result = ready(reader, FULL, endpoint=endpoint)
    assert result.output_cap.status == "unknown"
    assert result.pricing.status == "ready"
    assert result.ready is False
    assert result.transport == (transport or "advisory_cap")


def test_an_output_limit_below_a_turn_is_unsupported_and_none_is_unknown() -> None:
    small = replace(FULL, max_output=200)
    assert ready(OPUS, small).output_cap.status == "unsupported"
    unlimited = replace(FULL, max_output=None)
    result = ready(OPUS, unlimited)
    assert result.output_cap.status == "unknown" and result.ready is False


def test_an_unknown_input_envelope_blocks() -> None:
    no_window = replace(FULL, context_window=None)
    result = ready(OPUS, no_window)
    assert result.input_envelope.status == "unknown"
    assert result.output_cap.status == "ready"
    assert result.ready is False
    # A peak the vendor's window cannot hold is unsupported, not unknown.
    over = ready(OPUS, FULL, peak=399_800)
    assert over.input_envelope.status == "unsupported" and over.ready is False
    assert ready(OPUS, FULL, peak=399_700).input_envelope.status == "ready"


def test_unknown_prices_block() -> None:
    catalog = load_catalog()
    local = ready("openai:local-model", model_price(catalog, "openai:local-model"))
    assert local.pricing.status == "unknown"
    assert "input, output, cache_read" in local.pricing.detail
    assert local.ready is False
    # A model nothing prices: every component that needs the catalog is unknown.
    nothing = ready("acme:unpriced", None)
    assert statuses(nothing) == ("unknown", "unknown", "unknown") and not nothing.ready
    # A missing tier cache rate is as missing as a base one.
    tier_gap = replace(FULL, tiers=(Tier(200_000, input=6.0, output=22.5),))
    result = ready(OPUS, tier_gap)
    assert result.pricing.status == "unknown" and "tier>200000.cache_read" in result.pricing.detail


def test_there_is_no_capability_override() -> None:
    parameters = set(inspect.signature(reader_readiness).parameters)
    assert parameters == {
        "reader",
        "price",
        "turns_per_slot",
        "output_tokens_per_turn",
        "peak_input_tokens",
        "input_tokens_per_slot",
        "endpoint",
        "ignored_cap",
    }
    # The one addition can only take readiness away: an endpoint seen to ignore its cap.
    seen = reader_readiness(
        OPUS,
        FULL,
        turns_per_slot=10,
        output_tokens_per_turn=300,
        peak_input_tokens=1_000,
        input_tokens_per_slot=9_000,
        ignored_cap="2026-12-04: wrote 900 tokens past a 16-token cap",
    )
    assert seen.output_cap.status == "unknown" and seen.ready is False
    # A scripted endpoint is no route: the reader's own transport decides.
    assert reader_transport(SOL, Endpoint()) == "subscription"


def _evidence(backend: str, fields: tuple[str, ...]) -> output_caps.CapEvidence:
    return msgspec.structs.replace(output_caps.cap_evidence(backend), fields=fields)


def test_the_output_cap_verdict_is_the_serialization_registrys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Sol's cap is unsupported because the Codex request's bytes carry none
    # (tests/spend/test_output_caps.py), not because a list here says so.
    assert output_caps.cap_evidence("openai-codex").fields == ()
    sol = model_price(load_catalog(), SOL)
    real = output_caps.cap_evidence
    sent = {"openai-codex": _evidence("openai-codex", ("max_output_tokens",))}
    monkeypatch.setattr(output_caps, "cap_evidence", lambda b: sent.get(b) or real(b))
    # were a cap serialized, the subscription backend would be one that may ignore it
    result = ready(SOL, sol)
    assert result.transport == "advisory_cap"
    assert statuses(result) == ("unknown", "unknown", "ready") and result.ready is False
    # and a vendor adapter whose bytes carried no cap could not enforce one
    sent["anthropic"] = _evidence("anthropic", ())
    uncapped = ready(OPUS, FULL)
    assert uncapped.transport == "uncapped"
    assert uncapped.output_cap.status == "unsupported" and uncapped.ready is False
    assert "carries none" in uncapped.output_cap.detail
    vendor = Endpoint(kind="anthropic", base_url="https://api.anthropic.com")
    assert ready(OPUS, FULL, endpoint=vendor).transport == "uncapped"
