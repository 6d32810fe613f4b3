"""``--suite holdout``: plans bind the frozen source and its selection, units run the
selected traces (recall-only and lookup mode) through real doit processes, and
``doit compare_preflight`` prepares every role x selected trace; every refusal has its
code and nothing falls back to a built-in suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.holdout import HoldoutSource, freeze_source
from continuity.plan.from_request import holdout_for_request, plan_from_request
from continuity.plan.holdout_plan import holdout_choice
from continuity.plan.plan import build_plan, plan_digest
from continuity.plan.request import HoldoutRequest, PlanRequest
from continuity.store import Store
from tests.holdout.test_freeze import PLAIN, overlap_report
from tests.holdout.toy import doit_args, write_source

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def frozen(tmp_path: Path) -> tuple[Store, HoldoutSource]:
    store = Store(tmp_path / "store")
    source = write_source(tmp_path / "src")
    freeze_source(store, source, overlap_report(source, tmp_path / "ovl"), references=PLAIN)
    return store, source


def _options(store: Store, source: HoldoutSource, **extra: object) -> dict[str, object]:
    return {
        "suite": "holdout",
        "manifest": str(source.manifest),
        "manifest_sha256": source.manifest_sha256,
        "statistical_spec": str(source.spec),
        "selection_seed": 17,
        "per_group": 0,  # the spec's
        "store": str(store.root),
        **extra,
    }


def _doit(store: Store, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), *args,
         "--store", str(store.root)],
        capture_output=True, text=True, cwd=REPO, check=False,
        env={"PATH": "/usr/bin:/bin", "CONTINUITY_OUT": str(tmp_path / "out"),
             "HOME": str(tmp_path)},
    )  # fmt: skip


def test_a_holdout_plan_binds_the_source_and_its_selection(
    frozen: tuple[Store, HoldoutSource],
) -> None:
    store, source = frozen
    plan = plan_from_request(PlanRequest.of(_options(store, source)))
    assert plan.suite == "holdout" and plan.holdout is not None
    binding = plan.holdout
    assert binding.algorithm == "seeded-sha256-rank-v1" and binding.seed == 17
    assert binding.per_group == 2
    assert binding.selected == ("toy-north-1", "toy-north-2", "toy-south-2", "toy-south-3")
    assert binding.manifest_sha256 == source.manifest_sha256
    # another seed, another selection, another digest; a built-in plan keeps its digest
    other = plan_from_request(PlanRequest.of(_options(store, source, selection_seed=2026)))
    assert plan_digest(other) != plan_digest(plan)
    assert plan_digest(build_plan("original")) == plan_digest(
        plan_from_request(PlanRequest.of({"suite": "original"}))
    )


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ({"suite": "hard"}, "holdout_suite_required"),
        ({"manifest": ""}, "holdout_source_incomplete"),
        ({"selection_seed": -1}, "holdout_selection_seed_required"),
        ({"per_group": 4}, "holdout_per_group_invalid"),
        ({"trace": "toy-north-1"}, "holdout_trace_selection_refused"),
        ({"probe_mode": "lookup-allowed-v1", "repeats": 2}, "holdout_repeats_invalid"),
        ({"seeds": "101"}, "plan_invalid"),
    ],
)
def test_holdout_plans_refuse_with_codes(
    frozen: tuple[Store, HoldoutSource], extra: dict[str, object], code: str
) -> None:
    from continuity.errors import UsageError

    store, source = frozen
    options = _options(store, source, **extra)
    request = PlanRequest.of(options)  # --trace is a run's option: the holdout is told it
    with pytest.raises(UsageError) as caught:
        plan_from_request(
            request, holdout_for_request(request, trace=str(options.get("trace", "")))
        )
    assert caught.value.code == code


@pytest.mark.parametrize("mode", ["aggregate_only", "real", "agent"])
def test_every_units_mode_refuses_a_trace_on_a_holdout(
    frozen: tuple[Store, HoldoutSource], tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Aggregate-only, real and outside-agent runs refuse ``--trace`` on a holdout as an
    offline run does, while their plan is built (before any credential or agent)."""
    from continuity.commands.units import run_units
    from continuity.commands.units_request import UnitsRequest
    from continuity.errors import UsageError

    monkeypatch.delenv("CI", raising=False)  # real mode's CI refusal comes first otherwise
    store, source = frozen
    modes: dict[str, dict[str, object]] = {
        "aggregate_only": {"aggregate_only": True},
        "real": {"real": True, "provider": "openai-chat", "base_url": "http://127.0.0.1:9/v1"},
        "agent": {"agent": str(REPO / "examples" / "agents" / "toy" / "agent.toml")},
    }
    out = str(tmp_path / "out")
    options = _options(store, source, trace="toy-north-1", out=out, **modes[mode])
    with pytest.raises(UsageError) as caught:
        run_units(UnitsRequest.of(options))
    assert (caught.value.code, caught.value.location) == (
        "holdout_trace_selection_refused",
        "--trace",
    )


def test_no_holdout_option_and_no_fallback(frozen: tuple[Store, HoldoutSource]) -> None:
    store, _ = frozen
    assert holdout_choice(store, HoldoutRequest(suite="original")) is None
    from continuity.errors import UsageError

    with pytest.raises(UsageError) as caught:
        plan_from_request(PlanRequest.of({"suite": "holdout", "store": str(store.root)}))
    assert caught.value.code == "holdout_source_incomplete"


