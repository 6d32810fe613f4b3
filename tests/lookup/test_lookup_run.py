"""Lookup mode end to end: recall-only untouched, a lookup run and its report, slot
disposition, deadlines and the watchdog, `doit lookup_budget`, and the real-mode refusal."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import time
from pathlib import Path

import anyio
import msgspec
import pytest

from continuity.arms import ARMS, parse_arms, replay_config_for
from continuity.errors import (
    ArmError,
    HarnessError,
    LookupCoverageIncomplete,
    UsageError,
    typed_error,
)
from continuity.harness.keys import checkpoint_key
from continuity.harness.workspace import Workspace
from continuity.lookup.policy import default_policy_path, load_policy, policy_sha256
from continuity.lookup.reader import LUNA, SOL, binding_models
from continuity.lookup.receipts import LookupBinding, LookupWitness
from continuity.lookup.soul import read_soul
from continuity.lookup.sources import sources_for
from continuity.plan.from_request import plan_from_request
from continuity.plan.plan import LookupPlan, plan_digest
from continuity.plan.request import PlanRequest
from continuity.probes.protocol import ANSWER_LINE_INSTRUCTION, PROBE_INSTRUCTION
from continuity.report.aggregate import aggregate_run
from continuity.report.lookup import LookupRow, lookup_table
from continuity.runner.units.build import LookupRun, UnitRecord, build_units, run_unit
from continuity.runner.units.execution import Execution
from continuity.sampling.receipts import ProbeRequest
from continuity.sampling.worker import collect_child
from continuity.store import Store
from continuity.traces.suites import build_suite
from continuity.traces.validate import load_trace
from continuity.zygote import ZygotePool
from tests.graph.test_dodo import doit
from tests.plan.test_plan import DEFAULT_DIGEST, guarded_doit

LOOKUP = "lookup-allowed-v1"


def frozen_run(policy_path: Path | None = None, binding: str = "default") -> LookupRun:
    path = policy_path or default_policy_path()
    soul = read_soul()
    return LookupRun(
        policy=load_policy(path, policy_sha256(path.read_bytes())),
        policy_sha256=policy_sha256(path.read_bytes()),
        soul_sha256=soul.sha256,
        soul_core_sha256=soul.core_sha256,
        reader_binding=binding,
    )


# -- recall-only is untouched ----------------------------------------------------------

# Prompt bytes of probes 1-2 of brightline-return under probe-protocol-v1 (the probe text
# alone), as dumped before lookup mode existed (measured at the previous commit and again
# after: identical), under probe-protocol-v2 (the probe text, a blank line and the
# protocol's fixed instruction), and under probe-protocol-v3 (a value probe's instruction
# asks for an answer line). Putting v2's instruction back in place of v3's gives the v2
# bytes exactly, and removing it gives the v1 bytes: the protocols changed nothing else a
# reader sees.
GOLDEN_PROMPTS_V1 = {
    "native": "1680975ea453a63ebe946f09e0c7e29d9e97f704979526177af4e34998c804cb",
    "continuity-store": "4b8c2439c64471cc9701b25d543a3b02a1887ee4bc683998664b530f68d0f310",
    "continuity-pack-cold": "be69a7e8ea289bb0445333bdced1b46134738316a42f5594ba95639925aa0c2d",
}
GOLDEN_PROMPTS_V2 = {
    "native": "40348177151356bf743b8de560ae779dc933ccb984886344ffe9e5db76434b6e",
    "continuity-store": "e7e8dc11be956d3bbf51d783225dfbd86381b33ab8184d72367f3fca6a0c9d9b",
    "continuity-pack-cold": "5b5b4b368cb25421b66bfddde10698f99359f5a73ae92742a3ee6bd695661bd4",
}
GOLDEN_PROMPTS = {
    "native": "7c52c452b4ac9d1148f5ae8b204c405b7bdf003ce49e704d8e8639f9706dd0ed",
    "continuity-store": "65a9c478f1585ea547e3b12400f845ac1e4c5d99a8140ce4b8743805ad73ef37",
    "continuity-pack-cold": "0df9936899e769f88933639de9820afb56a54bb12605de079cc3760a4573d3ef",
}


def as_protocol(dump: bytes, version: int) -> bytes:
    """A v3 dump with every probe turn's instruction as `version` had it (v2: the one
    free-text instruction; v1: none)."""
    suffixes = ["\n\n" + ANSWER_LINE_INSTRUCTION, "\n\n" + PROBE_INSTRUCTION]
    lines = []
    for line in dump.splitlines():
        payload = json.loads(line)
        for message in payload["messages"]:
            for suffix in suffixes:
                if message["role"] == "user" and message["content"].endswith(suffix):
                    bare = message["content"][: -len(suffix)]
                    message["content"] = bare + ("\n\n" + PROBE_INSTRUCTION) * (version == 2)
                    break
        lines.append(msgspec.json.encode(payload) + b"\n")
    return b"".join(lines)


RECALL_ARMS = [
    "native",
    "cold-rebuild",
    "compaction-1",
    "compaction-2",
    "ceiling",
    "restart-switch-compact",
    "continuity-store",
    "continuity-store-compaction",
    "continuity-pack-cold",
]


def test_recall_only_plan_arms_and_prompt_bytes_are_unchanged(tmp_path: Path) -> None:
    assert plan_digest(plan_from_request(PlanRequest())) == DEFAULT_DIGEST
    assert (
        plan_digest(plan_from_request(PlanRequest.of({"probe_mode": "recall-only"})))
        == DEFAULT_DIGEST
    )
    assert [a.id for a in parse_arms(None)] == RECALL_ARMS
    store = Store(tmp_path / "store")
    item = build_suite(store, "original", out_dir=tmp_path / "out").items[0]
    trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
    for arm_id, digest in GOLDEN_PROMPTS.items():
        dump = tmp_path / f"{arm_id}.jsonl"
        run_unit(store, trace, item, ARMS[arm_id], probe_limit=2, dump_requests=dump)
        assert hashlib.sha256(dump.read_bytes()).hexdigest() == digest, arm_id
        assert ANSWER_LINE_INSTRUCTION.encode() in dump.read_bytes()  # probe 1 is a value
        v2 = as_protocol(dump.read_bytes(), 2)
        assert hashlib.sha256(v2).hexdigest() == GOLDEN_PROMPTS_V2[arm_id], arm_id
        v1 = as_protocol(dump.read_bytes(), 1)
        assert hashlib.sha256(v1).hexdigest() == GOLDEN_PROMPTS_V1[arm_id], arm_id


def test_lookup_plans_bind_soul_and_policy_and_admit_two_arms() -> None:
    plan = plan_from_request(PlanRequest.of({"probe_mode": LOOKUP}))
    assert isinstance(plan, LookupPlan)
    assert sorted(plan.arms) == ["continuity-pack-cold", "native-lookup"]
    assert plan.call_budget == 8 and plan.byte_budget == 126_976
    assert plan.soul_sha256 == read_soul().sha256
    assert plan_digest(plan) != DEFAULT_DIGEST
    from continuity.plan.workload import workload

    assert workload(plan).units == 8  # the dry run sizes a lookup plan too
    with pytest.raises(ArmError) as caught:
        plan_from_request(PlanRequest.of({"probe_mode": LOOKUP, "arms": "native"}))
    assert caught.value.code == "arm_not_admitted_in_lookup:native"
    with pytest.raises(ArmError) as caught:
        plan_from_request(PlanRequest.of({"arms": "native-lookup"}))
    assert caught.value.code == "arm_lookup_only:native-lookup"
    with pytest.raises(ArmError) as caught:
        plan_from_request(PlanRequest.of({"probe_mode": "guess"}))
    assert caught.value.code == "probe_mode_unknown"
    with pytest.raises(UsageError) as real:
        plan_from_request(PlanRequest.of({"probe_mode": LOOKUP, "provider": "openai-chat"}))
    assert real.value.code == "lookup_real_refused"


def test_the_two_scripted_reader_bindings() -> None:
    default = plan_from_request(PlanRequest.of({"probe_mode": LOOKUP}))
    alternate = plan_from_request(
        PlanRequest.of({"probe_mode": LOOKUP, "lookup_reader": "alternate"})
    )
    assert isinstance(default, LookupPlan) and isinstance(alternate, LookupPlan)
    assert (default.reader_binding, alternate.reader_binding) == ("default", "alternate")
    assert plan_digest(default) != plan_digest(alternate)
    assert plan_digest(
        plan_from_request(PlanRequest.of({"probe_mode": LOOKUP, "lookup_reader": "default"}))
    ) == (plan_digest(default))
    # Sol reads by default; its native history is replayed on Sol (the reader's own
    # session) and the cold pack arm's history on Luna. The alternate swaps them.
    native, cold = ARMS["native-lookup"], ARMS["continuity-pack-cold"]
    assert binding_models("default") == (SOL, LUNA)
    assert replay_config_for(native, LOOKUP, binding_models("default")).history_model == (
        "gpt-6.1-sol"
    )
    assert replay_config_for(cold, LOOKUP, binding_models("default")).history_model == (
        "gpt-6-luna"
    )
    assert replay_config_for(native, LOOKUP, binding_models("alternate")).history_model == (
        "gpt-6-luna"
    )
    with pytest.raises(UsageError) as caught:
        plan_from_request(PlanRequest.of({"probe_mode": LOOKUP, "lookup_reader": "terra"}))
    assert caught.value.code == "lookup_reader_unknown"
    with pytest.raises(UsageError) as caught:
        plan_from_request(PlanRequest.of({"lookup_reader": "alternate"}))
    assert caught.value.code == "plan_invalid" and caught.value.location == "--lookup-reader"


def test_lookup_checkpoints_are_namespaced() -> None:
    arm = ARMS["continuity-pack-cold"]
    recall = checkpoint_key("a" * 64, replay_config_for(arm))
    lookup = checkpoint_key("a" * 64, replay_config_for(arm, LOOKUP))
    assert recall != lookup


def test_a_changed_policy_changes_the_plan(tmp_path: Path) -> None:
    document = json.loads(default_policy_path().read_text())
    document["note"] = "another measurement"
    other = tmp_path / "policy.json"
    other.write_text(json.dumps(document))
    sha = hashlib.sha256(other.read_bytes()).hexdigest()
    changed = plan_from_request(
        PlanRequest.of({"probe_mode": LOOKUP, "policy": str(other), "policy_sha256": sha})
    )
    assert plan_digest(changed) != plan_digest(
        plan_from_request(PlanRequest.of({"probe_mode": LOOKUP}))
    )


def test_a_soul_mismatch_fails_the_plan(tmp_path: Path) -> None:
    document = json.loads(default_policy_path().read_text())
    document["soul_core_sha256"] = "0" * 64
    other = tmp_path / "policy.json"
    other.write_text(json.dumps(document))
    with pytest.raises(Exception) as caught:
        plan_from_request(
            PlanRequest.of(
                {
                    "probe_mode": LOOKUP,
                    "policy": str(other),
                    "policy_sha256": hashlib.sha256(other.read_bytes()).hexdigest(),
                }
            )
        )
    assert getattr(caught.value, "code", "") == "lookup_soul_mismatch"


# -- a lookup run and its report ------------------------------------------------------


def test_an_offline_lookup_run_over_the_originals_reports_every_slot(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    run = tmp_path / "out" / "runs" / "lookup"
    records, folder, built = build_units(
        store,
        "original",
        probe_limit=2,
        run_dir=run,
        execution=Execution(lookup=frozen_run()),
    )
    assert built == 8 and {r.arm for r in records} == {"native-lookup", "continuity-pack-cold"}
    for record in records:
        assert record.binding is not None and record.binding["lookup"]["calls"] == 8
        assert record.binding["lookup"]["reader"] == SOL
        for probe in record.probes:
            assert probe.status == "valid", probe.reasons
            assert probe.evidence is not None and probe.evidence.reader_model == SOL
            witness = probe.evidence.lookup
            assert witness is not None and witness.sources == 1
            assert witness.meter.call_budget == 8
            # Witnesses hold ids, digests, counts and classes, never values.
            encoded = msgspec.json.encode(witness).decode()
            answer = sources_for(
                load_trace(store.load_output(record.trace_key) or b"", source=record.trace_id),
                next(
                    p
                    for p in load_trace(
                        store.load_output(record.trace_key) or b"", source=record.trace_id
                    ).probes
                    if p.probe_id == probe.probe_id
                ),
            )[0]
            assert answer.value not in encoded and answer.line not in encoded
    native = [p for r in records if r.arm == "native-lookup" for p in r.probes]
    assert all(p.evidence.tools_offered == ["ConversationHistory"] for p in native)  # type: ignore[union-attr]
    assert all(
        p.evidence.packs_per_request == [0] * len(p.evidence.packs_per_request)  # type: ignore[union-attr]
        for p in native
    )
    results, paths, _ = aggregate_run(store, run)
    table = results.lookup
    assert set(table) == {"native-lookup", "continuity-pack-cold"}
    assert table["native-lookup"].slots_planned == 8 and table["native-lookup"].missing == 0
    assert table["native-lookup"].readers == [SOL] and table["native-lookup"].duplicate == 0
    assert table["native-lookup"].exact.n == 8
    # Budget exhaustion is an explicit mechanics outcome: the native reader hit its
    # eight-call budget and stopped voluntarily.
    assert table["native-lookup"].reader_budget_stops > 0
    native_calls = table["native-lookup"].mean_calls
    cold_calls = table["continuity-pack-cold"].mean_calls
    assert (native_calls or 0) > (cold_calls or 0)
    summary = paths["summary"].read_text()
    assert "Lookup (lookup-allowed-v1)" in summary and "reader budget stops" in summary
    # A missing unit file is a missing slot, never a silent drop.
    next(folder.glob("r1-brightline-return-native-lookup.json")).unlink()
    results, _, _ = aggregate_run(store, run)
    assert results.lookup["native-lookup"].missing == 2


def test_the_alternate_reader_binding_runs_on_its_own_native_session(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    records, _, _ = build_units(
        store,
        "original",
        traces="brightline-return",
        probe_limit=1,
        run_dir=tmp_path / "run",
        execution=Execution(lookup=frozen_run(binding="alternate")),
    )
    by_arm = {r.arm: r for r in records}
    assert set(by_arm) == {"native-lookup", "continuity-pack-cold"}
    for record in records:
        assert record.binding is not None and record.binding["lookup"]["reader"] == LUNA
        (probe,) = record.probes
        assert probe.status == "valid", probe.reasons
        assert probe.evidence is not None and probe.evidence.reader_model == LUNA
    native = by_arm["native-lookup"].probes[0].evidence
    cold = by_arm["continuity-pack-cold"].probes[0].evidence
    assert native is not None and native.history_model == LUNA  # the reader's own session
    assert cold is not None and cold.history_model == SOL  # the cold arm switched models
    # A different binding is a different unit: nothing is reused across bindings.
    default, _, built = build_units(
        store,
        "original",
        traces="brightline-return",
        probe_limit=1,
        run_dir=tmp_path / "run2",
        execution=Execution(lookup=frozen_run()),
    )
    assert built == 2 and {r.key for r in default}.isdisjoint({r.key for r in records})


def test_the_lookup_table_counts_a_slot_met_twice_once_as_a_duplicate() -> None:
    row = LookupRow(
        "p01",
        "tool_identifier",
        "valid",
        "",
        True,
        True,
        "absent",
        True,
        True,
        2,
        900,
        0.1,
        None,
        "done",
        SOL,
    )
    table = lookup_table(
        [(1, "t", "native-lookup", [row, row]), (1, "t", "native-lookup", [row])], None
    )
    cell = table["native-lookup"]
    # One slot, met three times: ambiguous, so no occurrence is scored (never first-wins).
    assert cell.duplicate == 1 and cell.slots_present == 0
    assert cell.duplicate_occurrences[0].occurrences == 3
    assert (cell.exact.correct, cell.exact.n, cell.exact.rate) == (0, 0, None)


def edited_policy(tmp_path: Path, infeasible: set[tuple[str, str, str]]) -> Path:
    """The frozen policy with the given (trace, arm, probe) slots budget-infeasible: their
    paths need one call more than the budget (a policy's classes are recomputed from its
    metrics when it is read, so the metric moves with the class)."""
    document = json.loads(default_policy_path().read_text())
    for slot in document["slots"]:
        if (slot["trace_id"], slot["arm"], slot["probe_id"]) in infeasible:
            slot["calls"] = document["calls"] + 1
            slot["classification"] = "budget_infeasible"
    edited = tmp_path / "policy.json"
    edited.write_text(json.dumps(document))
    return edited


TRACE = "brightline-return"
MIXED = {(TRACE, "continuity-pack-cold", "p01")}  # one of two slots skipped
ALL_SKIPPED = {(TRACE, "native-lookup", "p01"), (TRACE, "native-lookup", "p02")}


def test_inventory_infeasible_slots_keep_the_unit_partial_and_the_run_fails(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "store")
    run = tmp_path / "run"
    with pytest.raises(LookupCoverageIncomplete) as caught:
        build_units(
            store,
            "original",
            traces=TRACE,
            probe_limit=2,
            run_dir=run,
            execution=Execution(lookup=frozen_run(edited_policy(tmp_path, MIXED | ALL_SKIPPED))),
        )
    error = caught.value
    assert error.code == "lookup_partial_coverage"
    assert "3 of 4 planned lookup slots were skipped" in error.message
    assert "2 of 2 units partial, 1 of them with no eligible probe" in error.message
    # Every unit is materialised before the run fails: partial coverage stays visible.
    units = {
        p.name: msgspec.json.decode(p.read_bytes(), type=UnitRecord)
        for p in run.glob("units/*.json")
    }
    assert set(units) == {f"r1-{TRACE}-continuity-pack-cold.json", f"r1-{TRACE}-native-lookup.json"}
    mixed = units[f"r1-{TRACE}-continuity-pack-cold.json"]
    assert mixed.complete is False and mixed.eligible_terminal is True
    first, second = mixed.probes
    assert first.status == "inventory_infeasible" and first.reasons == ["budget_infeasible"]
    assert first.answer == "" and first.correct is None and first.evidence is None
    assert first.usage.total_input == 0
    assert second.status == "valid"
    empty = units[f"r1-{TRACE}-native-lookup.json"]
    assert empty.complete is False and empty.eligible_terminal is True
    assert {p.status for p in empty.probes} == {"inventory_infeasible"}
    # The report still reads the partial run.
    assert aggregate_run(store, run)[0].units == 2
    # A run with every slot feasible is complete and ends normally.
    records, _, _ = build_units(
        store,
        "original",
        traces=TRACE,
        probe_limit=1,
        run_dir=tmp_path / "full",
        execution=Execution(lookup=frozen_run()),
    )
    assert all(r.complete and r.eligible_terminal for r in records)


def test_doit_units_exits_non_zero_on_skipped_slots(tmp_path: Path) -> None:
    policy = edited_policy(tmp_path, MIXED)
    result = doit(
        tmp_path,
        "units",
        "--probe-mode",
        LOOKUP,
        "--policy",
        str(policy),
        "--policy-sha256",
        policy_sha256(policy.read_bytes()),
        "--trace",
        TRACE,
        "--probe-limit",
        "1",
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "lookup_partial_coverage" in output and "1 of 2 planned lookup slots" in output
    assert len(list((tmp_path / "out" / "runs" / "lookup" / "units").glob("*.json"))) == 2


def test_a_resume_leaves_terminal_partial_units_alone_and_retries_unstarted_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import continuity.runner.units.run as unit_run
    from continuity.errors import CheckpointError
    from continuity.runner.units.worker import run_worker as real_worker
    from continuity.sampling.worker import ProbeOutcome, UnitRequest

    store = Store(tmp_path / "store")
    lookup = frozen_run(edited_policy(tmp_path, MIXED))
    workers: list[str] = []

    def crashing_worker(
        request: UnitRequest, timeout: float, zygotes: ZygotePool | None = None
    ) -> list[ProbeOutcome]:
        workers.append(request.arm)
        if request.arm == "native-lookup":
            raise CheckpointError("unit worker exited -9: killed", code="child_failed")
        return real_worker(request, timeout, zygotes)

    monkeypatch.setattr(unit_run, "run_worker", crashing_worker)
    arguments: dict[str, object] = {
        "traces": TRACE,
        "probe_limit": 2,
        "run_dir": tmp_path / "run",
        "execution": Execution(lookup=lookup),
        "jobs": 1,
    }
    with pytest.raises(CheckpointError):  # the native unit never started its probes
        build_units(store, "original", **arguments)  # type: ignore[arg-type]
    assert workers == ["continuity-pack-cold", "native-lookup"]
    counted: list[str] = []

    def counting_worker(
        request: UnitRequest, timeout: float, zygotes: ZygotePool | None = None
    ) -> list[ProbeOutcome]:
        counted.append(request.arm)
        return real_worker(request, timeout, zygotes)

    monkeypatch.setattr(unit_run, "run_worker", counting_worker)
    with pytest.raises(LookupCoverageIncomplete):
        build_units(store, "original", **arguments)  # type: ignore[arg-type]
    # The terminal mixed unit was not run again; only the unstarted unit ran.
    assert counted == ["native-lookup"]
    counted.clear()
    with pytest.raises(LookupCoverageIncomplete):
        build_units(store, "original", **arguments)  # type: ignore[arg-type]
    assert counted == []  # every unit terminal: nothing runs, the run is still partial


def test_unknown_feasibility_lists_every_slot_before_refusing(tmp_path: Path) -> None:
    document = json.loads(default_policy_path().read_text())
    document["slots"] = [s for s in document["slots"] if s["trace_id"] != "fernway-office-move"]
    edited = tmp_path / "policy.json"
    edited.write_text(json.dumps(document))
    store = Store(tmp_path / "store")
    run = tmp_path / "run2"
    with pytest.raises(UsageError) as caught:
        build_units(
            store,
            "original",
            probe_limit=1,
            run_dir=run,
            execution=Execution(lookup=frozen_run(edited)),
        )
    assert caught.value.code == "lookup_unknown_feasibility"
    assert not (run / "units").exists()
    slots = json.loads((run / "lookup-slots.json").read_text())["slots"]
    assert len(slots) == 8  # 4 traces x 2 arms x 1 probe, the blocked ones included
    blocked = [s for s in slots if s["disposition"] == "unknown"]
    assert {(s["trace_id"], s["arm"]) for s in blocked} == {
        ("fernway-office-move", "native-lookup"),
        ("fernway-office-move", "continuity-pack-cold"),
    }


def test_a_slot_already_observed_is_never_overwritten(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    run = tmp_path / "run"
    records, folder, _ = build_units(
        store,
        "original",
        traces=TRACE,
        probe_limit=1,
        run_dir=run,
        execution=Execution(lookup=frozen_run()),
    )
    # Another observation of the same slot (here: the alternate reader binding).
    path = folder / f"r1-{TRACE}-native-lookup.json"
    before = path.read_bytes()
    with pytest.raises(UsageError) as caught:
        build_units(
            store,
            "original",
            traces=TRACE,
            probe_limit=1,
            run_dir=run,
            execution=Execution(lookup=frozen_run(binding="alternate")),
        )
    assert caught.value.code == "lookup_slot_observed"
    assert path.read_bytes() == before
    # The same observation again is no second observation: the rerun is a no-op.
    again, _, built = build_units(
        store,
        "original",
        traces=TRACE,
        probe_limit=1,
        run_dir=run,
        execution=Execution(lookup=frozen_run()),
    )
    assert built == 0 and [r.key for r in again] == [r.key for r in records]


def test_the_probe_deadline_with_a_fake_clock(tmp_path: Path) -> None:
    from continuity.harness.checkpoints import build_checkpoint
    from continuity.sampling.child import run_probe

    store = Store(tmp_path / "store")
    item = build_suite(store, "original", out_dir=tmp_path / "out").items[0]
    trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
    arm = ARMS["native-lookup"]
    checkpoint = build_checkpoint(
        store,
        trace,
        trace_key=item.key,
        trace_digest=item.digest,
        config=replay_config_for(arm, LOOKUP),
    )
    root = Path(checkpoint.root)
    shutil.rmtree(root)
    store.restore_tree(checkpoint.tree.digest, root)
    soul = read_soul()
    witness_path = tmp_path / "witness.json"
    probe = trace.probes[0]
    request = ProbeRequest(
        arm=arm.id,
        probe_text=probe.text,
        parent_pid=os.getpid(),
        lookup=LookupBinding(
            call_budget=8,
            byte_budget=126_976,
            soul_sha256=soul.sha256,
            soul_core_sha256=soul.core_sha256,
            sources=sources_for(trace, probe),
            witness_path=str(witness_path),
        ),
    )
    ticks = iter([0.0, 0.0, 0.0, 601.0, 601.0, 601.0])

    def clock() -> float:
        return next(ticks, 601.0)

    started = time.monotonic()
    with pytest.raises(BaseException) as caught:  # raised through the MCP task groups
        anyio.run(lambda: run_probe(Workspace(root), request, clock=clock))
    typed = typed_error(caught.value)
    assert isinstance(typed, HarnessError) and typed.code == "lookup_deadline_exceeded"
    assert time.monotonic() - started < 60  # the fake clock: no waiting
    witness = msgspec.json.decode(witness_path.read_bytes(), type=LookupWitness)
    assert witness.deadline_exceeded and witness.meter.calls >= 1


def test_the_parent_watchdog_with_a_fake_clock() -> None:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # a hung probe child
        os.close(read_fd)
        time.sleep(120)
        os._exit(0)
    os.close(write_fd)
    ticks = iter([0.0, 100.0, 721.0])
    started = time.monotonic()
    data, status, fired = collect_child(
        pid, read_fd, watchdog=720.0, clock=lambda: next(ticks, 721.0), poll=0.01
    )
    assert fired and data == b""
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert time.monotonic() - started < 10


def test_a_finished_child_is_collected_without_the_watchdog() -> None:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        os.write(write_fd, b"report")
        os._exit(0)
    os.close(write_fd)
    data, status, fired = collect_child(pid, read_fd, watchdog=720.0, poll=0.01)
    assert (data, fired) == (b"report", False) and os.WEXITSTATUS(status) == 0


# -- the commands ----------------------------------------------------------------------


def test_doit_lookup_budget_writes_a_policy_and_refuses_an_existing_directory(
    tmp_path: Path,
) -> None:
    output = tmp_path / "sizing"
    result = doit(tmp_path, "lookup_budget", "--output", str(output), "--suites", "original")
    assert "inventory sha256" in result.stdout
    policy = json.loads((output / "policy.json").read_text())
    assert policy["inventory_sha256"] and len(policy["slots"]) == 16
    assert {s["classification"] for s in policy["slots"]} == {"feasible"}
    assert (output / "inventory.json").is_file() and (output / "summary.md").is_file()
    # The frozen policy is never touched, and the new one is stored under a ref.
    assert load_policy().calls == 8
    sha = hashlib.sha256((output / "policy.json").read_bytes()).hexdigest()
    assert Store(tmp_path / "store").get_ref(f"lookup/policies/{sha}") is not None
    assert "18 paths measured, 0 reused from the store" in result.stdout
    # A second run into a new directory measures nothing and writes the same policy.
    second = doit(
        tmp_path, "lookup_budget", "--output", str(tmp_path / "again"), "--suites", "original"
    )
    assert "0 paths measured, 18 reused from the store" in second.stdout
    assert (tmp_path / "again" / "policy.json").read_bytes() == (
        output / "policy.json"
    ).read_bytes()
    again = doit(tmp_path, "lookup_budget", "--output", str(output), check=False)
    assert again.returncode != 0 and "lookup_output_exists" in again.stdout + again.stderr
    missing = doit(tmp_path, "lookup_budget", check=False)
    assert "lookup_output_required" in missing.stdout + missing.stderr


def test_real_lookup_is_refused_before_any_credential(tmp_path: Path) -> None:
    credentials = tmp_path / "credentials.json"
    credentials.write_text('{"api_key": "sk"}')
    result, opened = guarded_doit(
        tmp_path,
        "units",
        "--real",
        "--probe-mode",
        LOOKUP,
        "--provider",
        "openai-chat",
        "--credentials",
        str(credentials),
        "--confirm-plan",
        "0" * 64,
        "--out",
        str(tmp_path / "run"),
    )
    assert result.returncode != 0
    assert "lookup_real_refused" in result.stdout + result.stderr
    assert str(credentials) not in opened


def test_a_lookup_dry_run_sizes_the_slots_and_prices_nothing(tmp_path: Path) -> None:
    from continuity.plan.estimate import confirmed_dry_run, dry_run
    from continuity.plan.estimate_format import format_dry_run
    from continuity.plan.pricing import load_catalog
    from continuity.plan.workload import load_plan_traces, lookup_sizing, workload

    plan = plan_from_request(PlanRequest.of({"probe_mode": LOOKUP}))
    assert isinstance(plan, LookupPlan)
    traces = load_plan_traces(plan)
    sizing = lookup_sizing(plan, load_policy(), traces)
    # The originals: two annotated probes per trace and arm, all feasible in the frozen
    # policy; every other probe runs with unknown provenance.
    total = sum(len(t.probes) for t in traces) * 2
    assert sizing.slots == {"feasible": 16, "unannotated": total - 16}
    assert sizing.runnable == total and sizing.max_rounds == 10 and sizing.reader == SOL
    result = dry_run(plan, workload(plan, traces), load_catalog(), sizing)
    assert result.upper_bound.usd == 0.0 and result.answer_calls == total * 10
    text = format_dry_run(result)
    assert "nothing is billed" in text and "USD" not in text and SOL in text
    # A lookup plan's inventory-infeasible slots are counted by class.
    hard = plan_from_request(
        PlanRequest.of({"probe_mode": LOOKUP, "suite": "hard", "seeds": "101-102"})
    )
    assert isinstance(hard, LookupPlan)
    hard_sizing = lookup_sizing(hard, load_policy())
    assert hard_sizing.slots["context_bound"] == 6 and hard_sizing.slots["feasible"] == 6
    assert "context_bound 6" in format_dry_run(
        dry_run(hard, workload(hard), load_catalog(), hard_sizing)
    )
    # Through doit: no network, a plan digest rather than a confirmation, nothing
    # recorded as confirmable, and the estimate has nothing to price.
    ran, _ = guarded_doit(tmp_path, "dry_run", "--probe-mode", LOOKUP, "--probe-limit", "1")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "plan digest:" in ran.stdout and "confirmation digest" not in ran.stdout
    assert confirmed_dry_run(Store(tmp_path / "store"), result.digest) is None
    estimated, _ = guarded_doit(tmp_path, "estimate", "--probe-mode", LOOKUP)
    assert estimated.returncode == 0 and "nothing to price" in estimated.stdout
