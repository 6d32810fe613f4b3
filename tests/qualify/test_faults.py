"""The fault cases, run for real (a doit units process group SIGKILLed mid-unit; the MCP
fixture tool server killed mid-call), each packaged and graded; an unexercised attempt;
re-grading beside the old verdict; the report's three separate axes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import GateFailed
from continuity.qualify.cases import Case, Knobs, case_by_id
from continuity.qualify.package import regrade, report
from continuity.qualify.run import run_selection
from continuity.qualify.select import Selection


def _run(case: Case, out: Path) -> tuple[str, Path]:
    selection = Selection(plan=case.plan, cases=(case,), registered=1)
    ((_, verdict, package),) = run_selection(selection, out, say=lambda line: None)
    return verdict.status, package


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def test_kill_runner_is_proven_by_its_receipts_and_packaged(tmp_path: Path) -> None:
    case = case_by_id("continuity.reliability.kill-runner")
    assert case is not None
    status, package = _run(case, tmp_path)
    assert status == "pass", _json(package / "verdict-1.json")
    inputs = package / "inputs"
    before, after = _json(inputs / "fault-before.json"), _json(inputs / "fault-after.json")
    final = _json(inputs / "fault-final.json")
    assert before["target"] == after["killed"] != after["restarted"]
    assert after["loss"] == {"kind": "group_gone", "observed": "runner group"}
    assert after["hold_s"] >= case.knobs.interval_s and final["completed"] is True
    assert final["store_verified"] is True  # doit verify: nothing corrupt or half-written
    # every unit the first run finished came back byte for byte (counted, allowed)
    assert _json(package / "verdict-1.json")["redeliveries"] >= 4
    assert len(list(inputs.glob("affected-*.json"))) == 16  # cloned before grading
    provenance = _json(package / "provenance.json")
    assert len(str(provenance["qualification_code"])) == 64 and provenance["revision"]
    assert set(_json(package / "timings.json")) == {"until_fault", "hold", "recovery"}
    # content-free receipts: no path, no prompt, no answer
    text = "".join(p.read_text() for p in inputs.glob("fault-*.json"))
    assert str(tmp_path) not in text and "Brightline" not in text


def test_kill_tool_server_fails_typed_and_the_rerun_finishes(tmp_path: Path) -> None:
    case = case_by_id("continuity.reliability.kill-tool-server")
    assert case is not None
    status, package = _run(case, tmp_path)
    assert status == "pass", _json(package / "verdict-1.json")
    final = _json(package / "inputs" / "fault-final.json")
    assert final["completed"] is True and final["code"] == "tool_server_unavailable"
    assert _json(package / "inputs" / "fault-after.json")["loss"]["kind"] == "connection_refused"


def test_a_run_that_ends_before_the_fault_is_unexercised(tmp_path: Path) -> None:
    base = case_by_id("continuity.reliability.kill-runner")
    assert base is not None
    never = msgspec.structs.replace(base, knobs=Knobs(at_unit=99))  # past the last unit
    status, package = _run(never, tmp_path)
    assert status == "unexercised"  # neither a pass nor a failure
    assert _json(package / "verdict-1.json")["causes"] == ["fault_not_aimed"]
    assert not (package / "inputs" / "fault-before.json").exists()


def test_a_regrade_is_a_new_verdict_beside_the_old_and_reads_the_clone(tmp_path: Path) -> None:
    case = case_by_id("continuity.reliability.kill-tool-server")
    assert case is not None
    _, package = _run(case, tmp_path)
    first = (package / "verdict-1.json").read_bytes()
    shutil.rmtree(package / "work")  # a later cleanup cannot change what was graded
    verdict = regrade(package, expected_code="tool_server_unavailable")
    assert verdict.status == "pass" and (package / "verdict-1.json").read_bytes() == first
    assert (package / "verdict-2.json").is_file()
    # a stricter grading of the same clone: a new verdict, the old ones untouched
    stricter = regrade(package, expected_code="another_code")
    assert stricter.causes == ["code_mismatch"] and (package / "verdict-3.json").is_file()
    assert (package / "verdict-1.json").read_bytes() == first


def test_a_failed_verdict_stops_with_its_code_after_packaging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner's gate: receipts that prove a fault did not recover the way it must
    (here a restart that is the killed process itself) fail the case, and the run stops
    with ``qualify_failed`` only once the package is written."""
    from continuity.qualify import faults
    from continuity.qualify.receipts import (
        AFTER,
        BEFORE,
        FINAL,
        FaultAfter,
        FaultBefore,
        FaultFinal,
        Loss,
        ProcessId,
        write_receipt,
    )

    same = ProcessId(pid=4321, start="boot:1")

    def reused(work: Path, knobs: Knobs, case_id: str) -> faults.FaultRun:
        write_receipt(work, BEFORE, FaultBefore(case=case_id, signal=knobs.signal,
                      interval_s=knobs.interval_s, seed=knobs.seed, target=same))  # fmt: skip
        write_receipt(work, AFTER, FaultAfter(killed=same, signal=knobs.signal,
                      loss=Loss(kind="group_gone", observed="runner group"), hold_s=2.0,
                      recovery="rerun the same command", restarted=same))  # fmt: skip
        write_receipt(work, FINAL, FaultFinal(completed=True, code=None, affected={},
                      deliveries=[]))  # fmt: skip
        return faults.FaultRun()

    monkeypatch.setitem(faults.FAULTS, "kill-runner", reused)
    case = case_by_id("continuity.reliability.kill-runner")
    assert case is not None
    selection = Selection(plan=case.plan, cases=(case,), registered=2)
    lines: list[str] = []
    with pytest.raises(GateFailed) as caught:
        run_selection(selection, tmp_path, say=lines.append)
    assert caught.value.code == "qualify_failed"
    assert lines[-1].endswith("partial 1/2: 0 of 1 passed")
    (package,) = (tmp_path / "qualify" / case.plan / case.name).iterdir()
    assert _json(package / "verdict-1.json")["causes"] == ["same_process"]
    assert _json(package / "outcome.json") == {"outcome": "completed", "code": None}


