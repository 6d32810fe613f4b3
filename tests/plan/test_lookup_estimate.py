"""Lookup cost sensitivity (`doit estimate --probe-mode lookup-allowed-v1`) and holdout
pricing: profiles, sensitivity arithmetic, conservative sizing, tiers, unknown prices,
the refusals, and the cap C in exact cents."""

from __future__ import annotations

import hashlib
import itertools
import math
import shutil
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from continuity.commands.estimation import EstimateRequest
from continuity.errors import ContinuityError, UsageError
from continuity.lookup.policy import default_policy_path, load_policy
from continuity.lookup.reader import LUNA, SOL
from continuity.lookup.receipts import LookupBinding
from continuity.lookup.soul import normalise_core, soul_path
from continuity.memory.pack import PACK_RETRIEVAL_GUIDANCE
from continuity.messages import Usage
from continuity.plan.exact_price import tiered
from continuity.plan.holdout_pricing import (
    BLOCKED_CODE,
    PricedSlot,
    ReservationTerms,
    price_holdout,
)
from continuity.plan.lookup_estimate import (
    HIGH_END_MODEL,
    LookupEstimate,
    configured_deadlines,
    estimate_lookup,
    price_inputs,
)
from continuity.plan.lookup_report import (
    format_lookup_estimate,
    guidance_allowances,
    lookup_estimate,
    registered_workload,
    workload_traces,
)
from continuity.plan.lookup_slots import (
    Allowances,
    EstimateRole,
    EstimateSource,
    LookupWorkload,
    Returned,
    SlotSize,
    level_inputs,
    plan_slots,
    slot_rounds,
)
from continuity.plan.pricing import (
    Catalog,
    ModelPrice,
    Tier,
    call_cost,
    load_catalog,
    model_price,
    price_source,
    rate_card,
)
from continuity.plan.request import HoldoutRequest
from continuity.providers.rates import price_usage
from continuity.requests import SuiteRequest
from continuity.roles.register import (
    REGISTRATION_SCHEMA,
    BoundDigests,
    Checkout,
    Registration,
    workload,
)
from continuity.roles.table import ROLES
from rules.estimate import _estimate, task_estimate
from tests.plan.test_plan import guarded_doit

LOOKUP = "lookup-allowed-v1"
FLAT = "test:flat"
CATALOG = Catalog(
    schema="continuity-pricing-v1",
    currency="USD",
    unit="per million tokens",
    as_of="2026-11-29",
    note="",
    models={
        FLAT: ModelPrice(
            input=1.0, output=2.0, cache_read=0.5, context_window=400_000, max_output=8_000
        ),
        "test:cap": ModelPrice(
            input=0.1, output=0.2, cache_read=0.01, context_window=272_000, max_output=4_096
        ),
        "test:no-cache": ModelPrice(
            input=1.0, output=2.0, context_window=400_000, max_output=8_000
        ),
    },
)


def workload_only(**options: object) -> LookupWorkload:
    suites = options.pop("suites", ["original"])
    probe_limit = options.pop("probe_limit", 1)
    assert isinstance(suites, list) and isinstance(probe_limit, int)
    return registered_workload(
        workload(suites, [], probe_limit),
        ROLES,
        EstimateSource(kind="workload-only"),
        binding=str(options.pop("binding", "default")),
    )


def native_slot(bound: int, *, allowance: int = 0) -> SlotSize:
    return SlotSize(
        role="native",
        arm="native-lookup",
        suite="original",
        trace="t",
        probe="p",
        disposition="feasible",
        bound=bound,
        cold=0,
        allowance=allowance,
    )


# -- profiles ---------------------------------------------------------------------------


