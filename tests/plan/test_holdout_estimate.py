"""`doit estimate --probe-mode lookup-allowed-v1` with a holdout source: its fixed-budget
sizing priced into the expected and reservation scenarios and the proposed cap C.

A toy holdout (`tests.holdout.toy`) is frozen for real; its ``budget.json`` is written by
hand with the schema (no measurement: pricing reads recorded metrics only), with slots
whose amounts are computed by hand below against a one-model test catalog.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import ContinuityError, HoldoutError, UsageError
from continuity.holdout import (
    HoldoutSource,
    check_overlap,
    freeze_source,
    holdout_binding,
    load_frozen,
    select_frozen,
    validate_source,
)
from continuity.holdout.overlap import write_report
from continuity.lookup.fixed_budget import (
    CodeBinding,
    FixedBudget,
    FixedSlot,
    FixedTerms,
    ReaderBinding,
    RoleBinding,
    SourceBinding,
    fixed_budget_bytes,
    fixed_budget_classifier_code,
    slot_with_derived,
)
from continuity.lookup.fixed_budget_classify import envelope_metrics
from continuity.lookup.policy import LOOKUP_PROTOCOL, default_policy_path
from continuity.lookup.soul import KNOWN_SOULS, SOUL_NAME
from continuity.plan.lookup_estimate import LookupEstimate
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.store import Store
from rules.estimate import _estimate, task_estimate
from tests.holdout.test_freeze import PLAIN
from tests.holdout.toy import write_source

LOOKUP = "lookup-allowed-v1"
READER = "openai:hand-reader"
SEED = 17
BYTES = 1_000  # the sizing's byte budget: half of it is 500 bytes, two lookups of 250
CATALOG: dict[str, Any] = {
    "schema": "continuity-pricing-v1",
    "currency": "USD",
    "unit": "per million tokens",
    "as_of": "2026-11-29",
    "note": "test rates",
    "models": {
        READER: {
            "input": 1.0,
            "output": 2.0,
            "cache_read": 0.5,
            "cache_write": 1.0,
            "context_window": 100_000,
            "max_output": 1_000,
            "tiers": [],
        }
    },
}


def frozen_toy(store: Store, root: Path) -> HoldoutSource:
    source = write_source(root / "src")
    (root / "overlap").mkdir(parents=True)
    report = write_report(check_overlap(validate_source(source), PLAIN), root / "overlap", "toy")
    freeze_source(store, source, str(report), references=PLAIN)
    return source


def binding_of(store: Store, source: HoldoutSource, seed: int = SEED) -> SourceBinding:
    frozen = load_frozen(store, source)
    binding = holdout_binding(frozen, select_frozen(frozen, seed))
    return msgspec.convert(msgspec.to_builtins(binding), SourceBinding)


def slot(trace: str, probe: str, first_request_bytes: int, **more: Any) -> FixedSlot:
    calls, sent, responses = envelope_metrics(8, BYTES, 10)
    recorded = FixedSlot(
        role="pack",
        trace_id=trace,
        probe_id=probe,
        arm="continuity-pack-cold",
        suite="holdout",
        kind="envelope",
        status=more.pop("status", "measured"),
        failure=more.pop("failure", None),
        deadline_exceeded=False,
        exhausted=None,
        first_request_bytes=first_request_bytes,
        cold_tokens=0,
        discovered=True,
        verified=True,
        calls=calls,
        bytes=sent,
        responses=responses,
        initial_context_tokens=0,
        initial_admission=None,
        largest_response=0,
        peak_request_tokens=0,
        admission_tokens=0,
        classification="unknown",
        cause=None,
    )
    return slot_with_derived(recorded, 8, BYTES)


def hand_budget(holdout: SourceBinding, slots: list[FixedSlot]) -> FixedBudget:
    core = KNOWN_SOULS[SOUL_NAME]
    return FixedBudget(
        lookup_protocol=LOOKUP_PROTOCOL,
        probe_protocol=PROBE_PROTOCOL,
        classifier_code=fixed_budget_classifier_code(),
        holdout=holdout,
        reader=ReaderBinding(binding="default", reader=READER, alternate="openai:hand-other"),
        code=CodeBinding(commit="unknown", dirty=None, measurement_code="0" * 64),
        budget=FixedTerms(
            policy_sha256=hashlib.sha256(default_policy_path().read_bytes()).hexdigest(),
            policy_file=default_policy_path().name,
            calls=8,
            bytes=BYTES,
            rounds=10,
            probe_deadline_seconds=600.0,
            cleanup_seconds=60.0,
            turn_seconds=690.0,
            watchdog_seconds=720.0,
        ),
        roles=[
            RoleBinding(
                name="pack",
                arm="continuity-pack-cold",
                code="R0",
                soul_file=SOUL_NAME,
                soul_sha256=core[0],
                soul_core_sha256=core[1],
                measured_code="Rpack",
                guidance_allowance_tokens=84,
            )
        ],
        slots=slots,
    )


class Fixture(msgspec.Struct):
    store: Store
    source: HoldoutSource
    budget: Path
    sha256: str
    catalog: Path
    out: Path


def write_budget(path: Path, budget: FixedBudget) -> str:
    path.write_bytes(fixed_budget_bytes(budget))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def hand_slots(selected: tuple[str, ...]) -> list[FixedSlot]:
    """Three eligible slots with a 1,000-token first request, and one whose 300,000-token
    first request is context-bound (inventory-infeasible)."""
    return [
        slot(selected[0], "p1", 3_000),
        slot(selected[0], "p2", 3_000),
        slot(selected[1], "p1", 2_998),  # 999.33 tokens, rounded up to 1,000
        slot(selected[1], "p2", 900_000),
    ]


@pytest.fixture
def toy(tmp_path: Path) -> Fixture:
    store = Store(tmp_path / "store")
    source = frozen_toy(store, tmp_path)
    holdout = binding_of(store, source)
    budget = tmp_path / "sizing" / "budget.json"
    budget.parent.mkdir()
    sha = write_budget(budget, hand_budget(holdout, hand_slots(holdout.selected)))
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(CATALOG))
    return Fixture(store, source, budget, sha, catalog, tmp_path / "out")


def options(toy: Fixture, **more: Any) -> dict[str, Any]:
    chosen: dict[str, Any] = {
        "probe_mode": LOOKUP,
        "manifest": str(toy.source.manifest),
        "manifest_sha256": toy.source.manifest_sha256,
        "statistical_spec": str(toy.source.spec),
        "selection_seed": SEED,
        "lookup_policy": str(toy.budget),
        "lookup_policy_sha256": toy.sha256,
        "output_limit": 1_000,
        "output_limit_source": "catalog_max",
        "pricing": str(toy.catalog),
        "store": str(toy.store.root),
        "out": str(toy.out),
    }
    chosen.update(more)
    return {k: v for k, v in chosen.items() if v is not None}


def estimated(toy: Fixture, **more: Any) -> tuple[LookupEstimate, str]:
    where = _estimate(**options(toy, **more))
    assert where is not None and where.startswith("estimate in ")
    path = Path(where.split(" in ", 1)[1])
    return msgspec.json.decode(path.read_bytes(), type=LookupEstimate), where


def test_the_cap_is_ceil_to_cents_of_one_and_a_quarter_eligible_reservations(
    toy: Fixture, capsys: pytest.CaptureFixture[str]
) -> None:
    result, _ = estimated(toy)
    found = result.holdout
    assert found is not None
    priced = found.pricing
    assert (priced.status, priced.code, priced.model) == ("priced", None, READER)
    assert (priced.planned, priced.eligible, priced.inventory_infeasible, priced.unknown) == (
        4,
        3,
        1,
        0,
    )
    # Reservation: ten rounds, each the whole 100,000-token window uncached at $1/M and
    # the 1,000-token output limit at $2/M: 10 x (0.1 + 0.002) = 1.02 a slot.
    assert priced.reservation_usd == Decimal("3.06")
    # C = ceil-to-cents(1.25 x 3.06 = 3.825) = 3.83.
    assert priced.cap_usd == Decimal("3.83")
    # Expected: rounds of 1,300, 1,850 and 2,400 input tokens (1,000 + returned so far +
    # 300 a round; two lookups of 250 bytes), half cached at $0.5/M, 300 output at $2/M.
    per_slot = sum(
        (Decimal(t - t // 2) + Decimal(t // 2) / 2 + 600) / 1_000_000 for t in (1300, 1850, 2400)
    )
    assert per_slot == Decimal("0.0059625")
    assert priced.expected_usd == 3 * per_slot
    baseline = (Decimal(650) + Decimal(325) + 600) / 1_000_000  # one round of 1,300
    (role,) = priced.roles
    assert role.lookup_overhead_usd == 3 * (per_slot - baseline)
    # Per trial (display only): 0.0059625 rounded half-even to the micro-dollar.
    assert (role.expected_per_trial_usd, role.reservation_per_trial_usd) == (
        Decimal("0.005962"),
        Decimal("1.020000"),
    )
    ratio = Decimal("3.83") / (3 * per_slot)
    assert priced.cap_over_expected == ratio.quantize(Decimal("0.0001"))
    assert (found.output_limit, found.output_limit_source) == (1_000, "catalog_max")
    assert found.classes == {"context_bound": 1, "feasible": 3}
    assert found.budget_sha256 == toy.sha256 == result.policy_sha256
    assert result.workload.traces == list(binding_of(toy.store, toy.source).selected)
    assert (result.workload.suites, result.workload.repeats) == (["holdout"], 1)
    assert result.slots == 4 and result.roles[0].skipped == {"context_bound": 1}
    text = capsys.readouterr().out
    assert "proposed cap C = ceil-to-cents(1.25 x eligible reservations) = 3.83" in text
    assert f"holdout: seeded-sha256-rank-v1 seed {SEED}, 2 per group" in text
    assert f"fixed-budget sizing sha256 {toy.sha256}" in text


def test_an_enforced_output_limit_is_accepted_and_marked_as_needing_proof(toy: Fixture) -> None:
    result, _ = estimated(toy, output_limit=800, output_limit_source="enforced")
    assert result.holdout is not None
    assert "separate execution proof" in result.holdout.output_limit_note
    # 10 x (0.1 + 800 x 2 / 1M) = 1.016 a slot; 1.25 x 3.048 = 3.81.
    assert result.holdout.pricing.cap_usd == Decimal("3.81")
    above, _ = estimated(toy, output_limit=5_000, output_limit_source="enforced")
    assert above.holdout is not None and above.holdout.pricing.status == "blocked"
    assert "the output limit 5,000 exceeds the catalog's 1,000" in above.holdout.pricing.reasons


def test_unknown_slots_missing_rates_and_no_output_limit_block_approval(
    toy: Fixture, capsys: pytest.CaptureFixture[str]
) -> None:
    holdout = binding_of(toy.store, toy.source)
    failed = slot(holdout.selected[1], "p3", 0, status="failed", failure="child_watchdog")
    assert (failed.classification, failed.cause) == ("unknown", "child_watchdog")
    toy.sha256 = write_budget(
        toy.budget, hand_budget(holdout, [*hand_slots(holdout.selected), failed])
    )
    result, _ = estimated(toy)
    assert result.holdout is not None
    priced = result.holdout.pricing
    assert (priced.status, priced.code) == ("blocked", "lookup_pricing_blocked")
    assert priced.reasons == ["1 slots have unknown feasibility"]
    amounts = (priced.expected_usd, priced.reservation_usd, priced.cap_usd)
    assert amounts == (None, None, None)  # never zero
    assert "blocked (lookup_pricing_blocked): 1 slots have unknown feasibility" in (
        capsys.readouterr().out
    )
    no_cache = {**CATALOG, "models": {READER: {**CATALOG["models"][READER], "cache_read": None}}}
    toy.catalog.write_text(json.dumps(no_cache))
    toy.sha256 = write_budget(toy.budget, hand_budget(holdout, hand_slots(holdout.selected)))
    result, _ = estimated(toy, output_limit=None, output_limit_source=None)
    assert result.holdout is not None
    priced = result.holdout.pricing
    assert priced.status == "blocked" and priced.cap_usd is None
    assert f"{READER}: no cache_read in the catalog" in priced.reasons
    assert "no explicit per-call output limit" in priced.reasons
    assert "numerical approval is blocked" in result.holdout.output_limit_note


def test_the_selection_must_be_the_one_the_sizing_binds(toy: Fixture) -> None:
    for more, field in (
        ({"selection_seed": SEED + 1}, "seed"),
        ({"per_group": 1}, "per_group"),
    ):
        with pytest.raises(ContinuityError) as err:
            _estimate(**options(toy, **more))
        assert (err.value.code, err.value.location) == (
            "lookup_policy_holdout_mismatch",
            f"{toy.budget}:$.holdout.{field}",
        )
    holdout = binding_of(toy.store, toy.source)
    other = msgspec.structs.replace(holdout, manifest_sha256="0" * 64)
    toy.sha256 = write_budget(toy.budget, hand_budget(other, hand_slots(holdout.selected)))
    with pytest.raises(ContinuityError) as err:
        _estimate(**options(toy))
    assert (err.value.code, err.value.location) == (
        "lookup_policy_holdout_mismatch",
        f"{toy.budget}:$.holdout.manifest_sha256",
    )
    with pytest.raises(HoldoutError) as held:
        _estimate(**options(toy, selection_seed=None))
    assert held.value.code == "holdout_selection_seed_required"


def test_the_output_limit_and_its_source_are_checked(toy: Fixture) -> None:
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"output_limit": 999}, "lookup_output_limit_mismatch", "--output-limit"),
        (
            {"output_limit_source": "guess"},
            "lookup_output_limit_source_invalid",
            "--output-limit-source",
        ),
        ({"output_limit_source": None}, "option_value_missing", "--output-limit-source"),
        ({"output_limit": None}, "option_value_missing", "--output-limit"),
    ]
    for more, code, where in cases:
        with pytest.raises(UsageError) as err:
            _estimate(**options(toy, **more))
        assert (err.value.code, err.value.location) == (code, where), more
    (kind,) = [p["type"] for p in task_estimate()["params"] if p["name"] == "output_limit"]
    with pytest.raises(ValueError, match=r"^lookup_output_limit_invalid: "):
        kind("0")


def test_external_only_options_without_the_triple_are_refused(toy: Fixture) -> None:
    for name, value in (
        ("selection_seed", SEED),
        ("per_group", 2),
        ("lookup_policy", str(toy.budget)),
        ("lookup_policy_sha256", toy.sha256),
        ("output_limit", 1_000),
        ("output_limit_source", "catalog_max"),
    ):
        with pytest.raises(HoldoutError) as err:
            _estimate(probe_mode=LOOKUP, **{name: value})
        assert (err.value.code, err.value.location) == ("holdout_source_incomplete", "--manifest")
    with pytest.raises(HoldoutError) as err:
        _estimate(**options(toy, statistical_spec=None))
    assert (err.value.code, err.value.location) == (
        "holdout_source_incomplete",
        "--statistical-spec",
    )


def test_the_holdout_form_takes_its_workload_from_the_sizing_only(toy: Fixture) -> None:
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"suites": "original"}, "plan_invalid", "--suites"),
        ({"registration": "r.json", "sha256": "0" * 64}, "plan_invalid", "--registration"),
        ({"policy": str(default_policy_path())}, "plan_invalid", "--policy"),
        ({"probe_limit": 1}, "plan_invalid", "--probe-limit"),
        ({"lookup_policy": None}, "lookup_fixed_budget_required", "--lookup-policy"),
        (
            {"lookup_policy_sha256": None},
            "lookup_policy_sha256_required",
            "--lookup-policy-sha256",
        ),
    ]
    for more, code, where in cases:
        with pytest.raises(ContinuityError) as err:
            _estimate(**options(toy, **more))
        assert (err.value.code, err.value.location) == (code, where), more
    with pytest.raises(ContinuityError) as err:
        _estimate(**options(toy, lookup_policy_sha256="f" * 64))
    assert err.value.code == "lookup_policy_sha256_mismatch"
    # Outside lookup mode the holdout-estimate options are refused, never ignored.
    with pytest.raises(UsageError) as err:
        _estimate(lookup_policy=str(toy.budget))
    assert (err.value.code, err.value.location) == ("plan_invalid", "--lookup-policy")