def test_the_report_keeps_lifecycle_infrastructure_and_latency_apart(tmp_path: Path) -> None:
    folder = tmp_path / "qualify" / "plan" / "case"
    for number, (status, outcome) in enumerate(
        [("pass", "completed"), ("unexercised", "infrastructure_failed"), ("fail", "completed")],
        start=1,
    ):
        attempt = folder / f"attempt-{number}"
        attempt.mkdir(parents=True)
        knobs = {"signal": "SIGKILL", "interval_s": 1.0}
        (attempt / "case.json").write_text(json.dumps({"knobs": knobs}))
        (attempt / "verdict-1.json").write_text(json.dumps({"status": status}))
        (attempt / "outcome.json").write_text(json.dumps({"outcome": outcome, "code": None}))
        (attempt / "timings.json").write_text(json.dumps({"hold": float(number)}))
    other = folder / "attempt-4"  # the same case under other knobs: never compared
    other.mkdir()
    (other / "case.json").write_text(json.dumps({"knobs": {"signal": "SIGTERM"}}))
    (other / "verdict-1.json").write_text(json.dumps({"status": "fail"}))
    line, apart = report(tmp_path)
    assert "[interval_s 1.0, signal SIGKILL]" in line and "3 attempts" in line
    assert "[signal SIGTERM]: 1 attempts; lifecycle {'fail': 1}" in apart
    assert "lifecycle {'fail': 1, 'pass': 1, 'unexercised': 1}" in line
    assert "infrastructure {'completed': 2, 'infrastructure_failed': 1}" in line
    assert "latency median 2.0 s" in line


def test_upgrade_aba_refuses_to_pool_the_two_builds_and_loses_nothing(tmp_path: Path) -> None:
    """Two worktrees of this checkout: A at HEAD, B with one committed change inside the
    unit code. A, B, A fill one run; the aggregate refuses to pool B's unit."""
    case = case_by_id("continuity.reliability.upgrade-aba")
    assert case is not None
    status, package = _run(case, tmp_path)
    assert status == "pass", _json(package / "verdict-1.json")
    final = _json(package / "inputs" / "fault-final.json")
    assert final["completed"] is True and final["code"] == "run_builds_mixed"
    assert len(final["deliveries"]) == 3  # one unit a chunk, none lost or rewritten
    before, after = (
        _json(package / "inputs" / n) for n in ("fault-before.json", "fault-after.json")
    )
    assert before["target"] == after["killed"] != after["restarted"]  # A's runner, then B's


