"""The pilot's offline arithmetic (E, Rmax, C - Rmax, C / E, the full-upfront
comparison) on hand-computed examples, and the cap-gated readiness states."""

from __future__ import annotations

import inspect
from decimal import Decimal

import pytest
from msgspec.structs import replace

from continuity.plan.holdout_pricing import PricedSlot
from continuity.plan.pilot_catalog import catalog_binding, pilot_missing_terms
from continuity.plan.pilot_estimate import expected_slot, pilot_estimate, pilot_lines
from continuity.plan.pricing import ModelPrice, Tier, load_catalog, model_price
from continuity.plan.readiness import (
    AUTHORIZATION_REQUIRED,
    CapGatedReadiness,
    cap_gated_readiness,
    reader_readiness,
)
from continuity.spend.assumptions import ASSUMED_V1, Rates, assumptions_digest
from continuity.spend.descriptor import (
    PILOT_DESCRIPTOR_SCHEMA,
    PILOT_MODE,
    SCHEDULE_VERSION,
    TRANSPORT_KEY_POLICY,
    PilotDeadlines,
    PilotDescriptor,
    Schedule,
    sealed_schedule,
)

SOL = ASSUMED_V1.model
_PRICE = model_price(load_catalog(), SOL)
assert _PRICE is not None
SOL_PRICE: ModelPrice = _PRICE


def descriptor(cap: str = "25.00") -> PilotDescriptor:
    return PilotDescriptor(
        schema=PILOT_DESCRIPTOR_SCHEMA,
        mode=PILOT_MODE,
        cap_usd=cap,
        concurrency=1,
        assumptions=ASSUMED_V1,
        assumptions_digest=assumptions_digest(ASSUMED_V1),
        catalog=catalog_binding(SOL, SOL_PRICE),
        schedule=sealed_schedule(
            Schedule(
                version=SCHEDULE_VERSION,
                seed=7,
                selection_digest="a" * 64,
                freeze_digest="b" * 64,
                sizing_sha256="c" * 64,
                digest="",
            )
        ),
        deadlines=PilotDeadlines(
            probe_seconds=600.0, cleanup_seconds=60.0, turn_seconds=690.0, watchdog_seconds=720.0
        ),
        transport_key_policy=TRANSPORT_KEY_POLICY,
    )


def slot(tokens: int, disposition: str = "eligible") -> PricedSlot:
    return PricedSlot(
        role="pack",
        trace="t",
        probe="p",
        initial_context_tokens=tokens,
        disposition=disposition,  # type: ignore[arg-type]
    )


def awaiting() -> CapGatedReadiness:
    return cap_gated_readiness(SOL, SOL_PRICE, ASSUMED_V1)


def test_the_catalog_binding_holds_sols_rates_as_exact_text() -> None:
    binding = catalog_binding(SOL, SOL_PRICE)
    rates = (binding.input, binding.output, binding.cache_read, binding.cache_write)
    assert rates == ("2.0", "10.0", "0.1", "2.5")  # 0.1 is 0.1, not the float near it
    assert (binding.context_window, binding.max_output, binding.tiers) == (272_000, 128_000, ())
    assert len(binding.digest) == 64


def test_one_slots_e_by_hand() -> None:
    # 1,000-token context, 1,000-byte budget: two lookups of 250 bytes (half the budget).
    # Rounds: 1,000 + 900 = 1,900; 1,000 + 250 + 1,800 = 3,050; 1,000 + 500 + 2,700 = 4,200.
    # Each: half uncached at $2/M, half cached at $0.1/M, 300 output at $10/M, 1x.
    amount, rounds = expected_slot(1_000, 1_000, catalog_binding(SOL, SOL_PRICE), Decimal(1))
    assert rounds == [1_900, 3_050, 4_200]
    by_hand = (
        (950 * 2 + Decimal("95") + 3_000)  # 1,900
        + (1_525 * 2 + Decimal("152.5") + 3_000)  # 3,050
        + (2_100 * 2 + Decimal("210") + 3_000)  # 4,200
    ) / 1_000_000
    assert amount == by_hand == Decimal("0.0186075")
    # an odd budget: half is 501 bytes, the first lookup returns the extra byte
    _, rounds = expected_slot(1_000, 1_001, catalog_binding(SOL, SOL_PRICE), Decimal(1))
    assert rounds == [1_900, 3_051, 4_201]
    # odd tokens: the cached half rounds down, the uncached half up
    odd, _ = expected_slot(1, 0, catalog_binding(SOL, SOL_PRICE), Decimal(1))
    assert (
        odd
        == (
            (451 * 2 + 450 * Decimal("0.1") + 3_000)
            + (901 * 2 + 900 * Decimal("0.1") + 3_000)
            + (1_351 * 2 + 1_350 * Decimal("0.1") + 3_000)
        )
        / 1_000_000
    )


