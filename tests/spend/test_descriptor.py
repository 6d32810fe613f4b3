"""The cap-gated pilot descriptor: the cap C, assumed-v1, the catalog binding and the
schedule, each refused with its code when it is not what is registered."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from continuity.errors import SpendError
from continuity.spend.assumptions import ASSUMED_V1, Rates, assumptions_digest, reservation
from continuity.spend.descriptor import (
    PILOT_DESCRIPTOR_SCHEMA,
    PILOT_MODE,
    PILOT_REGISTRATION_SCHEMA,
    SCHEDULE_VERSION,
    TRANSPORT_KEY_POLICY,
    CatalogBinding,
    CatalogTier,
    PilotDeadlines,
    PilotDescriptor,
    PilotRegistration,
    Schedule,
    WrappedRegistration,
    cap_amount,
    check_catalog,
    check_descriptor,
    decode_pilot,
    sealed_catalog,
    sealed_schedule,
)
from continuity.spend.money import MAX_SAFE_CENTS

RMAX = reservation(ASSUMED_V1)
SOL_CATALOG = sealed_catalog(
    CatalogBinding(
        model=ASSUMED_V1.model,
        input="2.0",
        output="10.0",
        cache_read="0.1",
        cache_write="2.5",
        context_window=272_000,
        max_output=128_000,
        tiers=(),
        digest="",
    )
)
SCHEDULE = sealed_schedule(
    Schedule(
        version=SCHEDULE_VERSION,
        seed=7,
        selection_digest="a" * 64,
        freeze_digest="b" * 64,
        sizing_sha256="c" * 64,
        digest="",
    )
)
DESCRIPTOR = PilotDescriptor(
    schema=PILOT_DESCRIPTOR_SCHEMA,
    mode=PILOT_MODE,
    cap_usd="25.00",
    concurrency=1,
    assumptions=ASSUMED_V1,
    assumptions_digest=assumptions_digest(ASSUMED_V1),
    catalog=SOL_CATALOG,
    schedule=SCHEDULE,
    deadlines=PilotDeadlines(
        probe_seconds=600.0, cleanup_seconds=60.0, turn_seconds=690.0, watchdog_seconds=720.0
    ),
    transport_key_policy=TRANSPORT_KEY_POLICY,
)


def refused(call: Callable[[], object]) -> SpendError:
    with pytest.raises(SpendError) as caught:
        call()
    return caught.value


def test_rmax_is_three_dollars_ninety_two_exactly() -> None:
    # 2 x (272,000 x 2.5 + 128,000 x 10) / 10^6: the cache-write rate is the input class's
    rmax = reservation(ASSUMED_V1)
    assert str(rmax) == "3.92"
    assert rmax == Decimal(2) * (272_000 * Decimal("2.5") + 128_000 * 10) / 1_000_000


def test_a_valid_descriptor_gives_its_cap_exactly() -> None:
    assert check_descriptor(DESCRIPTOR) == Decimal("25.00")
    assert check_descriptor(replace(DESCRIPTOR, cap_usd="3.92")) == RMAX
    # it round-trips through JSON unchanged (the registry's tuples included)
    data = msgspec.json.encode(DESCRIPTOR)
    assert msgspec.json.decode(data, type=PilotDescriptor) == DESCRIPTOR


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", "lookup_pilot_cap_invalid"),
        ("abc", "lookup_pilot_cap_invalid"),
        ("-25", "lookup_pilot_cap_invalid"),
        ("2.5e1", "lookup_pilot_cap_invalid"),
        ("NaN", "lookup_pilot_cap_invalid"),
        ("25.", "lookup_pilot_cap_invalid"),
        ("1" * 70, "lookup_pilot_cap_invalid"),
        ("25.001", "lookup_pilot_cap_not_cents"),
        ("3.925", "lookup_pilot_cap_not_cents"),
        ("90071992547409.92", "lookup_pilot_cap_unsafe"),  # 2^53 cents
        ("3.91", "lookup_pilot_cap_below_rmax"),
        ("0", "lookup_pilot_cap_below_rmax"),
    ],
)
def test_a_cap_must_be_whole_safe_cents_at_least_rmax(text: str, code: str) -> None:
    error = refused(lambda: cap_amount(text, RMAX, location="--cap-usd"))
    assert (error.code, error.location) == (code, "--cap-usd")
    error = refused(lambda: check_descriptor(replace(DESCRIPTOR, cap_usd=text)))
    assert (error.code, error.location) == (code, "descriptor.cap_usd")


def test_the_largest_safe_cap_and_trailing_zeros_are_accepted() -> None:
    assert cap_amount("90071992547409.91", RMAX) == Decimal("90071992547409.91")
    assert cap_amount("25.000", RMAX) == Decimal(25)


@settings(max_examples=200, deadline=None)
@given(cents=st.integers(min_value=0, max_value=MAX_SAFE_CENTS + 1_000))
def test_exactly_the_whole_cent_amounts_from_rmax_to_the_safe_maximum_pass(cents: int) -> None:
    text = f"{cents // 100}.{cents % 100:02d}"
    if 392 <= cents <= MAX_SAFE_CENTS:
        assert cap_amount(text, RMAX) * 100 == cents
    else:
        assert refused(lambda: cap_amount(text, RMAX)).code in {
            "lookup_pilot_cap_below_rmax",
            "lookup_pilot_cap_unsafe",
        }


@settings(max_examples=100, deadline=None)
@given(cents=st.integers(min_value=392, max_value=10**9), mills=st.integers(1, 9))
def test_a_fraction_of_a_cent_is_always_refused(cents: int, mills: int) -> None:
    text = f"{cents // 100}.{cents % 100:02d}{mills}"
    assert refused(lambda: cap_amount(text, RMAX)).code == "lookup_pilot_cap_not_cents"


def _registry(**changes: Any) -> PilotDescriptor:
    return replace(DESCRIPTOR, assumptions=replace(ASSUMED_V1, **changes))


@pytest.mark.parametrize(
    ("descriptor", "code", "where"),
    [
        (_registry(max_output=256_000), "lookup_assumptions_changed", "assumptions.max_output"),
        (
            _registry(rates=Rates(input="2", output="10", cache_read="0.1", cache_write="2")),
            "lookup_assumptions_changed",
            "assumptions.rates",
        ),
        (_registry(rmax="3.50"), "lookup_rmax_altered", "assumptions.rmax"),
        (
            replace(DESCRIPTOR, assumptions_digest="0" * 64),
            "lookup_assumptions_changed",
            "assumptions_digest",
        ),
        (replace(DESCRIPTOR, concurrency=2), "lookup_pilot_concurrency_invalid", "concurrency"),
        (replace(DESCRIPTOR, mode="full-upfront"), "lookup_pilot_descriptor_invalid", "mode"),
        (replace(DESCRIPTOR, schema="v0"), "lookup_pilot_descriptor_invalid", "schema"),
        (
            replace(DESCRIPTOR, transport_key_policy="caller-key"),
            "lookup_pilot_descriptor_invalid",
            "transport_key_policy",
        ),
        (
            replace(DESCRIPTOR, schedule=replace(SCHEDULE, seed=8)),
            "lookup_pilot_schedule_mismatch",
            "schedule.digest",
        ),
        (
            replace(DESCRIPTOR, schedule=sealed_schedule(replace(SCHEDULE, seed=-1))),
            "lookup_pilot_schedule_seed_invalid",
            "schedule.seed",
        ),
        (
            replace(DESCRIPTOR, schedule=sealed_schedule(replace(SCHEDULE, seed=2**53))),
            "lookup_pilot_schedule_seed_invalid",
            "schedule.seed",
        ),
        (
            replace(DESCRIPTOR, schedule=sealed_schedule(replace(SCHEDULE, version="other"))),
            "lookup_pilot_schedule_mismatch",
            "schedule.version",
        ),
    ],
)
def test_a_descriptor_that_is_not_the_registered_one_is_refused(
    descriptor: PilotDescriptor, code: str, where: str
) -> None:
    error = refused(lambda: check_descriptor(descriptor))
    assert (error.code, error.location) == (code, f"descriptor.{where}")


@pytest.mark.parametrize(
    ("catalog", "code", "where"),
    [
        (replace(SOL_CATALOG, cache_write="2.0"), "lookup_pilot_catalog_changed", "digest"),
        (sealed_catalog(replace(SOL_CATALOG, cache_write="2.0")), "lookup_pilot_catalog_mismatch",
         "cache_write"),
        (sealed_catalog(replace(SOL_CATALOG, output="12")), "lookup_pilot_catalog_mismatch",
         "output"),
        (sealed_catalog(replace(SOL_CATALOG, model="openai-codex:gpt-6.1-luna")),
         "lookup_pilot_catalog_mismatch", "model"),
        (sealed_catalog(replace(SOL_CATALOG, max_output=64_000)),
         "lookup_pilot_catalog_mismatch", "max_output"),
        (sealed_catalog(replace(SOL_CATALOG, context_window=400_000)),
         "lookup_pilot_catalog_mismatch", "context_window"),
        (
            sealed_catalog(
                replace(SOL_CATALOG, tiers=(CatalogTier(above_input_tokens=200_000, input="4",
                        output="15", cache_read="0.2", cache_write="5"),))
            ),
            "lookup_pilot_catalog_mismatch",
            "tiers[0]",
        ),
    ],
)  # fmt: skip
def test_a_catalog_binding_must_be_sealed_and_the_registrys(
    catalog: CatalogBinding, code: str, where: str
) -> None:
    error = refused(lambda: check_descriptor(replace(DESCRIPTOR, catalog=catalog)))
    assert (error.code, error.location) == (code, f"descriptor.catalog.{where}")


def test_equal_rates_written_differently_and_a_tier_beyond_the_envelope_agree() -> None:
    # "2" and "2.0" are the same rate; a tier above I can never be strictly exceeded
    beyond = CatalogTier(
        above_input_tokens=272_000, input="4", output="15", cache_read="0.2", cache_write="5"
    )
    check_catalog(sealed_catalog(replace(SOL_CATALOG, input="2", tiers=(beyond,))), ASSUMED_V1)


def test_only_a_pilot_registration_decodes_as_one() -> None:
    pilot = PilotRegistration(
        schema=PILOT_REGISTRATION_SCHEMA,
        registration=WrappedRegistration(
            path="/x/registration.json",
            sha256="d" * 64,
            schema="continuity-lookup-registration-v2",
            registration_digest="e" * 64,
        ),
        descriptor=DESCRIPTOR,
    )
    assert decode_pilot(msgspec.json.encode(pilot), "f.json") == pilot
    for data in (
        b'{"schema": "continuity-lookup-registration-v2", "protocol": "x"}',
        b'{"schema": "continuity-lookup-registration-v1"}',
        b"[1, 2]",
        b"not json",
        msgspec.json.encode({**msgspec.to_builtins(pilot), "extra": 1}),
    ):
        error = refused(lambda data=data: decode_pilot(data, "f.json"))  # type: ignore[misc]
        assert (error.code, error.location) == ("lookup_pilot_registration_invalid", "f.json")


def test_pricing_and_assumptions_refusals_are_the_readiness_blockers() -> None:
    # One implementation: cap-gated readiness and the real-send factory both judge by them.
    from continuity.spend.descriptor import assumptions_refusal, pricing_refusal

    assert pricing_refusal(SOL_CATALOG, ASSUMED_V1) is None
    assert assumptions_refusal(ASSUMED_V1, ASSUMED_V1.model) is None
    unknown_tier = CatalogTier(
        above_input_tokens=300_000, input=None, output="10", cache_read="0.1", cache_write="2.5"
    )
    for catalog, code in (
        (None, "lookup_pilot_prices_missing"),
        (
            sealed_catalog(replace(SOL_CATALOG, tiers=(unknown_tier,))),
            "lookup_pilot_prices_missing",
        ),
        (replace(SOL_CATALOG, input="3.0"), "lookup_pilot_catalog_changed"),
        (sealed_catalog(replace(SOL_CATALOG, input="3.0")), "lookup_pilot_catalog_mismatch"),
    ):
        refusal = pricing_refusal(catalog, ASSUMED_V1)
        assert refusal is not None and refusal.code == code
    other = assumptions_refusal(ASSUMED_V1, "openai-codex:gpt-6-luna")
    assert other is not None and other.code == "lookup_pilot_reader_mismatch"
    edited = assumptions_refusal(replace(ASSUMED_V1, rmax="1.00"), ASSUMED_V1.model)
    assert edited is not None and edited.code == "lookup_rmax_altered"