def test_kill_history_server_excludes_the_probe_as_store_degraded(tmp_path: Path) -> None:
    """A store arm's probes serve ConversationHistory from processes of their own; the
    first one is killed with a call in flight: that sample is store_degraded (never
    scored), the next probe's own server answers, the unit finishes."""
    case = case_by_id("continuity.reliability.kill-history-server")
    assert case is not None
    status, package = _run(case, tmp_path)
    assert status == "pass", _json(package / "verdict-1.json")
    final = _json(package / "inputs" / "fault-final.json")
    assert final["completed"] is True and final["code"] == "store_degraded"
    (unit,) = package.glob("inputs/affected-*.json")
    statuses = [probe["status"] for probe in _json(unit)["probes"]]
    assert statuses == ["store_degraded", "valid"]
    # the receipt proves the kill landed under a history call: started, never answered
    after = _json(package / "inputs" / "fault-after.json")
    assert after["in_flight"] == {"call": 1, "started": True, "answered": False}
    # the killed probe's sample failed under the call, not while connecting
    (first, _) = _json(unit)["probes"]
    assert first["reasons"][0].startswith("tool_server_unavailable: calling "), first
    # a kill with no call in flight (the old kill-on-listen receipt) fails the case
    del after["in_flight"]
    (package / "inputs" / "fault-after.json").write_text(json.dumps(after))
    assert regrade(package, expected_code="store_degraded").causes == ["no_call_in_flight"]


def test_a_retrieving_arm_whose_history_died_is_store_degraded_not_failed() -> None:
    from continuity.runner.units.store import failed_result
    from tests.harness.test_replay import trace_named

    probe = trace_named("brightline-return").probes[0]
    lost = "tool_server_unavailable: calling a tool: ReadError (at http://127.0.0.1:9/mcp)"
    assert failed_result(probe, 0, lost, retrieves=True).status == "store_degraded"
    assert failed_result(probe, 0, lost, retrieves=False).status == "failed"
    other = "child_failed: the probe child died"
    assert failed_result(probe, 0, other, retrieves=True).status == "failed"


def test_a_workload_that_cannot_run_is_an_infrastructure_failure_not_a_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from continuity.qualify import faults

    def cannot_start(work: Path, knobs: Knobs, case_id: str) -> faults.FaultRun:
        raise FileNotFoundError("no such interpreter")  # the workload never started

    monkeypatch.setitem(faults.FAULTS, "kill-tool-server", cannot_start)
    case = case_by_id("continuity.reliability.kill-tool-server")
    assert case is not None
    status, package = _run(case, tmp_path)
    assert status == "unexercised"  # never a pass or a failure
    assert _json(package / "outcome.json") == {
        "outcome": "infrastructure_failed",
        "code": "qualify_workload_failed",
    }


def test_drop_endpoint_stops_resumably_and_the_rerun_sends_only_the_lost_call(
    tmp_path: Path,
) -> None:
    """A real-mode run from a clean worktree against a loopback endpoint the case runs
    itself; the endpoint is killed mid-stream, the run stops with run_incomplete, the
    endpoint comes back at the same port and the rerun sends only the lost call."""
    case = case_by_id("continuity.reliability.drop-endpoint")
    assert case is not None
    status, package = _run(case, tmp_path)
    assert status == "pass", _json(package / "verdict-1.json")
    inputs = package / "inputs"
    after, final = _json(inputs / "fault-after.json"), _json(inputs / "fault-final.json")
    assert after["loss"]["kind"] == "connection_reset" and after["killed"] != after["restarted"]
    assert final["completed"] is True and final["code"] == "run_incomplete"
    calls = [(d["id"], d["lost"]) for d in final["deliveries"]]
    first, lost = calls[0][0], calls[1][0]
    assert calls == [(first, False), (lost, True), (lost, False)]  # a, b lost, b again
    said = (inputs / "affected-run-1.txt").read_text()
    assert "provider_stream_interrupted" in said and "Run the same command again" in said
    assert not (package / "work" / "checkout").exists()  # the worktree is removed


def test_steer_across_restart_delivers_each_steer_once_after_the_restart(
    tmp_path: Path,
) -> None:
    case = case_by_id("continuity.reliability.steer-across-restart")
    assert case is not None
    status, package = _run(case, tmp_path)
    assert status == "pass", _json(package / "verdict-1.json")
    inputs = package / "inputs"
    final = _json(inputs / "fault-final.json")
    steers = {d["id"]: d["sha256"] for d in final["deliveries"]}
    assert set(steers) == {"d3-16", "qualify-steer-17"}  # the trace's, and the one queued
    assert len(final["deliveries"]) == 2  # each delivered once
    live = _json(inputs / "affected-live.json")
    assert len(live["starts"]) == 2 and live["interrupted_calls"] == 1
    assert {s["steer_id"]: s["request"] for s in live["steers"]} == steers