def test_the_pilot_numbers_are_exact() -> None:
    slots = [slot(1_000), slot(1_000), slot(1_000), slot(300_000, "inventory_infeasible")]
    found = pilot_estimate(
        slots, 1_000, descriptor(), Decimal("25.00"), awaiting(), ("s", "w", "d")
    )
    assert (found.planned, found.eligible) == (4, 3)
    assert found.expected_usd == 3 * Decimal("0.0186075") == Decimal("0.0558225")
    assert found.rmax_usd == Decimal("3.92")
    assert found.cap_usd == Decimal("25.00")
    assert found.cap_minus_rmax_usd == Decimal("21.08")
    # C / E = 25 / 0.0558225 = 447.848116...: four places, half-even
    assert found.cap_over_expected == Decimal("447.8481")
    full = found.full_upfront
    # ceil-to-cents(1.25 x 10 x 3.92 x 3) = 147.00, beside the reservations 117.60
    assert (full.reservations_usd, full.comparison_usd) == (Decimal("117.60"), Decimal("147.00"))
    assert "not the admission gate" in full.note
    assert found.scenario.note.startswith("E is a scenario, not measured usage")
    assert (found.scenario.tier, found.scenario.tier_multiplier) == ("default", "1")
    assert (found.scenario.rounds, found.scenario.returned_bytes) == (3, 500)
    assert found.rounds_above_envelope == 0


def test_a_full_upfront_comparison_rounds_up_to_the_cent() -> None:
    # an Rmax of $0.0031 (a hand registry) makes 1.25 x 10 x 0.0031 = 0.03875 -> 0.04
    registry = replace(
        ASSUMED_V1,
        rates=Rates(input="0.001", output="0.01", cache_read="0.0001", cache_write="0.001"),
    )
    cheap = replace(descriptor(), assumptions=registry)
    found = pilot_estimate([slot(1_000)], 0, cheap, Decimal("1.00"), awaiting(), ("s", "w", "d"))
    # Rmax = 2 x (272,000 x 0.001 + 128,000 x 0.01) / 10^6 = 0.003104
    assert found.rmax_usd == Decimal("0.003104")
    assert found.full_upfront.reservations_usd == Decimal("0.03104")
    assert found.full_upfront.comparison_usd == Decimal("0.04")  # 0.0388 rounded up


def test_no_eligible_slot_makes_e_zero_and_c_over_e_null() -> None:
    slots = [slot(1_000, "inventory_infeasible"), slot(1_000, "unknown")]
    found = pilot_estimate(
        slots, 1_000, descriptor(), Decimal("25.00"), awaiting(), ("s", "w", "d")
    )
    assert (found.eligible, found.expected_usd, found.cap_over_expected) == (0, Decimal(0), None)
    assert found.full_upfront.comparison_usd == Decimal("0.00")
    text = "\n".join(pilot_lines(found))
    assert "C / E = null (E is zero)" in text


def test_rounds_above_the_envelope_are_counted() -> None:
    found = pilot_estimate(
        [slot(271_000)], 1_000, descriptor(), Decimal("25.00"), awaiting(), ("s", "w", "d")
    )
    # 271,900 fits; 271,000 + 250 + 1,800 and 271,000 + 500 + 2,700 do not
    assert found.rounds_above_envelope == 2
    assert "2 scenario rounds exceed the input envelope" in "\n".join(pilot_lines(found))