def test_profiles_come_main_screening_high_end_each_priced_alone() -> None:
    result = lookup_estimate(workload_only(), watchdog_seconds=720.0)
    assert [(p.profile, p.model) for p in result.profiles] == [
        ("main", SOL),
        ("screening", LUNA),
        ("high-end", HIGH_END_MODEL),
    ]
    assert HIGH_END_MODEL == "anthropic:claude-opus-5-5"
    # Never pooled: each profile's cell is exactly its own model's price of the row's
    # calls, and no figure sums across profiles.
    catalog = load_catalog()
    slots = plan_slots(
        result.workload,
        workload_traces(result.workload),
        load_policy(),
        guidance_allowances(result.workload.roles, load_policy()),
    )
    sizes = level_inputs(slots, 2, 63_488)
    for profile in result.profiles:
        cell = next(c for c in profile.prices if (c.lookup_calls, c.returned) == (2, "half"))
        alone = price_inputs(model_price(catalog, profile.model), sizes, cell.cache_percent)
        assert cell.usd == alone[0] and cell.usd is not None
    assert len({p.prices[0].usd for p in result.profiles}) == 3
    # The alternate binding swaps main and screening; both overrides are taken.
    swapped = lookup_estimate(
        workload_only(binding="alternate"),
        screening="openai-codex:gpt-6-mini",
        high_end=FLAT,
        watchdog_seconds=720.0,
    )
    assert [p.model for p in swapped.profiles] == [LUNA, "openai-codex:gpt-6-mini", FLAT]
    assert swapped.readiness.reader == LUNA


# -- the sensitivity rows on a hand-computable workload ----------------------------------

# One native slot (bound 1,000, so the 150,000-token floor) under a 1,000-byte budget:
# every round's input by hand (floor + bytes returned before it + 300 a round).
ROUNDS: dict[tuple[int, Returned], list[int]] = {
    (0, "none"): [150_300],
    (2, "none"): [150_300, 150_600, 150_900],
    (2, "half"): [150_300, 150_850, 151_400],  # 250 + 250 returned
    (2, "full"): [150_300, 151_100, 151_900],  # 500 + 500
    (8, "none"): [150_300 + 300 * k for k in range(9)],
    # 500 bytes over 8 calls: 63 x 4 then 62 x 4, so 0, 63, 126, 189, 252, 314, 376,
    # 438 bytes returned before each round
    (8, "half"): [150_300, 150_663, 151_026, 151_389, 151_752, 152_114, 152_476, 152_838, 153_200],
    (8, "full"): [150_300 + 425 * k for k in range(9)],  # 125 bytes a call
}


def _flat_cost(inputs: Sequence[int], percent: int) -> Decimal:
    """$1/M input, $0.5/M cached, $2/M output, 300 output tokens a round."""
    total = Decimal(0)
    for tokens in inputs:
        cached = tokens * percent // 100
        total += Decimal(tokens - cached) + Decimal(cached) / 2 + 600
    return total / 1_000_000


def hand_estimate(slots: Sequence[SlotSize], *, byte_budget: int = 1_000) -> LookupEstimate:
    policy = replace(load_policy(), bytes=byte_budget)
    work = workload_only()
    return estimate_lookup(
        work,
        slots,
        policy,
        policy_sha256="0" * 64,
        allowances=Allowances(soul_bytes={}, guidance_bytes=0),
        models=[("main", FLAT, CATALOG.models[FLAT])] * 3,
        deadlines=configured_deadlines(720.0),
        prices=price_source(),
    )


def test_every_sensitivity_row_and_cache_level_by_hand() -> None:
    result = hand_estimate([native_slot(1_000)])
    rows = {(level.lookup_calls, level.returned): level for level in result.levels}
    assert list(rows) == list(ROUNDS)  # no call returns nothing: one row at 0 calls
    for key, inputs in ROUNDS.items():
        level = rows[key]
        assert level.returned_bytes == {"none": 0, "half": 500, "full": 1_000}[key[1]]
        assert (level.rounds_per_slot, level.calls) == (key[0] + 1, len(inputs))
        assert (level.input_tokens, level.peak_input_tokens) == (sum(inputs), inputs[-1])
        assert level.histogram["<= 200k"] == len(inputs)
    cells = {(c.lookup_calls, c.returned, c.cache_percent): c for c in result.profiles[0].prices}
    assert len(cells) == 7 * 3
    for (calls, returned), inputs in ROUNDS.items():
        for percent in (0, 50, 90):
            assert cells[(calls, returned, percent)].usd == _flat_cost(inputs, percent)
    # Two cells written out: 0 calls at 90 % cache (135,270 of 150,300 cached: 15,030 +
    # 67,635 + 600 micro-dollars), and 2 calls, full bytes, no cache (453,300 + 3 x 600).
    assert cells[(0, "none", 90)].usd == Decimal("0.083265")
    assert cells[(2, "full", 0)].usd == Decimal("0.4551")


