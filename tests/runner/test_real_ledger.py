"""The ledger arm in real mode, against the loopback wire server: real extraction calls
whose usage goes into the accounting, a lost acknowledgement that keeps its whole
reservation, the strict request-cap policy, and plans refused before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.arms import LEDGER_ARM
from continuity.errors import LedgerError, RunIncomplete
from continuity.plan.estimate import dry_run, record_dry_run
from continuity.plan.ledger_plan import Reservation
from continuity.plan.pricing import load_catalog
from continuity.plan.workload import workload
from continuity.providers.cache import Ledger
from continuity.report.aggregate import aggregate_run
from continuity.servers.wire import Faults, WireServer, serve_in_thread
from continuity.store import Store
from tests.runner.test_real import Rig

ARMS = f"cold-rebuild,{LEDGER_ARM}"


def _rig(tmp_path: Path, checkout: Path, url: str, **options: Any) -> Rig:
    chosen = {"arms": ARMS, "probe_limit": 1, "judge": "", **options}
    return Rig(tmp_path, checkout, url, "openai-chat", **chosen)


def _extractions(app: WireServer) -> list[dict[str, Any]]:
    return [
        body
        for _, body in app.calls
        if "Records offered in this pass" in str(body.get("messages", ""))
    ]


def test_real_extractions_are_accounted_once_per_unit(tmp_path: Path, clean_checkout: Path) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, clean_checkout, url)
        result = rig.run()
    assert len(_extractions(app)) == 3  # three per trace and repeat, none per probe
    [ledger] = [r for r in result.records if r.arm == LEDGER_ARM]
    [control] = [r for r in result.records if r.arm == "cold-rebuild"]
    assert control.upkeep is msgspec.UNSET  # the control buys no upkeep
    receipt = ledger.upkeep
    assert receipt is not msgspec.UNSET and receipt.valid, receipt
    assert [s.upkeep.outcome for s in receipt.stages] == ["published", "published", "published"]
    for stage in receipt.stages:
        [call] = stage.upkeep.calls
        assert call.role == "upkeep" and call.usage == stage.upkeep.usage
        assert stage.upkeep.enforcement == "advisory_cap"  # a compatible server at loopback
    assert all(p.status == "valid" for p in ledger.probes)
    results, _, _ = aggregate_run(rig.store, rig.output)
    upkeep = results.upkeep[LEDGER_ARM]  # type: ignore[index]
    assert (upkeep.known_calls, upkeep.conservative_calls, upkeep.priced) == (3, 0, True)
    assert upkeep.estimated_cost_usd is not None and upkeep.estimated_cost_usd > 0
    assert upkeep.known_input == sum(s.upkeep.usage.input for s in receipt.stages if s.upkeep.usage)
    spend = results.spend[LEDGER_ARM]
    assert spend.upkeep_input == upkeep.known_input  # the arm's totals include it, once
    assert spend.model_calls == 3 + sum(len(p.evidence.calls) for p in ledger.probes if p.evidence)
    again = rig.run()  # a rerun reuses the unit and its preparation: nothing is paid twice
    assert again.built == 0 and len(_extractions(app)) == 3


def test_a_lost_acknowledgement_keeps_its_reservation_and_invalidates_the_unit(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer(faults=Faults(hang_from=1))  # the first call (the bootstrap) hangs
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, clean_checkout, url, arms=LEDGER_ARM)
        result = rig.run(upkeep_timeout=1.0)  # the hung call times out
    [unit] = result.records
    receipt = unit.upkeep
    assert receipt is not msgspec.UNSET and not receipt.valid
    assert "p1:upkeep_uncertain" in receipt.integrity
    assert [p.status for p in unit.probes] == ["treatment_invalid"]
    stage = receipt.stages[0].upkeep
    assert (stage.state, stage.input_reservation, stage.usage) == ("dispatched", 128_000, None)
    ledger = Ledger(next((rig.output / ".ledger").glob("*.sqlite3")))
    try:
        assert ledger.state()["observed_input"] >= 128_000  # charged to admission
    finally:
        ledger.close()
    results, _, _ = aggregate_run(rig.store, rig.output)
    upkeep = results.upkeep[LEDGER_ARM]  # type: ignore[index]
    assert (upkeep.conservative_calls, upkeep.conservative_input_tokens) == (1, 128_000)
    assert upkeep.conservative_output_tokens == 4_096 and upkeep.known_calls == 0
    price = load_catalog().models["openai-codex:gpt-6-mini"]
    assert price.input is not None and price.output is not None
    expected = (128_000 * price.input + 4_096 * price.output) / 1_000_000
    assert upkeep.conservative_cost_usd == pytest.approx(expected, rel=1e-6)
    assert upkeep.estimated_cost_usd == 0.0  # the reservation is never added to known cost
    assert upkeep.integrity["upkeep_uncertain"] == 1


def test_an_interrupted_extraction_is_a_degradation_charged_conservatively(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """The second extraction stops mid-stream (so does every later call: the third
    extraction and the probe's answer, which leaves the unit unfinished). The rerun
    finishes the probe and reuses the degraded preparation: no extraction is dispatched
    again."""
    app = WireServer(faults=Faults(truncate_from=2))
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, clean_checkout, url, arms=LEDGER_ARM)
        with pytest.raises(RunIncomplete):
            rig.run()
        app.faults = Faults()
        result = rig.run()
    assert len(_extractions(app)) == 3
    receipt = result.records[0].upkeep
    assert receipt is not msgspec.UNSET and receipt.valid
    assert receipt.degradations == ["p2:aborted", "p3:aborted"]
    results, _, _ = aggregate_run(rig.store, rig.output)
    upkeep = results.upkeep[LEDGER_ARM]  # type: ignore[index]
    assert (upkeep.known_calls, upkeep.conservative_calls) == (1, 2)
    assert upkeep.conservative_input_tokens == 2 * 64_000  # incremental reservations


def test_an_extraction_whose_usage_is_partly_reported_is_charged_its_whole_reservation(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """The server reports the input count but no output count: the call's usage is
    unknown, so it is charged its whole reservation, with nothing partial on top, and
    admission observes the reservation (the larger), not the partial count plus it."""
    app = WireServer(faults=Faults(partial_usage_from=1))
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, clean_checkout, url, arms=LEDGER_ARM)
        result = rig.run()
    receipt = result.records[0].upkeep
    assert receipt is not msgspec.UNSET and receipt.valid
    assert [s.upkeep.usage for s in receipt.stages] == [None, None, None]
    assert receipt.stages[0].upkeep.outcome == "published"  # the output itself is fine
    results, _, _ = aggregate_run(rig.store, rig.output)
    upkeep = results.upkeep[LEDGER_ARM]  # type: ignore[index]
    assert (upkeep.known_calls, upkeep.conservative_calls) == (0, 3)
    assert upkeep.conservative_input_tokens == 128_000 + 2 * 64_000
    assert upkeep.estimated_cost_usd == 0.0  # nothing partial added to the known cost
    ledger = Ledger(next((rig.output / ".ledger").glob("*.sqlite3")))
    try:
        observed = ledger.state()["observed_input"]
    finally:
        ledger.close()
    probes = sum(
        c.usage.total_input
        for p in result.records[0].probes
        if p.evidence
        for c in p.evidence.calls
    )
    assert observed == 128_000 + 2 * 64_000 + probes  # the larger per call, never both


def test_the_strict_request_cap_skips_an_advisory_adapter_before_dispatch(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, clean_checkout, url, arms=LEDGER_ARM, require_request_cap=True)
        result = rig.run()
    assert _extractions(app) == []  # nothing dispatched
    receipt = result.records[0].upkeep
    assert receipt is not msgspec.UNSET
    assert receipt.integrity == ["p1:config_skip:request_cap_unsupported"]


def test_an_under_reserved_plan_is_refused_before_anything_runs(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, clean_checkout, url, arms=LEDGER_ARM)
        assert rig.plan.ledger is not None
        small = (Reservation("bootstrap", 32_000, 4_096), *rig.plan.ledger.reservations[1:])
        rig.plan = msgspec.structs.replace(
            rig.plan, ledger=msgspec.structs.replace(rig.plan.ledger, reservations=small)
        )
        confirmed = dry_run(rig.plan, workload(rig.plan), load_catalog())
        record_dry_run(rig.store, confirmed, tmp_path / "plans")
        rig.digest = confirmed.digest
        with pytest.raises(LedgerError) as refused:
            rig.run()
    assert refused.value.code == "ledger_plan_under_reserved"
    assert app.calls == []
    assert not (rig.output / "units").exists()
    assert not any(e.kind == "checkpoint" for e in _actions(rig.store))


def _actions(store: Store) -> list[Any]:
    entries = []
    for path in store.actions_dir.rglob("*.json"):
        if path.is_file():
            entry = store.get_action(path.stem, verify_output=False)
            if entry is not None:
                entries.append(entry)
    return entries