def test_the_text_labels_every_number() -> None:
    found = pilot_estimate(
        [slot(1_000)] * 3, 1_000, descriptor(), Decimal("25.00"), awaiting(), ("s", "w", "d")
    )
    text = "\n".join(pilot_lines(found))
    for part in (
        "E scenario (a scenario, not measured usage)",
        "E = $0.0558225; Rmax = $3.92; C = $25.00; C - Rmax = $21.08; C / E = 447.8481",
        "full-upfront comparison, not the admission gate",
        "= $147.00",
        "awaiting_authorization, blockers lookup_authorization_required",
        "enables no paid route",
    ):
        assert part in text, part


def test_complete_pricing_and_assumptions_await_authorization_alone() -> None:
    ready = awaiting()
    assert (ready.pricing.status, ready.assumptions.status) == ("ready", "ready")
    assert (ready.output_cap.status, ready.input_envelope.status) == ("assumed", "assumed")
    assert ready.status == "awaiting_authorization"
    assert ready.blockers == [AUTHORIZATION_REQUIRED] == ["lookup_authorization_required"]
    # the ordinary readiness of the Sol subscription reader is unchanged: not ready
    ordinary = reader_readiness(
        SOL,
        SOL_PRICE,
        turns_per_slot=10,
        output_tokens_per_turn=300,
        peak_input_tokens=10_000,
        input_tokens_per_slot=90_000,
    )
    assert ordinary.ready is False and ordinary.output_cap.status == "unsupported"


def test_only_an_attestation_can_hand_the_diagnostic_readiness() -> None:
    # no capability override: the one addition is the attestation, which must validate
    # (tests/plan/test_cap_gated_attestation.py); without one it awaits authorization
    parameters = inspect.signature(cap_gated_readiness).parameters
    assert set(parameters) == {"reader", "price", "registry", "attestation"}
    assert parameters["attestation"].default is None
    assert awaiting().attestation is None and awaiting().status == "awaiting_authorization"


@pytest.mark.parametrize(
    ("price", "registry", "blockers", "statuses"),
    [
        (None, ASSUMED_V1, ["lookup_pilot_prices_missing"], ("unknown", "ready")),
        (
            replace(SOL_PRICE, cache_write=None),
            ASSUMED_V1,
            ["lookup_pilot_prices_missing"],
            ("unknown", "ready"),
        ),
        (
            replace(SOL_PRICE, tiers=(Tier(300_000, input=4.0, output=15.0, cache_read=0.2),)),
            ASSUMED_V1,
            ["lookup_pilot_prices_missing"],
            ("unknown", "ready"),
        ),
        (
            replace(SOL_PRICE, output=12.0),
            ASSUMED_V1,
            ["lookup_pilot_catalog_mismatch"],
            ("unsupported", "ready"),
        ),
        (
            SOL_PRICE,
            replace(ASSUMED_V1, max_output=64_000),
            ["lookup_pilot_catalog_mismatch", "lookup_assumptions_changed"],
            ("unsupported", "unsupported"),
        ),
        (
            SOL_PRICE,
            replace(ASSUMED_V1, rmax="4.00"),
            ["lookup_rmax_altered"],
            ("ready", "unsupported"),
        ),
        (
            None,
            replace(ASSUMED_V1, version="assumed-v2"),
            ["lookup_pilot_prices_missing", "lookup_assumptions_changed"],
            ("unknown", "unsupported"),
        ),
    ],
)  # fmt: skip
def test_incomplete_pricing_or_changed_assumptions_block(
    price: ModelPrice | None,
    registry: object,
    blockers: list[str],
    statuses: tuple[str, str],
) -> None:
    found = cap_gated_readiness(SOL, price, registry)  # type: ignore[arg-type]
    assert found.status == "blocked"
    assert found.blockers == blockers  # never mixed with the authorization blocker
    assert (found.pricing.status, found.assumptions.status) == statuses


def test_another_reader_is_not_the_registrys() -> None:
    luna = "openai-codex:gpt-6.1-luna"
    found = cap_gated_readiness(luna, SOL_PRICE, ASSUMED_V1)
    assert found.status == "blocked"
    assert "lookup_pilot_reader_mismatch" in found.blockers
    assert pilot_missing_terms(SOL_PRICE) == []
    assert pilot_missing_terms(None) == ["price"]
