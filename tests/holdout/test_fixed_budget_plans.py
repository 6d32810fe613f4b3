"""A holdout's fixed-budget sizing as a lookup plan's sizing (``--policy budget.json``):
the plan binds it only for the source, selection and reader it was measured on, and the
run dispositions every slot by the sizing's class for the run's role (an invented
source, sized for two roles through real probe children)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.errors import UsageError
from continuity.holdout import HoldoutSource
from continuity.lookup.fixed_budget import load_fixed_budget
from continuity.lookup.sizing import load_sizing
from continuity.plan.from_request import plan_from_request
from continuity.plan.lookup_slots import EstimateRole
from continuity.plan.plan import LookupPlan
from continuity.plan.request import PlanRequest
from continuity.roles.table import ROLES
from continuity.runner.fixed_budget.sizing import FixedBudgetRequest, run_fixed_budget
from continuity.store import Store
from tests.conftest import REPO
from tests.holdout.toy import doit_args
from tests.runner.fixed_budget_source import frozen
from tests.runner.test_fixed_budget import FROZEN_SHA

ROLES_SIZED = [
    EstimateRole(name=r.name, arm=r.arm, code=r.code, soul_file=r.soul_file)
    for r in ROLES
    if r.name in ("native", "pack")
]


@pytest.fixture(scope="module")
def sized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, HoldoutSource, Path, str]:
    root = tmp_path_factory.mktemp("fixed-plans")
    store = Store(root / "store")
    source = frozen(store, root)
    result = run_fixed_budget(
        store,
        FixedBudgetRequest(
            output=root / "sizing",
            source=source,
            seed=17,
            per_group=1,
            fixed_budget_sha256=FROZEN_SHA,
        ),
        ROLES_SIZED,
        scratch_parent=root / "scratch",
    )
    return store, source, result.path, result.sha256


def _options(sized: tuple[Store, HoldoutSource, Path, str], **extra: object) -> dict[str, object]:
    store, source, path, sha = sized
    return {
        "suite": "holdout",
        "manifest": str(source.manifest),
        "manifest_sha256": source.manifest_sha256,
        "statistical_spec": str(source.spec),
        "selection_seed": 17,
        "per_group": 1,
        "probe_mode": "lookup-allowed-v1",
        "policy": str(path),
        "policy_sha256": sha,
        "store": str(store.root),
        **extra,
    }


def test_a_holdout_lookup_plan_binds_its_fixed_budget_sizing(
    sized: tuple[Store, HoldoutSource, Path, str],
) -> None:
    plan = plan_from_request(PlanRequest.of(_options(sized)))
    assert isinstance(plan, LookupPlan)
    assert plan.policy_sha256 == hashlib.sha256(sized[2].read_bytes()).hexdigest()
    assert (plan.call_budget, plan.byte_budget) == (8, 126_976)
    sizing = load_sizing(sized[2], sized[3])
    assert sizing.fixed is not None and sizing.role_for("native-lookup") == "native"
    assert sizing.role_for("continuity-pack-cold") == "pack"


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ({"selection_seed": 18}, "lookup_policy_holdout_mismatch"),
        ({"per_group": 2}, "lookup_policy_holdout_mismatch"),
        ({"lookup_reader": "alternate"}, "lookup_policy_reader_mismatch"),
        ({"policy_sha256": "0" * 64}, "lookup_policy_sha256_mismatch"),
    ],
)
def test_a_sizing_of_another_selection_or_reader_is_refused(
    sized: tuple[Store, HoldoutSource, Path, str], extra: dict[str, object], code: str
) -> None:
    with pytest.raises(UsageError) as caught:
        plan_from_request(PlanRequest.of(_options(sized, **extra)))
    assert caught.value.code == code


def test_a_fixed_budget_sizing_needs_a_holdout_plan(
    sized: tuple[Store, HoldoutSource, Path, str],
) -> None:
    options = {
        "probe_mode": "lookup-allowed-v1",
        "policy": str(sized[2]),
        "policy_sha256": sized[3],
    }
    with pytest.raises(UsageError) as caught:
        plan_from_request(PlanRequest.of(options))
    assert caught.value.code == "lookup_policy_holdout_mismatch"


def test_the_run_dispositions_every_slot_by_the_sizing(
    sized: tuple[Store, HoldoutSource, Path, str], tmp_path: Path
) -> None:
    store, source, path, sha = sized
    budget = load_fixed_budget(path, sha)
    classes = {(s.role, s.trace_id, s.probe_id): s.classification for s in budget.slots}
    done = subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), "units", "--suite",
         "holdout", *doit_args(source), "--selection-seed", "17", "--per-group", "1",
         "--probe-mode", "lookup-allowed-v1", "--policy", str(path), "--policy-sha256", sha,
         "--probe-limit", "4", "--store", str(store.root), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    slots = json.loads((tmp_path / "out/runs/lookup/lookup-slots.json").read_text())["slots"]
    assert slots, done.stdout + done.stderr
    for slot in slots:
        role = "native" if slot["arm"] == "native-lookup" else "pack"
        assert slot["disposition"] == classes[(role, slot["trace_id"], slot["probe_id"])]
    skipped = [s for s in slots if s["disposition"] != "feasible"]
    if skipped:  # an inventory-infeasible slot never makes a unit complete
        assert done.returncode != 0 and "lookup_partial_coverage" in done.stdout + done.stderr
    else:
        assert done.returncode == 0, done.stdout + done.stderr
