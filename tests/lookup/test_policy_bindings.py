"""A policy binds its protocols and classifier, and every read recomputes its classes.

Schema ``continuity-lookup-budget-v2``: a round trip through the file, the class and
derived metrics of every slot recomputed on load (an edited class is refused, an edited
metric gives its own class), and the protocol and classifier-code refusals.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.digest import code_digest
from continuity.errors import UsageError
from continuity.lookup.classify import admission_total, classify_path, context_tokens
from continuity.lookup.policy import (
    CLASSIFIER_MODULES,
    LOOKUP_PROTOCOL,
    POLICY_SCHEMA,
    PathCost,
    classifier_code,
    default_policy_path,
    load_policy,
)
from continuity.lookup.soul import read_soul
from continuity.plan.from_request import plan_from_request
from continuity.plan.request import PlanRequest
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.runner.inventory import Inventory, policy_for
from continuity.runner.lookup_budget import policy_bytes


def write(document: dict[str, Any], folder: Path, name: str = "policy.json") -> tuple[Path, str]:
    path = folder / name
    path.write_text(json.dumps(document, indent=2))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def refused(path: Path, sha: str) -> UsageError:
    with pytest.raises(UsageError) as caught:
        load_policy(path, sha)
    return caught.value


def frozen() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(default_policy_path().read_text())
    return document


class _Slot(msgspec.Struct, frozen=True, kw_only=True):
    arm: str
    suite: str
    discovered: bool
    verified: bool
    calls: int
    bytes: int
    responses: list[int]
    initial_tokens: int
    cold_tokens: int


def rederive(document: dict[str, Any], index: int, **metrics: Any) -> dict[str, Any]:
    """Edit slot `index`'s recorded metrics and rewrite its derived ones (peak request,
    admission total, largest response) and its class as a measurement would."""
    slot: dict[str, Any] = document["slots"][index]
    slot.update(metrics)
    view = msgspec.convert(slot, _Slot)
    slot["largest_response"] = max(view.responses, default=0)
    slot["peak_request_tokens"] = context_tokens(view, view.arm)
    slot["admission_tokens"] = admission_total(view, view.arm)
    slot["classification"] = classify_path(view, document["calls"], document["bytes"])
    return slot


def test_a_measured_policy_round_trips(tmp_path: Path) -> None:
    costs = [
        PathCost(
            trace_id="t",
            arm=arm,
            probe_id="p01",
            discovered=True,
            verified=True,
            calls=calls,
            bytes=size,
            largest_response=max(responses),
            responses=responses,
            initial_tokens=30_000,
            cold_tokens=cold,
            suite="hard",
        )
        for arm, calls, size, responses, cold in (
            ("continuity-pack-cold", 2, 5_000, [1_000, 4_000], 20_000),
            ("native-lookup", 3, 120_000, [1_000, 9_000, 110_000], 0),
            ("native-lookup", 9, 9_000, [1_000] * 9, 0),
        )
    ]
    inventory = Inventory(corpus=["hard:101-101"], reader="r", paths=costs)
    policy = policy_for(inventory, read_soul(), 8, 126_976, inventory_key="k" * 64)
    assert [s.classification for s in policy.slots] == [
        "feasible",
        "context_bound",  # 150,000 floor + 120,000 returned bytes cross 256,000
        "budget_infeasible",
    ]
    # Each slot keeps what its class came from.
    native = policy.slots[1]
    assert (native.peak_request_tokens, native.admission_tokens) == (
        150_000 + 120_000 + 1_200,
        sum(150_000 + r + 300 * n for n, r in enumerate((0, 1_000, 10_000, 120_000), 1)),
    )
    assert (policy.lookup_protocol, policy.probe_protocol, policy.classifier_code) == (
        LOOKUP_PROTOCOL,
        PROBE_PROTOCOL,
        classifier_code(),
    )
    path = tmp_path / "policy.json"
    path.write_bytes(policy_bytes(policy))
    assert load_policy(path, hashlib.sha256(path.read_bytes()).hexdigest()) == policy
    assert json.loads(path.read_text())["schema"] == POLICY_SCHEMA


def test_the_policy_binds_exactly_the_classifier_module() -> None:
    assert CLASSIFIER_MODULES == ("continuity.lookup.classify",)
    assert classifier_code() == code_digest(["continuity.lookup.classify"])
    assert load_policy().classifier_code == classifier_code()


def test_an_edited_class_is_refused(tmp_path: Path) -> None:
    document = frozen()
    assert document["slots"][0]["classification"] == "feasible"
    document["slots"][0]["classification"] = "budget_infeasible"
    error = refused(*write(document, tmp_path))
    assert error.code == "lookup_policy_class_mismatch"
    assert error.location.endswith("$.slots[0].classification")
    assert "its metrics give feasible" in error.message


def test_an_edited_metric_gives_its_own_class(tmp_path: Path) -> None:
    document = frozen()
    # One call over the budget: the stored class no longer follows from the metrics.
    document["slots"][0]["calls"] = document["calls"] + 1
    error = refused(*write(document, tmp_path, "calls.json"))
    assert error.code == "lookup_policy_class_mismatch"
    assert "its metrics give budget_infeasible" in error.message
    # With the class it gives, the policy reads, and the slot is inventory-infeasible.
    document["slots"][0]["classification"] = "budget_infeasible"
    slot = load_policy(*write(document, tmp_path, "calls-classed.json")).slots[0]
    assert (slot.calls, slot.classification) == (9, "budget_infeasible")
    # A pack slot whose first request grows past the window: context-bound once every
    # derived metric is recomputed from it; its stored class alone is refused.
    document = frozen()
    index = next(i for i, s in enumerate(document["slots"]) if s["arm"] == "continuity-pack-cold")
    rederive(document, index, initial_tokens=255_000)
    assert document["slots"][index]["classification"] == "context_bound"
    loaded = load_policy(*write(document, tmp_path, "context.json")).slots[index]
    assert loaded.classification == "context_bound"
    document["slots"][index]["classification"] = "feasible"
    error = refused(*write(document, tmp_path, "context-feasible.json"))
    assert error.code == "lookup_policy_class_mismatch"


@pytest.mark.parametrize("field", ["peak_request_tokens", "admission_tokens", "largest_response"])
def test_derived_metrics_are_recomputed(field: str, tmp_path: Path) -> None:
    document = frozen()
    document["slots"][3][field] -= 1
    error = refused(*write(document, tmp_path))
    assert error.code == "lookup_policy_metrics_mismatch"
    assert error.location.endswith(f"$.slots[3].{field}")


def test_a_negative_metric_is_invalid(tmp_path: Path) -> None:
    document = frozen()
    rederive(document, 0, responses=[-5_000, 1])
    assert refused(*write(document, tmp_path)).code == "lookup_policy_invalid"


@pytest.mark.parametrize(
    ("field", "value"),
    [("probe_protocol", "probe-protocol-v1"), ("lookup_protocol", "lookup-allowed-v2")],
)
def test_a_protocol_mismatch_is_refused(field: str, value: str, tmp_path: Path) -> None:
    document = frozen()
    document[field] = value
    path, sha = write(document, tmp_path)
    error = refused(path, sha)
    assert (error.code, error.location) == ("lookup_policy_protocol_mismatch", str(path))
    with pytest.raises(UsageError) as caught:
        plan_from_request(
            PlanRequest.of(
                {"probe_mode": "lookup-allowed-v1", "policy": str(path), "policy_sha256": sha}
            )
        )
    assert caught.value.code == "lookup_policy_protocol_mismatch"


def test_a_classifier_code_mismatch_is_refused(tmp_path: Path) -> None:
    document = frozen()
    document["classifier_code"] = "0" * 64
    path, sha = write(document, tmp_path)
    error = refused(path, sha)
    assert (error.code, error.location) == ("lookup_policy_code_mismatch", str(path))


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("classifier_code"),
        lambda d: d["slots"][0].pop("responses"),
        lambda d: d["slots"][0].update(classification="maybe"),
    ],
)
def test_an_incomplete_v2_policy_is_invalid(mutate: Any, tmp_path: Path) -> None:
    document = frozen()
    mutate(document)
    assert refused(*write(document, tmp_path)).code == "lookup_policy_invalid"