def test_units_run_the_selected_traces_in_both_modes(
    frozen: tuple[Store, HoldoutSource], tmp_path: Path
) -> None:
    store, source = frozen
    common = ["--suite", "holdout", *doit_args(source), "--selection-seed", "17"]
    recall = _doit(store, tmp_path, "units", *common, "--arms", "native,cold-rebuild")
    assert recall.returncode == 0, recall.stdout + recall.stderr
    assert "units: 8 units" in recall.stdout
    units = sorted(p.name for p in (tmp_path / "out/runs/offline/units").glob("*.json"))
    assert [u.split("-", 1)[1] for u in units if u.endswith("native.json")] == [
        "toy-north-1-native.json", "toy-north-2-native.json",
        "toy-south-2-native.json", "toy-south-3-native.json",
    ]  # fmt: skip
    record = json.loads((tmp_path / "out/runs/offline/units" / units[0]).read_text())
    assert record["family"] == "imported"
    assert {p["category"] for p in record["probes"]} == {"free_recall", "abstention"}
    # every free-recall answer keeps LoCoMo's token-F1; no other probe carries one
    for probe in record["probes"]:
        assert ("token_f1" in probe) == (probe["category"] == "free_recall"), probe
    # the report puts the token-F1 beside the free-recall accuracy, per suite and arm
    aggregated = _doit(store, tmp_path, "aggregate", "--run", "offline")
    assert aggregated.returncode == 0, aggregated.stdout + aggregated.stderr
    results = json.loads((tmp_path / "out/runs/offline/results.json").read_text())
    cells = results["free_recall"]["imported"]
    assert set(cells) == {"native", "cold-rebuild"}
    assert cells["native"]["n"] == 4 and cells["native"]["with_f1"] == 4
    assert cells["native"]["token_f1"] == 0.0  # the scripted reader answers UNKNOWN
    summary = (tmp_path / "out/runs/offline/summary.md").read_text()
    assert "## Free recall" in summary and "| imported | native | 4 | 0.0% | 0.000 | 4 |" in summary
    lookup = _doit(
        store, tmp_path, "units", *common, "--probe-mode", "lookup-allowed-v1", "--run", "lk"
    )
    assert lookup.returncode == 0, lookup.stdout + lookup.stderr
    assert "units: 8 units" in lookup.stdout  # two lookup arms x four traces
    refused = _doit(store, tmp_path, "units", *common, "--trace", "toy-north-3")
    assert refused.returncode != 0
    assert "holdout_trace_selection_refused" in refused.stdout + refused.stderr


def test_preflight_prepares_every_role_and_selected_trace(
    frozen: tuple[Store, HoldoutSource], tmp_path: Path
) -> None:
    store, source = frozen
    out = tmp_path / "preflight"
    done = _doit(
        store, tmp_path, "compare_preflight", *doit_args(source), "--selection-seed", "17",
        "--per-group", "1", "--output", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "preflight.json").read_text())
    slots = report["slots"]
    assert len(slots) == 12  # six roles x one family of each of the two groups
    assert {s["trace_id"] for s in slots} == {"toy-north-1", "toy-south-2"}
    assert all(s["eligible"] for s in slots)
    assert report["source"]["kind"] == "holdout"
    assert report["source"]["bindings"]["selected"] == "toy-north-1,toy-south-2"
    both = _doit(
        store, tmp_path, "compare_preflight", *doit_args(source), "--registration", "r.json",
        "--sha256", "0" * 64,
    )  # fmt: skip
    assert both.returncode != 0 and "plan_invalid" in both.stdout + both.stderr


def test_every_plan_command_takes_a_holdout(
    frozen: tuple[Store, HoldoutSource], tmp_path: Path
) -> None:
    store, source = frozen
    common = ["--suite", "holdout", *doit_args(source), "--selection-seed", "17"]
    plan = _doit(store, tmp_path, "plan", *common)
    assert plan.returncode == 0 and "seeded-sha256-rank-v1" in plan.stdout, plan.stdout
    dry = _doit(store, tmp_path, "dry_run", *common)
    assert dry.returncode == 0 and "--selection-seed 17" in dry.stdout, dry.stdout + dry.stderr
    assert "--manifest-sha256" in dry.stdout  # the next command binds the same plan
    estimate = _doit(store, tmp_path, "estimate", *common)
    assert estimate.returncode == 0, estimate.stdout + estimate.stderr
    traced = _doit(
        store, tmp_path, "estimate", *common, "--probe-mode", "lookup-allowed-v1",
        "--trace", "toy-north-1",
    )  # fmt: skip
    assert traced.returncode != 0
    assert "holdout_trace_selection_refused" in traced.stdout + traced.stderr


def test_preflights_output_is_new_and_writable(
    frozen: tuple[Store, HoldoutSource], tmp_path: Path
) -> None:
    store, source = frozen
    (tmp_path / "exists").mkdir()
    (tmp_path / "a-file").write_text("x")
    for output, code in (
        (tmp_path / "exists", "preflight_output_exists"),
        (tmp_path / "a-file" / "under", "preflight_output_invalid"),
    ):
        done = _doit(
            store, tmp_path, "compare_preflight", *doit_args(source), "--selection-seed", "17",
            "--per-group", "1", "--output", str(output),
        )  # fmt: skip
        assert done.returncode != 0 and code in done.stdout + done.stderr, done.stdout