def test_returned_bytes_are_charged_again_in_every_later_round() -> None:
    rounds = slot_rounds(1_000, [100, 200, 300], arm="")
    assert rounds == [1_300, 1_700, 2_200, 2_800]
    # Each round adds everything returned before it and 300 tokens: the first response
    # is in rounds 2, 3 and 4.
    assert [b - a for a, b in itertools.pairwise(rounds)] == [400, 500, 600]


def test_conservative_sizing_floors_and_allowances() -> None:
    # The native floor, a bound above it kept, the allowance added after the floor.
    assert slot_rounds(1_000, [], arm="native-lookup") == [150_300]
    assert slot_rounds(200_000, [], arm="native-lookup") == [200_300]
    assert slot_rounds(1_000, [], arm="native-lookup", allowance=60) == [150_360]
    # The pack floor: cold + 12,000.
    assert slot_rounds(5_000, [], arm="continuity-pack-cold", cold=20_000) == [32_300]
    assert slot_rounds(40_000, [], arm="continuity-pack-cold", cold=20_000) == [40_300]
    # The allowances are measured from the files: S1's extra core bytes over S0's, the
    # pack guidance with its line break; only Rpack's pack arm carries the guidance.
    s0, s1 = (
        len(normalise_core(soul_path(name).read_text(encoding="utf-8")).encode("utf-8"))
        for name in ("continuity-soul-v1.md", "continuity-soul-v2.md")
    )
    allowances = guidance_allowances([EstimateRole(**_role(r)) for r in ROLES], load_policy())
    assert allowances.soul_bytes == {"continuity-soul-v1.md": 0, "continuity-soul-v2.md": s1 - s0}
    assert allowances.guidance_bytes == len(PACK_RETRIEVAL_GUIDANCE.encode("utf-8")) + 1
    tokens = {r.name: allowances.tokens(EstimateRole(**_role(r))) for r in ROLES}
    soul, guidance = -(-(s1 - s0) // 3), -(-allowances.guidance_bytes // 3)
    assert tokens == {
        "native": (0, 0),
        "pack": (0, 0),
        "pack-only": (0, guidance),
        "soul-only": (soul, 0),
        "shipping": (soul, guidance),
        "native-soul": (soul, 0),
    }
    rpack_native = EstimateRole(name="x", arm="native-lookup", code="Rpack", soul_file="s")
    assert allowances.tokens(rpack_native) == (0, 0)  # no pack, no pack guidance


def test_slots_take_the_policys_recorded_initial_context_when_larger() -> None:
    policy = load_policy()
    work = workload_only()
    traces = workload_traces(work)
    allowances = guidance_allowances(work.roles, policy)
    before = plan_slots(work, traces, policy, allowances)
    measured = policy.slots[0]
    target = next(
        s
        for s in before
        if (s.trace, s.arm, s.probe) == (measured.trace_id, measured.arm, measured.probe_id)
    )
    grown = replace(measured, initial_tokens=target.bound + 12_345)
    bigger = replace(policy, slots=[grown, *policy.slots[1:]])
    after = plan_slots(work, traces, bigger, allowances)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed and all(b.bound == target.bound + 12_345 for _, b in changed)
    assert all(
        (b.trace, b.arm, b.probe) == (target.trace, target.arm, target.probe) for _, b in changed
    )
    # Slots are dispositioned as a run would: the hard natives are context-bound and
    # skipped, never priced.
    hard = workload_only(suites=["hard"], probe_limit=0)
    slots = plan_slots(hard, workload_traces(hard), policy, guidance_allowances(hard.roles, policy))
    skipped = [s for s in slots if not s.priced]
    assert skipped and {s.disposition for s in skipped} == {"context_bound"}
    assert {s.arm for s in skipped} == {"native-lookup"}


# -- tiers and unknown prices ------------------------------------------------------------


def test_the_highest_strictly_exceeded_tier_counts_cached_input() -> None:
    catalog = load_catalog()
    luna = model_price(catalog, LUNA)
    assert luna is not None and luna.tiers[0].above_input_tokens == 200_000
    # 150,000 uncached + 60,000 cached = 210,000 > 200,000: every token at the tier's
    # rates ($2.5, $0.25 cached, $15 output), not the base ($1.25, $0.125, $10).
    usage = Usage(input=150_000, cache_read=60_000, output=300)
    # 375,000 + 15,000 + 4,500 micro
    assert price_usage(rate_card(luna), usage) == Decimal("0.3945")
    assert math.isclose(float(Decimal("0.3945")), call_cost(catalog, LUNA, usage) or 0.0)
    assert tiered(luna, 210_000)
    # Exactly at the threshold is not above it.
    at = Usage(input=140_000, cache_read=60_000, output=300)
    assert price_usage(rate_card(luna), at) == Decimal("0.1855")  # 175,000 + 7,500 + 3,000 micro
    assert not tiered(luna, 200_000)
    # In a row: 90 % cached still selects the tier by the whole input.
    usd, _, _, _, above = price_inputs(luna, {210_000: 2, 100_000: 1}, 90)
    assert above == 2 and usd is not None


@settings(max_examples=200, deadline=None)
@given(
    model=st.sampled_from([LUNA, SOL, HIGH_END_MODEL, "anthropic:claude-sonnet-4-5"]),
    uncached=st.integers(0, 400_000),
    cached=st.integers(0, 400_000),
    output=st.integers(0, 64_000),
)
def test_exact_prices_agree_with_the_dry_runs_float_prices(
    model: str, uncached: int, cached: int, output: int
) -> None:
    """The same tier rule and parts as `call_cost` (catalog and genai-prices models)."""
    catalog = load_catalog()
    usage = Usage(input=uncached, cache_read=cached, output=output)
    price = model_price(catalog, model)
    exact = price_usage(rate_card(price), usage) if price is not None else None
    approximate = call_cost(catalog, model, usage)
    assert (exact is None) == (approximate is None)
    if exact is not None and approximate is not None:
        assert math.isclose(float(exact), approximate, rel_tol=1e-12, abs_tol=1e-12)


def test_unknown_prices_stay_unknown_never_zero() -> None:
    slots = [native_slot(1_000)]
    for model in ("openai:local-model", "acme:unpriced-model"):
        price = model_price(load_catalog(), model)
        cell = price_inputs(price, level_inputs(slots, 2, 500), 50)
        assert cell == (None, Decimal(0), 0, 3, 0)
    # A missing cache rate leaves the uncached row priced and the cached ones unknown.
    no_cache = CATALOG.models["test:no-cache"]
    inputs = level_inputs(slots, 0, 0)
    assert price_inputs(no_cache, inputs, 0)[0] == Decimal("0.1509")
    assert price_inputs(no_cache, inputs, 50)[:4] == (None, Decimal(0), 0, 1)
    # Through the whole estimate and its text.
    result = lookup_estimate(workload_only(), high_end="openai:local-model", watchdog_seconds=720.0)
    high_end = result.profiles[2]
    assert all(c.usd is None and c.unpriced_calls > 0 for c in high_end.prices)
    assert "unknown (24 unpriced; known 0.00)" in format_lookup_estimate(result)


# -- the report, the JSON and the task ---------------------------------------------------


def test_the_deadlines_are_the_configured_constants() -> None:
    deadlines = configured_deadlines(720.0)
    fields = {f.name: f.default for f in msgspec.structs.fields(LookupBinding)}
    assert (
        (deadlines.probe_seconds, deadlines.cleanup_seconds, deadlines.turn_seconds)
        == (
            fields["probe_deadline"],
            fields["cleanup_seconds"],
            fields["turn_safety_seconds"],
        )
        == (600.0, 60.0, 690.0)
    )


def test_the_task_prints_and_writes_the_estimate_without_network(tmp_path: Path) -> None:
    result, _ = guarded_doit(
        tmp_path, "estimate", "--probe-mode", LOOKUP, "--suites", "original", "--probe-limit", "1"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    text = result.stdout
    for phrase in (
        "nothing to price",
        "under labelled assumptions",
        "configured deadlines (configuration, not measured latency): 600 s probe, 60 s "
        "cleanup, 690 s turn, 720 s watchdog",
        f"readiness of the main reader {SOL}: not ready",
        "calls above a tier",
        "unpriced calls",
        "call inputs per sensitivity row",
    ):
        assert phrase in text
    assert text.index("main: ") < text.index("screening: ") < text.index("high-end: ")
    (written,) = (tmp_path / "out" / "estimates").glob("lookup-*.json")
    assert text.rstrip().endswith(f"estimate in {written}")
    decoded = msgspec.json.decode(written.read_bytes(), type=LookupEstimate)
    assert decoded.schema == "continuity-lookup-estimate-v1" and decoded.slots == 24
    assert decoded.readiness.ready is False
    assert decoded.workload.source.kind == "workload-only"


def test_options_of_the_other_mode_are_refused_never_ignored() -> None:
    with pytest.raises(UsageError) as err:
        _estimate(suites="original")
    assert (err.value.code, err.value.location) == ("plan_invalid", "--suites")
    for option, value in (("suite", "hard"), ("repeats", 2), ("cost_limit", 5.0)):
        with pytest.raises(UsageError) as err:
            _estimate(probe_mode=LOOKUP, **{option: value})
        assert (err.value.code, err.value.location) == (
            "plan_invalid",
            f"--{option.replace('_', '-')}",
        )


def test_a_refusal_names_the_first_option_in_the_order_doit_estimate_declares() -> None:
    """The request's fields keep the declared option order for every option a refusal
    can name (all but the store, the output and the holdout source), so the first of
    several refused options is the one the user reads first in ``--help``."""
    source = set(HoldoutRequest.__struct_fields__) - set(SuiteRequest.__struct_fields__)
    skipped = {"store", "out", *source}
    declared = [p["name"] for p in task_estimate()["params"] if p["name"] not in skipped]
    assert [f for f in EstimateRequest.__struct_fields__ if f not in skipped] == declared
    with pytest.raises(UsageError) as err:
        _estimate(probe_mode=LOOKUP, cost_limit=5.0, judge="default", seeds="101")
    assert (err.value.code, err.value.location) == ("plan_invalid", "--seeds")


def test_real_is_refused_before_any_artifact_is_read(
    tmp_path: Path, opened_files: list[str]
) -> None:
    present = tmp_path / "registration.json"
    present.write_bytes(b"{}")
    del opened_files[:]  # the write above opened it; from here nothing may
    for registration in (tmp_path / "missing" / "registration.json", present):
        with pytest.raises(UsageError) as err:
            _estimate(probe_mode=LOOKUP, real=True, registration=str(registration), sha256="0" * 64)
        assert err.value.code == "estimate_real_refused"
    assert not [p for p in opened_files if p.startswith(str(tmp_path))]
    # Through doit as well: a path that does not exist is never looked at.
    refused, opened = guarded_doit(
        tmp_path,
        "estimate",
        "--probe-mode",
        LOOKUP,
        "--real",
        "--registration",
        str(tmp_path / "missing" / "registration.json"),
        "--sha256",
        "0" * 64,
    )
    assert refused.returncode != 0
    assert "estimate_real_refused" in refused.stdout + refused.stderr
    assert not [p for p in opened if "registration" in p or "budget-v" in p]


# -- registrations -----------------------------------------------------------------------


def _role(role: object) -> dict[str, str]:
    return {k: str(getattr(role, k)) for k in ("name", "arm", "code", "soul_file")}


def write_registration(tmp_path: Path, budget_sha: str | None = None) -> tuple[Path, str]:
    """A registration as compare_register writes it, over an R0 checkout holding the
    frozen policy (the estimate reads only its workload, roles and budget binding)."""
    checkout = tmp_path / "r0"
    policy = checkout / "fixtures" / "lookup" / default_policy_path().name
    policy.parent.mkdir(parents=True)
    shutil.copyfile(default_policy_path(), policy)
    sha = budget_sha or hashlib.sha256(policy.read_bytes()).hexdigest()
    digests: dict[str, dict[str, str]] = {"entrypoint": {}, "reader": {}, "scorer": {}, "lock": {}}
    registration = Registration(
        schema=REGISTRATION_SCHEMA,
        protocol="continuity-lookup-role-v1",
        r0=Checkout(path=str(checkout), revision="a" * 40, tree="b" * 40),
        rpack=Checkout(path=str(tmp_path / "rpack"), revision="c" * 40, tree="d" * 40),
        differing=["continuity/memory/pack.py"],
        digests=BoundDigests(**digests, budget={f"fixtures/lookup/{policy.name}": sha}),
        workload=workload(["original"], ["brightline-return"], 2),
        roles=list(ROLES),
        builds={},
    )
    path = tmp_path / "reg" / "registration.json"
    path.parent.mkdir()
    data = msgspec.json.encode(registration, order="sorted")
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def test_a_registration_gives_its_workload_roles_and_policy(tmp_path: Path) -> None:
    path, sha = write_registration(tmp_path)
    where = _estimate(
        probe_mode=LOOKUP, registration=str(path), sha256=sha, out=str(tmp_path / "o")
    )
    assert where is not None and where.startswith("estimate in ")
    result = msgspec.json.decode(Path(where.split(" in ", 1)[1]).read_bytes(), type=LookupEstimate)
    source = result.workload.source
    assert (source.kind, source.sha256) == ("registration", sha)
    assert result.workload.traces == ["brightline-return"] and result.workload.probe_limit == 2
    assert [r.name for r in result.workload.roles] == [r.name for r in ROLES]
    assert result.slots == 6 * 2
    assert result.policy_sha256 == hashlib.sha256(default_policy_path().read_bytes()).hexdigest()


def test_a_registration_sha256_mismatch_is_refused(tmp_path: Path) -> None:
    path, sha = write_registration(tmp_path)
    with pytest.raises(ContinuityError) as err:
        _estimate(probe_mode=LOOKUP, registration=str(path), sha256="f" * 64)
    assert (err.value.code, err.value.location) == ("role_registration_sha256_mismatch", "--sha256")
    # A registered policy whose bytes moved is refused too.
    moved, moved_sha = write_registration(tmp_path / "moved", budget_sha="e" * 64)
    with pytest.raises(ContinuityError) as err:
        _estimate(probe_mode=LOOKUP, registration=str(moved), sha256=moved_sha)
    assert err.value.code == "lookup_policy_sha256_mismatch"
    # Half a registration, or an option the registration fixes.
    with pytest.raises(UsageError) as err:
        _estimate(probe_mode=LOOKUP, registration=str(path))
    assert (err.value.code, err.value.location) == ("option_value_missing", "--sha256")
    with pytest.raises(UsageError) as err:
        _estimate(probe_mode=LOOKUP, registration=str(path), sha256=sha, suites="hard")
    assert (err.value.code, err.value.location) == ("plan_invalid", "--suites")


def test_an_unknown_trace_is_refused() -> None:
    work = registered_workload(
        workload(["original"], ["no-such-trace"], 1), ROLES, EstimateSource(kind="workload-only")
    )
    with pytest.raises(UsageError) as err:
        workload_traces(work)
    assert (err.value.code, err.value.location) == ("trace_unknown", "--trace")


# -- holdout pricing ---------------------------------------------------------------------

TERMS = ReservationTerms(byte_budget=1_000, rounds=10, output_limit=3_000)


def holdout_slots() -> list[PricedSlot]:
    eligible = [
        PricedSlot(
            role="a",
            trace=f"t{i}",
            probe="p1",
            initial_context_tokens=10_000,
            disposition="eligible",
        )
        for i in range(4)
    ]
    skipped = PricedSlot(
        role="b",
        trace="t9",
        probe="p1",
        initial_context_tokens=10_000,
        disposition="inventory_infeasible",
    )
    return [*eligible, skipped]


def test_holdout_pricing_and_the_cap_in_exact_cents() -> None:
    """By hand, at $0.1/M input, $0.01/M cached, $0.2/M output, a 272,000-token window:

    - reservation: 10 rounds x (272,000 x 0.1 + 3,000 x 0.2) = 278,000 micro-dollars a
      slot, 1.112 USD for four; C = ceil-to-cents(1.25 x 1.112) = 1.39 exactly;
    - expected: initial 10,000, 500 bytes over two lookups (250 + 250), so rounds of
      10,300, 10,850 and 11,400 tokens, half cached, 300 output tokens each:
      626.5 + 656.75 + 687 = 1,970.25 micro-dollars a slot; without a lookup one round of
      626.5, so the lookup overhead is 1,343.75 a slot.
    """
    result = price_holdout(holdout_slots(), CATALOG, "test:cap", TERMS)
    assert (result.status, result.code, result.reasons) == ("priced", None, [])
    assert result.reservation_usd == Decimal("1.112")
    assert result.cap_usd == Decimal("1.39")
    assert result.expected_usd == Decimal("0.007881")
    assert result.cap_over_expected == Decimal("176.3736")  # 1.39 / 0.007881
    a, b = result.roles
    assert (a.expected_usd, a.lookup_overhead_usd) == (Decimal("0.007881"), Decimal("0.005375"))
    assert (a.expected_per_trial_usd, a.reservation_per_trial_usd) == (
        Decimal("0.001970"),
        Decimal("0.278"),
    )
    # The inventory-infeasible slot is in no sum but keeps its planned denominator.
    assert (result.planned, result.eligible, result.inventory_infeasible) == (5, 4, 1)
    assert (b.planned, b.eligible, b.expected_per_trial_usd) == (1, 0, None)
    assert b.reservation_usd == Decimal(0)


def test_float_arithmetic_would_round_the_cap_up_a_cent() -> None:
    # The same 40 reserved calls summed in float land a hair above 1.112, and the cap
    # rounds that up to 1.40; the exact sum gives 1.39.
    total = 0.0
    for _ in range(40):
        total += call_cost(CATALOG, "test:cap", Usage(input=272_000, output=3_000)) or 0.0
    assert total != 1.112 and math.ceil(1.25 * total * 100) / 100 == 1.40
    assert price_holdout(holdout_slots(), CATALOG, "test:cap", TERMS).cap_usd == Decimal("1.39")


def test_tier_crossings_are_counted_per_call() -> None:
    tiered_catalog = replace(
        CATALOG,
        models={
            "test:tiers": replace(
                CATALOG.models["test:cap"],
                tiers=(Tier(10_500, input=0.2, output=0.4, cache_read=0.02),),
            )
        },
    )
    result = price_holdout(holdout_slots(), tiered_catalog, "test:tiers", TERMS)
    a = result.roles[0]
    # Rounds of 10,300 / 10,850 / 11,400: two strictly above 10,500 per slot; every
    # reserved call (272,000) is above it.
    assert (a.expected_tier_crossings, a.reservation_tier_crossings) == (8, 40)


def _without(model: str, **fields: object) -> Catalog:
    return replace(
        CATALOG, models={**CATALOG.models, model: replace(CATALOG.models[model], **fields)}
    )


def _tier_without(name: str) -> Catalog:
    rates = {"input": 0.2, "output": 0.4, "cache_read": 0.02}
    del rates[name]
    return _without("test:cap", tiers=(Tier(100_000, **rates),))


@pytest.mark.parametrize(
    ("catalog", "model", "terms", "slots", "reason"),
    [
        (None, "test:cap", TERMS, None, "no pricing catalog"),
        (CATALOG, None, TERMS, None, "no selected model"),
        (CATALOG, "acme:unknown", TERMS, None, "acme:unknown: no price in the catalog"),
        (_without("test:cap", input=None), "test:cap", TERMS, None, "no input"),
        (_without("test:cap", output=None), "test:cap", TERMS, None, "no output"),
        (_without("test:cap", cache_read=None), "test:cap", TERMS, None, "no cache_read"),
        (_tier_without("input"), "test:cap", TERMS, None, "no tier>100000.input"),
        (_tier_without("cache_read"), "test:cap", TERMS, None, "no tier>100000.cache_read"),
        (_without("test:cap", context_window=None), "test:cap", TERMS, None, "no context_window"),
        (_without("test:cap", max_output=None), "test:cap", TERMS, None, "no max_output"),
        (CATALOG, "test:cap", replace(TERMS, output_limit=None), None, "no explicit per-call"),
        (CATALOG, "test:cap", replace(TERMS, output_limit=5_000), None, "exceeds the catalog"),
        (CATALOG, "test:cap", TERMS, "unknown", "1 slots have unknown feasibility"),
        (CATALOG, "test:cap", TERMS, "none eligible", "no eligible slot"),
    ],
)
def test_numerical_approval_is_blocked_by_each_missing_input(
    catalog: Catalog | None,
    model: str | None,
    terms: ReservationTerms,
    slots: str | None,
    reason: str,
) -> None:
    chosen = holdout_slots()
    if slots == "unknown":
        chosen.append(replace(chosen[0], trace="t8", disposition="unknown"))
    elif slots == "none eligible":
        chosen = [chosen[-1]]
    result = price_holdout(chosen, catalog, model, terms)
    assert (result.status, result.code) == ("blocked", BLOCKED_CODE)
    assert any(reason in r for r in result.reasons), result.reasons
    amounts = (
        result.expected_usd,
        result.reservation_usd,
        result.cap_usd,
        result.cap_over_expected,
    )
    assert amounts == (None, None, None, None)
    assert all(r.expected_usd is None and r.reservation_usd is None for r in result.roles)
    assert result.planned == len(chosen)  # the denominators are kept even when blocked
