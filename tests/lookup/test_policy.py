"""Budget arithmetic, feasibility classes, the frozen policy and the soul."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from continuity.errors import ContinuityError, SoulError, UsageError
from continuity.lookup.policy import (
    BYTE_CAP,
    CALL_CAP,
    POLICIES,
    PathCost,
    admission_cap,
    budget_from_paths,
    classify_path,
    default_policy_path,
    load_policy,
    round_inputs,
)
from continuity.lookup.soul import check_soul, install_soul, normalise_core, read_soul
from continuity.plan.from_request import plan_from_request
from continuity.plan.plan import LookupPlan
from continuity.plan.request import PlanRequest
from continuity.probes.protocol import PROBE_PROTOCOL


def test_the_seeds_frozen_example() -> None:
    # A maximum reference path of 6 calls / 61,718 bytes and a largest response of
    # 32,608 bytes give 8 calls and 126,976 bytes (124 KiB).
    assert budget_from_paths(6, 61_718, 32_608) == (8, 126_976)


def test_budget_rounds_up_to_kib_and_caps() -> None:
    assert budget_from_paths(1, 1, 0) == (3, 1024)
    assert budget_from_paths(1, 1024, 0) == (3, 1024)
    assert budget_from_paths(1, 1025, 0) == (3, 2048)
    assert CALL_CAP == 96
    assert budget_from_paths(500, 1, 0)[0] == 96
    assert budget_from_paths(1, 10**9, 10**9)[1] == BYTE_CAP == 8 * 1024 * 1024


def path(**overrides: object) -> PathCost:
    fields: dict[str, object] = {
        "trace_id": "t",
        "arm": "continuity-pack-cold",
        "probe_id": "p01",
        "discovered": True,
        "verified": True,
        "calls": 3,
        "bytes": 20_000,
        "largest_response": 9_000,
        "responses": [2_000, 9_000, 9_000],
        "initial_tokens": 30_000,
        "cold_tokens": 20_000,
    }
    fields.update(overrides)
    return PathCost(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, "feasible"),
        ({"discovered": False}, "undiscovered"),
        ({"verified": False}, "unverified"),
        ({"calls": 9}, "budget_infeasible"),
        ({"bytes": 126_977}, "budget_infeasible"),
        # 272,000 - 16,000 margin: an initial 240,000 plus 20,000 response bytes and
        # 4 x 300 tokens crosses it.
        ({"initial_tokens": 240_000}, "context_bound"),
        # The native floor: at least 150,000 tokens on every round.
        ({"arm": "native-lookup", "initial_tokens": 1_000}, "feasible"),
        (
            {"arm": "native-lookup", "initial_tokens": 1_000, "responses": [110_000]},
            "context_bound",
        ),
        # The pack floor: the cold estimate plus 12,000.
        ({"cold_tokens": 230_000, "initial_tokens": 1_000}, "context_bound"),
    ],
)
def test_path_classes(overrides: dict[str, object], expected: str) -> None:
    assert classify_path(path(**overrides), 8, 126_976) == expected


def test_repeated_inputs_must_fit_the_per_invocation_admission_cap() -> None:
    # 31 rounds of about 200,000 tokens each: every round fits the window, but their sum
    # (about 6.2 M) crosses the originals' 6 M admission cap; a long suite's 400 M takes it.
    long_path = path(
        calls=30, bytes=3_000, responses=[100] * 30, initial_tokens=200_000, cold_tokens=0
    )
    assert sum(round_inputs(long_path, long_path.arm)) > 6_000_000
    assert classify_path(long_path, CALL_CAP, BYTE_CAP) == "admission_bound"
    hard = msgspec.structs.replace(long_path, suite="hard")
    assert classify_path(hard, CALL_CAP, BYTE_CAP) == "feasible"
    assert admission_cap("original") == 6_000_000
    assert admission_cap("hard-distractors") == 400_000_000
    # Each round's input: the initial input, every byte returned so far, 300 a round.
    assert round_inputs(path(), "continuity-pack-cold") == [32_300, 34_600, 43_900, 53_200]


def test_the_frozen_policy_is_the_seeds_budget_over_this_projects_inventory() -> None:
    policy = load_policy()
    assert (policy.calls, policy.bytes) == (8, 126_976)
    soul = read_soul()
    assert (policy.soul_sha256, policy.soul_core_sha256) == (soul.sha256, soul.core_sha256)
    # This project's inventory: 112 slot paths plus the two regression records.
    assert policy.paths == 114 and len(policy.slots) == 112
    assert {s.suite for s in policy.slots} == {"original", "hard", "hard-distractors"}
    classes = Counter((s.arm, s.classification) for s in policy.slots)
    assert classes == {
        ("continuity-pack-cold", "feasible"): 56,
        ("native-lookup", "feasible"): 8,
        ("native-lookup", "context_bound"): 48,
    }
    # What the formulas derive from it (the README explains the difference).
    assert budget_from_paths(
        policy.max_path_calls, policy.max_path_bytes, policy.largest_response
    ) == (9, 66_560)
    assert len(policy.inventory_sha256) == 64


# Every frozen policy, by sha256 of its bytes. A protocol or classifier change freezes a
# new file; an old one is never edited. v1 and v2 are schema continuity-lookup-budget-v1
# (no protocol or code binding): kept, and refused for new plans (lookup_policy_unbound).
# v3 is probe-protocol-v2's bound policy, v4 probe-protocol-v3's.
FROZEN_POLICIES = {
    "budget-v1.json": "58ca3014b58b54952e5d17aee3f484bd24a3fcffffaff66148943c809df08cc4",
    "budget-v2.json": "501866af275caab5f0bafc7e617c74a04c409faca1f3e117add3233156b221d5",
    "budget-v3.json": "119e7c274bc06754cae7d2e13d3566b70d64d37fe4f98fcdff6a6be54a127fa6",
    "budget-v4.json": "efbcc4799b5b575b33a7fa2241144050af190b9e8bd1b894fcb8c5a02e9c99c0",
}


def _slots(policy: dict[str, object]) -> list[tuple[object, ...]]:
    slots = policy["slots"]
    assert isinstance(slots, list)
    return [(s["trace_id"], s["arm"], s["probe_id"], s["classification"]) for s in slots]


def test_each_frozen_policy_is_pinned_and_new_plans_use_the_bound_one() -> None:
    folder = default_policy_path().parent
    for name, sha in FROZEN_POLICIES.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == sha, name
    assert POLICIES == {
        "probe-protocol-v2": "budget-v3.json",
        "probe-protocol-v3": "budget-v4.json",
    }
    assert default_policy_path().name == POLICIES[PROBE_PROTOCOL] == "budget-v4.json"
    v4 = load_policy()
    assert (v4.schema, v4.lookup_protocol, v4.probe_protocol) == (
        "continuity-lookup-budget-v2",
        "lookup-allowed-v1",
        PROBE_PROTOCOL,
    )
    # v3 re-measured v2's protocol: the same budget, soul, reader, slots and classes;
    # its inventory moved (the pack's first requests grew since v2 was frozen).
    v2 = json.loads((folder / "budget-v2.json").read_text())
    v3 = json.loads((folder / "budget-v3.json").read_text())
    same = ("calls", "bytes", "soul_sha256", "soul_core_sha256", "reader", "paths")
    assert all(v3[f] == v2[f] for f in same)
    assert _slots(v3) == _slots(v2)
    assert v3["inventory_sha256"] != v2["inventory_sha256"]
    assert v3["inventory_sha256"].startswith("206b366a")
    # v4 measured probe-protocol-v3: every first request grew by the answer-line
    # instruction's 123 extra bytes (41 tokens at 3 bytes a token), and nothing else moved.
    assert all(getattr(v4, f) == v3[f] for f in same)
    assert [(s.trace_id, s.arm, s.probe_id, s.classification) for s in v4.slots] == _slots(v3)
    assert v4.inventory_sha256.startswith("031ed4a1")
    for new, old in zip(v4.slots, v3["slots"], strict=True):
        assert new.initial_tokens - old["initial_tokens"] == 41, new.probe_id
        assert (new.calls, new.bytes, list(new.responses)) == (
            old["calls"],
            old["bytes"],
            old["responses"],
        )
    plan = plan_from_request(PlanRequest.of({"probe_mode": "lookup-allowed-v1"}))
    assert isinstance(plan, LookupPlan)
    assert plan.policy_sha256 == FROZEN_POLICIES["budget-v4.json"]


@pytest.mark.parametrize("name", ["budget-v1.json", "budget-v2.json"])
def test_an_unbound_policy_is_refused_for_a_new_plan(name: str) -> None:
    path = default_policy_path().parent / name
    with pytest.raises(UsageError) as caught:
        load_policy(path, FROZEN_POLICIES[name])
    assert (caught.value.code, caught.value.location) == ("lookup_policy_unbound", str(path))
    with pytest.raises(UsageError) as caught:
        plan_from_request(
            PlanRequest.of(
                {
                    "probe_mode": "lookup-allowed-v1",
                    "policy": str(path),
                    "policy_sha256": FROZEN_POLICIES[name],
                }
            )
        )
    assert caught.value.code == "lookup_policy_unbound"


def test_a_policy_by_path_needs_its_sha256(tmp_path: Path) -> None:
    copy = tmp_path / "policy.json"
    data = default_policy_path().read_bytes()
    copy.write_bytes(data)
    with pytest.raises(UsageError) as caught:
        load_policy(copy, None)
    assert caught.value.code == "lookup_policy_sha256_required"
    with pytest.raises(UsageError) as caught:
        load_policy(copy, "   ")
    assert caught.value.code == "lookup_policy_sha256_required"
    with pytest.raises(UsageError) as caught:
        load_policy(copy, "0" * 64)
    assert caught.value.code == "lookup_policy_sha256_mismatch"
    assert load_policy(copy, hashlib.sha256(data).hexdigest()).calls == 8


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(schema="other"),
        lambda d: d.update(calls=0),
        lambda d: d.update(unknown=1),
    ],
)
def test_bad_policies_are_refused(mutate: object, tmp_path: Path) -> None:
    document = json.loads(default_policy_path().read_text())
    mutate(document)  # type: ignore[operator]
    copy = tmp_path / "policy.json"
    copy.write_text(json.dumps(document))
    with pytest.raises(UsageError) as caught:
        load_policy(copy, hashlib.sha256(copy.read_bytes()).hexdigest())
    assert caught.value.code == "lookup_policy_invalid"


# -- the soul -----------------------------------------------------------------------


def test_soul_digests_tell_cosmetic_from_substantive_edits(tmp_path: Path) -> None:
    soul = read_soul()
    cosmetic = tmp_path / "cosmetic.md"
    cosmetic.write_text(read_soul().core.replace("\n", "  \r\n") + "\n<!-- note -->\n")
    edited = read_soul(cosmetic)
    assert edited.sha256 != soul.sha256 and edited.core_sha256 == soul.core_sha256
    substantive = tmp_path / "substantive.md"
    substantive.write_text(soul.core.replace("UNKNOWN", "a guess"))
    assert read_soul(substantive).core_sha256 != soul.core_sha256
    assert normalise_core("a  \n\n\n\nb") == "a\n\nb\n"


def test_install_copies_and_fails_closed(tmp_path: Path) -> None:
    soul = read_soul()
    installed = install_soul(tmp_path, soul.sha256, soul.core_sha256)
    assert (tmp_path / "continuity-soul-v1.md").read_bytes() == default_soul_bytes()
    assert installed.sha256 == soul.sha256
    with pytest.raises(SoulError) as caught:
        install_soul(tmp_path, "0" * 64, soul.core_sha256)
    assert caught.value.code == "lookup_soul_mismatch"
    with pytest.raises(SoulError) as caught:
        install_soul(tmp_path, soul.sha256, soul.core_sha256, source=tmp_path / "missing.md")
    assert caught.value.code == "lookup_soul_missing"
    with pytest.raises(SoulError) as caught:
        read_soul(tmp_path / "missing.md")
    assert caught.value.code == "lookup_soul_missing"
    with pytest.raises(ContinuityError) as caught_any:
        check_soul(soul, soul.sha256, "1" * 64, where="here")
    assert caught_any.value.code == "lookup_soul_mismatch" and "core" in caught_any.value.message


def default_soul_bytes() -> bytes:
    from continuity.lookup.soul import default_soul_path

    return default_soul_path().read_bytes()
