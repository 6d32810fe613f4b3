"""catalog-bounded-v1: the registry and guard contract of a reader on a vendor API that
enforces the output cap, and every refusal around them."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import msgspec
import pytest

from continuity.errors import RoleError, SpendError
from continuity.plan.pricing import ModelPrice
from continuity.roles.pilot.registration import registry_for
from continuity.spend.assumptions import (
    ASSUMED_V1,
    CATALOG_BOUNDED_VERSION,
    Rates,
    catalog_bounded,
    check_assumptions,
    reservation,
)
from continuity.spend.contract import (
    SOL_CONTRACT,
    GuardContract,
    check_contract,
    contract_for,
)
from continuity.spend.descriptor import CatalogBinding, check_catalog, sealed_catalog
from continuity.spend.guard import GuardedProvider
from continuity.spend.permits import TestOnlyPermitSource
from tests.roles.pilot_toy import PilotToy, registered, vendor_toy  # noqa: F401 (fixture)
from tests.spend.conftest import CALLERS_OFF

RATES = Rates(input="1.25", output="10", cache_read="0.125", cache_write="1.25")
VENDOR = catalog_bounded("openai:gpt-test", rates=RATES, context_window=400_000, output_cap=32_000)


def test_the_registry_is_built_from_the_catalog_and_its_rmax_is_exact() -> None:
    assert VENDOR.version == CATALOG_BOUNDED_VERSION
    # 2 x (400,000 x $1.25 + 32,000 x $10) / 10^6
    assert Decimal(VENDOR.rmax) == reservation(VENDOR) == Decimal("1.64")
    assert check_assumptions(VENDOR)
    same = [f for f in ("framing", "tiers", "max_requests", "max_tier_multiplier")]
    assert all(getattr(VENDOR, f) == getattr(ASSUMED_V1, f) for f in same)


@pytest.mark.parametrize(
    ("change", "code", "where"),
    [
        ({"model": "openai-codex:gpt-6.1-sol"}, "lookup_assumptions_changed", "model"),
        ({"model": "anthropic:claude-test"}, "lookup_assumptions_changed", "model"),
        ({"max_output": 0}, "lookup_assumptions_changed", "max_output"),
        ({"max_requests": 11}, "lookup_assumptions_changed", "max_requests"),
        ({"absent_tier_multiplier": "1"}, "lookup_assumptions_changed", "absent_tier"),
        ({"rmax": "1.63"}, "lookup_rmax_altered", "rmax"),
        ({"input_envelope": 500_000}, "lookup_rmax_altered", "rmax"),  # Rmax no longer fits
    ],
)
def test_a_registry_that_is_not_its_own_catalog_bounded_one_is_refused(
    change: dict[str, object], code: str, where: str
) -> None:
    with pytest.raises(SpendError) as caught:
        check_assumptions(msgspec.structs.replace(VENDOR, **change))
    assert caught.value.code == code and where in caught.value.location


def _binding(max_output: int = 128_000) -> CatalogBinding:
    return sealed_catalog(
        CatalogBinding(
            model="openai:gpt-test",
            input="1.25",
            output="10",
            cache_read="0.125",
            cache_write="1.25",
            context_window=400_000,
            max_output=max_output,
            tiers=(),
            digest="",
        )
    )


def test_the_output_cap_is_at_most_the_catalogs_maximum_output() -> None:
    check_catalog(_binding(), VENDOR)  # 32,000 <= 128,000
    check_catalog(_binding(32_000), VENDOR)
    with pytest.raises(SpendError) as caught:
        check_catalog(_binding(16_000), VENDOR)
    assert caught.value.code == "lookup_pilot_catalog_mismatch"
    assert caught.value.location == "catalog.max_output"


def test_the_contract_is_the_registrys_reader_on_the_vendors_responses_api() -> None:
    contract = contract_for(VENDOR, effort="low")
    assert (contract.provider, contract.model, contract.api) == (
        "openai",
        "gpt-test",
        "openai-responses",
    )
    assert contract.base_url == "https://api.openai.com/v1"
    assert contract.account_header == "openai-project"
    assert SOL_CONTRACT.account_header == "chatgpt-account-id"
    check_contract(contract, "run-1", VENDOR)
    refusals: list[tuple[GuardContract, str]] = [
        (msgspec.structs.replace(contract, model="gpt-other"), "contract.model"),
        (msgspec.structs.replace(contract, api="openai-chat"), "contract.api"),
        (msgspec.structs.replace(contract, effort="extreme"), "contract.effort"),
        (SOL_CONTRACT, "contract.provider"),  # Sol's contract under a vendor registry
    ]
    for wrong, where in refusals:
        with pytest.raises(SpendError) as caught:
            check_contract(wrong, "run-1", VENDOR)
        assert caught.value.code == "lookup_contract_mismatch" and caught.value.location == where
    with pytest.raises(SpendError) as caught:
        check_contract(contract, "run-1")  # a vendor contract under assumed-v1
    assert caught.value.code == "lookup_contract_mismatch"


def test_a_guard_never_asks_for_more_than_the_registered_output_cap(tmp_path: Path) -> None:
    credentials = tmp_path / "credentials.json"
    credentials.write_text('{"api_key": "sk-fictional"}')
    for tokens in (32_001, 0):
        with pytest.raises(SpendError) as caught:
            GuardedProvider(
                contract=contract_for(VENDOR, effort="low", base_url="http://127.0.0.1:9/v1"),
                permits=TestOnlyPermitSource(Decimal("10.00"), reservation(VENDOR)),
                run_id="run-1",
                slot_id="s",
                credentials_path=str(credentials),
                callers=CALLERS_OFF,
                assumptions=VENDOR,
                max_output_tokens=tokens,
            )
        assert caught.value.code == "lookup_option_forbidden"


def _price(**change: object) -> ModelPrice:
    base = ModelPrice(
        input=1.25,
        output=10.0,
        cache_read=0.125,
        cache_write=1.25,
        context_window=400_000,
        max_output=128_000,
        tiers=(),
    )
    return msgspec.structs.replace(base, **change)


def test_registry_for_picks_the_readers_registry() -> None:
    assert registry_for("openai-codex:gpt-6.1-sol", None, 128_000) is ASSUMED_V1
    assert registry_for("anthropic:claude-test", _price(), 64_000) is ASSUMED_V1
    bounded = registry_for("openai:gpt-test", _price(), 32_000)
    assert bounded.rates.output == "10.0"  # the catalog's exact text, as it wrote it
    assert msgspec.structs.replace(bounded, rates=RATES) == VENDOR
    with pytest.raises(SpendError) as caught:
        registry_for("openai:gpt-test", _price(cache_write=None), 32_000)
    assert caught.value.code == "lookup_pilot_prices_missing"


def test_a_vendor_pilot_registers_under_catalog_bounded_v1(vendor_toy: PilotToy) -> None:  # noqa: F811
    done = registered(vendor_toy)
    registry = done.pilot.descriptor.assumptions
    assert registry.version == CATALOG_BOUNDED_VERSION and registry.max_output == 128_000
    assert registry.model == "openai:gpt-test" and registry.rmax == "3.56"


def test_a_reader_no_guard_serves_cannot_register_a_pilot(vendor_toy: PilotToy) -> None:  # noqa: F811
    # the same external registration, read by an Anthropic model: assumed-v1 is Sol's
    from tests.roles.pilot_toy import rewritten

    def to_anthropic(data: dict[str, object]) -> None:
        work = data["workload"]
        assert isinstance(work, dict)
        work["reader_model"] = "anthropic:claude-test"

    sha = rewritten(vendor_toy.registration, to_anthropic)
    with pytest.raises(RoleError) as caught:
        registered(vendor_toy, sha256=sha)
    assert caught.value.code == "lookup_pilot_reader_mismatch"
    assert caught.value.location == "registration:$.workload.reader_model"
