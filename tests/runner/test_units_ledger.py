"""The ledger arm in offline runs: units fork the prepared checkpoint, the controls buy
no upkeep, an invalid preparation excludes its samples and keeps its upkeep, upkeep is
counted once per unit, and aggregating never executes anything."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from continuity.arms import LEDGER_ARM
from continuity.messages import Usage
from continuity.plan.pricing import load_catalog
from continuity.preparation.capture import capture_folder
from continuity.report.aggregate import aggregate_run
from continuity.report.upkeep import UpkeepRow, UpkeepStageRow, stage_charge, upkeep_spend
from continuity.runner.ledger_run import ledger_run
from continuity.runner.samples import build_arm_samples
from continuity.runner.units.build import UnitRecord, build_units
from continuity.runner.units.execution import Execution
from continuity.store import Store
from tests.conftest import REPO

TRACE = "brightline-return"
MODEL = "openai-codex:gpt-6-mini"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path, list[UnitRecord]]:
    root = tmp_path_factory.mktemp("ledger-units")
    store = Store(root / "store")
    folder = root / "out" / "runs" / "mixed"
    records, _, _ = build_units(
        store,
        "original",
        arms=f"native,cold-rebuild,continuity-pack-cold,{LEDGER_ARM}",
        traces=TRACE,
        run_dir=folder,
    )
    return store, folder, records


def test_only_the_ledger_arm_buys_upkeep(run: tuple[Store, Path, list[UnitRecord]]) -> None:
    _, _, records = run
    by_arm = {r.arm: r for r in records}
    for control in ("native", "cold-rebuild", "continuity-pack-cold"):
        assert by_arm[control].upkeep is msgspec.UNSET
        for probe in by_arm[control].probes:
            assert probe.evidence is not None and probe.evidence.ledger is msgspec.UNSET
    ledger = by_arm[LEDGER_ARM]
    assert ledger.upkeep is not msgspec.UNSET and ledger.upkeep.valid
    assert all(p.status == "valid" for p in ledger.probes)
    committed = ledger.upkeep.final
    for probe in ledger.probes:
        assert probe.evidence is not None
        injected = probe.evidence.ledger
        assert injected is not msgspec.UNSET and committed is not None
        assert injected.generation_id == committed.id
        assert probe.evidence.ledgers_per_request == probe.evidence.packs_per_request


def _entries(store: Store) -> set[tuple[str, str]]:
    found = set()
    for path in store.actions_dir.rglob("*.json"):
        entry = store.get_action(path.stem, verify_output=False)
        if entry is not None:
            found.add((path.stem, entry.kind))
    return found


def test_upkeep_is_counted_once_per_unit_and_aggregating_runs_nothing(
    run: tuple[Store, Path, list[UnitRecord]],
) -> None:
    store, folder, records = run
    before = _entries(store)
    results, _, _ = aggregate_run(store, folder)
    aggregate_run(store, folder)
    added = {kind for _, kind in _entries(store) - before}
    # Aggregating builds no unit, checkpoint, preparation or model call: it never executes.
    assert not added & {"unit", "checkpoint", "ledger-checkpoint", "model-call"}
    assert results.upkeep is not msgspec.UNSET
    upkeep = results.upkeep[LEDGER_ARM]
    [unit] = [r for r in records if r.arm == LEDGER_ARM]
    assert unit.upkeep is not msgspec.UNSET
    known = sum((s.upkeep.usage for s in unit.upkeep.stages if s.upkeep.usage is not None), Usage())
    assert (upkeep.units, upkeep.stages, upkeep.known_calls) == (1, 3, 3)
    assert upkeep.known_input == known.input  # once, though the unit has 13 probes
    assert results.spend[LEDGER_ARM].upkeep_input == known.input
    assert upkeep.estimated_cost_usd is None and not upkeep.priced  # offline: not billed
    assert "upkeep_input" not in msgspec.to_builtins(results.spend["cold-rebuild"])


def test_aggregate_only_executes_nothing(
    run: tuple[Store, Path, list[UnitRecord]],
) -> None:
    store, folder, _ = run
    before = _entries(store)
    out = folder.parent.parent
    command = [
        sys.executable,
        "-m",
        "doit",
        "-f",
        str(REPO / "dodo.py"),
        "units",
        "--aggregate-only",
        "--arms",
        f"native,cold-rebuild,continuity-pack-cold,{LEDGER_ARM}",
        "--run",
        "mixed",
        "--store",
        str(store.root),
        "--out",
        str(out),
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--aggregate-only ran nothing; 4 units aggregated" in done.stdout
    added = {kind for _, kind in _entries(store) - before}
    assert not added & {"unit", "checkpoint", "ledger-checkpoint", "model-call"}
    assert (folder / "report.html").is_file()
    empty = subprocess.run(
        [*command[:-6], "--run", "nothing-here", *command[-4:]],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert empty.returncode != 0 and "run_unknown" in empty.stdout + empty.stderr


def test_the_plans_reader_and_alternate_are_what_the_preparation_answers(
    tmp_path: Path,
) -> None:
    from continuity.plan.from_request import plan_from_request
    from continuity.plan.request import PlanRequest
    from continuity.runner.ledger_run import ledger_run_for

    reader = "openai-codex:gpt-6-nova"
    plan = plan_from_request(PlanRequest.of({"arms": LEDGER_ARM, "reader": reader}))
    ledger = ledger_run_for(plan, capture=None, checkout=REPO)
    assert ledger is not None and plan.ledger is not None
    assert ledger.binding.sequence == plan.ledger.sequence  # what the digest binds runs
    store = Store(tmp_path / "store")
    records, _, _ = build_units(
        store,
        "original",
        arms=LEDGER_ARM,
        traces=TRACE,
        probe_limit=1,
        run_dir=tmp_path / "out" / "runs" / "r",
        execution=Execution(ledger=ledger),
    )
    [unit] = records
    assert unit.upkeep is not msgspec.UNSET and unit.upkeep.valid
    assert [s.to_model for s in unit.upkeep.stages] == list(plan.ledger.sequence)
    assert unit.upkeep.stages[0].from_model == reader  # the history replayed on R
    [probe] = unit.probes
    assert probe.status == "valid" and probe.evidence is not None
    assert probe.evidence.reader_model == reader
    assert probe.evidence.reseed is not None and probe.evidence.reseed.to_model == reader


def test_captures_are_written_for_every_stage_and_hold_no_prompt(tmp_path: Path) -> None:
    from continuity.memory.ledger_prompt import EXTRACTION_SYSTEM

    store = Store(tmp_path / "store")
    captures = tmp_path / "captures"
    ledger = msgspec.structs.replace(
        ledger_run(), capture=str(capture_folder(str(captures), checkout=REPO))
    )
    build_units(
        store,
        "original",
        arms=LEDGER_ARM,
        traces=TRACE,
        probe_limit=1,
        run_dir=tmp_path / "out" / "runs" / "r",
        execution=Execution(ledger=ledger),
    )
    files = sorted((captures / "upkeep-output").iterdir())
    assert [f.name for f in files] == [f"r1-{TRACE}-p{n}.json" for n in (1, 2, 3)]
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        text = path.read_text()
        assert EXTRACTION_SYSTEM[:40] not in text and "=== record c" not in text
        assert "Records offered in this pass" not in text and "api_key" not in text
    second = json.loads(files[1].read_text())
    assert second["outcome"] == "analysis_only" and second["validation"] is None


def test_an_invalid_preparation_excludes_every_sample_and_keeps_its_upkeep(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "store")
    records, _, _ = build_units(
        store,
        "original",
        arms=LEDGER_ARM,
        traces=TRACE,
        probe_limit=2,
        run_dir=tmp_path / "out" / "runs" / "r",
        execution=Execution(
            ledger=msgspec.structs.replace(ledger_run(faults={1: "hang"}), timeout=4.0)
        ),
    )
    [unit] = records
    assert [p.status for p in unit.probes] == ["treatment_invalid", "treatment_invalid"]
    assert unit.probes[0].reasons[0].startswith("preparation: p1:")
    assert unit.upkeep is not msgspec.UNSET and not unit.upkeep.valid
    results, _, _ = aggregate_run(store, tmp_path / "out" / "runs" / "r")
    assert results.excluded["original"][LEDGER_ARM]["treatment_invalid"] == 2
    assert results.upkeep is not msgspec.UNSET
    assert results.upkeep[LEDGER_ARM].conservative_calls == 1


def test_doit_checkpoints_arms_runs_the_ledger_arm(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    records, path, built = build_arm_samples(
        store, "original", arms=LEDGER_ARM, traces=TRACE, out_dir=tmp_path / "out"
    )
    [sample] = records
    assert sample.classification.status == "valid", sample.classification.reasons
    assert sample.upkeep is not msgspec.UNSET and sample.upkeep.valid
    assert path.is_file() and built == 1


def _stage(**change: object) -> UpkeepStageRow:
    fields: dict[str, object] = {
        "tag": "p1",
        "outcome": "published",
        "outcome_class": "ok",
        "dispatched": True,
        "released": False,
        "input_reservation": 128_000,
        "output_reservation": 4_096,
        "usage": Usage(input=50_000, cache_read=10_000, output=900),
        "input_overrun": False,
        "output_overrun": False,
    }
    return UpkeepStageRow(**{**fields, **change})  # type: ignore[arg-type]


def test_a_known_call_is_charged_its_reported_usage() -> None:
    charge = stage_charge(load_catalog(), MODEL, _stage(), priced=True)
    assert charge.kind == "known" and charge.usage.total_input == 60_000
    assert charge.cost_usd == pytest.approx((50_000 * 0.25 + 10_000 * 0.025 + 900 * 2.0) / 1e6)
    assert charge.observed_input == 60_000


def test_an_unknown_call_is_charged_its_whole_reservation_never_its_partial_usage() -> None:
    bootstrap = stage_charge(load_catalog(), MODEL, _stage(usage=None), priced=True)
    assert (bootstrap.kind, bootstrap.usage) == ("conservative", Usage(input=128_000, output=4_096))
    assert bootstrap.cost_usd == pytest.approx((128_000 * 0.25 + 4_096 * 2.0) / 1e6)
    incremental = stage_charge(
        load_catalog(), MODEL, _stage(usage=None, input_reservation=64_000), priced=True
    )
    assert incremental.usage.input == incremental.observed_input == 64_000


def test_a_zero_dispatch_stage_counts_zero_and_an_unpriced_one_stays_unknown() -> None:
    none = stage_charge(load_catalog(), MODEL, _stage(dispatched=False, usage=None), priced=True)
    assert (none.kind, none.usage, none.cost_usd) == ("none", Usage(), 0.0)
    unpriced = stage_charge(
        load_catalog(), "nowhere:unknown-model", _stage(usage=None), priced=True
    )
    assert unpriced.kind == "conservative" and unpriced.cost_usd is None


def test_known_and_conservative_charges_stay_apart() -> None:
    row = UpkeepRow(
        extractor=MODEL,
        priced=True,
        valid=False,
        stages=[
            _stage(),
            _stage(
                tag="p2",
                outcome="uncertain",
                outcome_class="uncertain",
                usage=None,
                input_reservation=64_000,
            ),
            _stage(
                tag="p3",
                dispatched=False,
                usage=None,
                outcome="no_source",
                outcome_class="capacity",
            ),
        ],
        integrity=["p2:upkeep_uncertain"],
        degradations=["p3:no_source"],
        spans=100,
        offered=40,
        gap=0,
    )
    spend = upkeep_spend(load_catalog(), [(LEDGER_ARM, row), ("native", None)])
    assert set(spend) == {LEDGER_ARM}
    cell = spend[LEDGER_ARM]
    assert (cell.known_calls, cell.conservative_calls, cell.zero_dispatch) == (1, 1, 1)
    assert cell.estimated_cost_usd == pytest.approx(
        (50_000 * 0.25 + 10_000 * 0.025 + 900 * 2.0) / 1e6
    )
    assert cell.conservative_cost_usd == pytest.approx((64_000 * 0.25 + 4_096 * 2.0) / 1e6)
    assert cell.observed_input_tokens == 60_000 + 64_000
    assert cell.integrity == {"upkeep_uncertain": 1} and cell.degradations == {"no_source": 1}


def test_overruns_are_counted_apart() -> None:
    row = UpkeepRow(
        extractor=MODEL,
        priced=False,
        valid=True,
        stages=[
            _stage(input_overrun=True, outcome="input_overrun", outcome_class="provider"),
            _stage(
                tag="p2", output_overrun=True, outcome="output_overrun", outcome_class="provider"
            ),
            _stage(tag="p3", outcome="output_aborted", outcome_class="provider", usage=None),
        ],
        integrity=[],
        degradations=[],
        spans=0,
        offered=0,
        gap=0,
    )
    cell = upkeep_spend(load_catalog(), [(LEDGER_ARM, row)])[LEDGER_ARM]
    assert (cell.d6_input_overruns, cell.d6_output_overruns) == (1, 2)
    assert cell.estimated_cost_usd is None and cell.conservative_cost_usd is None  # offline
