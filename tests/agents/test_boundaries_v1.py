"""CAP/0 v1 boundaries with the toy reference adapter: the agent's own compaction
(``compact``) and a model switch (``switch``), each proven by what the model proxy saw,
and each claimed-but-not-crossed fault excluded. Compaction replays an original trace
(the smoke trace fits in the kept tail, so there is nothing to compact)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from msgspec import UNSET

from continuity.agents.drive import AgentRun, drive_agent
from continuity.agents.manifest import Manifest, load_manifest
from continuity.agents.readers import OfflineReader
from continuity.agents.retained import RetainedView
from continuity.errors import AdapterError, ArmError, ContinuityError
from continuity.plan.from_request import plan_from_request
from continuity.plan.plan import plan_digest
from continuity.plan.request import PlanRequest
from continuity.plan.workload import ASSUMPTIONS, workload
from continuity.report.aggregate import aggregate_run
from continuity.runner.units.build import build_units
from continuity.runner.units.record import UnitRecord
from continuity.servers.model_proxy import MAIN, SWITCH
from continuity.store import Store
from continuity.traces.schema import OwnerMessage, Trace, iter_turns
from rules.units import _units
from tests.agents.test_drive import TRACE as SMOKE
from tests.agents.test_units import _toy_copy
from tests.harness.test_replay import trace_named

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "examples" / "agents" / "toy"
COMPACTING = load_manifest(TOY / "v1.toml")
ORIGINAL = trace_named("brightline-return")


def _drive(tmp_path: Path, arm: str, trace: Trace, manifest: Manifest = COMPACTING) -> AgentRun:
    async def main() -> AgentRun:
        return await drive_agent(manifest, trace, work=tmp_path / arm, arm=arm,
                                 probe=trace.probes[0].text, reader=OfflineReader())  # fmt: skip

    return anyio.run(main)


def test_the_agents_own_compaction_is_a_verified_boundary(tmp_path: Path) -> None:
    """session/compact: one summary request answered by the summarizer, and a probe
    request that no longer extends the replay's and carries the summary."""
    run = _drive(tmp_path, "compact", ORIGINAL)
    assert run.codes == [] and run.crossing.verdict == "verified", run.crossing.reasons
    compaction = [f for f in run.facts if f.role == "compaction"]
    assert len(compaction) == 1 and compaction[0].mode == "summary"
    assert run.probe is not None and run.probe.prefix in ("shrank", "reset")
    assert run.probe.summary_carried and len(run.summaries) == 1
    assert run.summaries[0].startswith("## Goal\n(scripted summary of ")
    owner = sum(isinstance(t, OwnerMessage) for _, _, t in iter_turns(ORIGINAL))
    assert run.probe.transcript < owner  # owner turns went into the summary


@pytest.mark.parametrize("at", ["probe turn", "mid-replay"])
def test_an_agent_compacting_on_its_own_is_observed_where_its_threshold_fires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    """compaction: auto: no session/compact; the agent's own threshold (a turn number
    here) fires at the probe turn, or in the middle of the replay, and the proxy sees
    the compaction there: a faithful replay, and a verified boundary."""
    owner = sum(isinstance(t, OwnerMessage) for _, _, t in iter_turns(ORIGINAL))
    monkeypatch.setenv("TOY_COMPACT", "auto")
    monkeypatch.setenv("TOY_COMPACT_AT", str(owner + 1 if at == "probe turn" else owner - 2))
    run = _drive(tmp_path, "compact", ORIGINAL, load_manifest(TOY / "agent.toml"))
    assert run.codes == [] and run.crossing.verdict == "verified", (run.details, run.crossing)
    roles = [f.role for f in run.facts]
    assert roles.count("compaction") == 1
    if at == "probe turn":
        assert roles[-2:] == ["compaction", "main"]
    else:  # the replay went on after it, every turn still answered
        assert roles.index("compaction") < len(roles) - 4 and run.signature


@pytest.mark.parametrize(
    ("fault", "verdict", "reason"),
    [
        ("fake_compact", "not_crossed", "it dropped nothing"),
        ("front_compact", "not_crossed", "the compaction replaced none"),
        ("lose_summary", "contradicted", "does not carry the summary"),
    ],
)
def test_a_compaction_claimed_but_not_crossed_is_excluded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, verdict: str, reason: str
) -> None:
    monkeypatch.setenv("TOY_FAULT", fault)
    run = _drive(tmp_path, "compact", ORIGINAL)
    assert run.codes == [] and run.crossing.verdict == verdict
    assert any(reason in r for r in run.crossing.reasons), run.crossing.reasons


def test_a_compaction_with_nothing_to_summarize_is_not_crossed(tmp_path: Path) -> None:
    """The smoke trace fits in the kept tail: the agent asks for no summary."""
    run = _drive(tmp_path, "compact", SMOKE)
    assert run.crossing.verdict == "not_crossed"
    assert run.crossing.reasons == [
        "no compaction request reached the model: the agent asked for no summary"
    ]


def test_a_model_switch_is_verified_by_the_model_the_requests_name(tmp_path: Path) -> None:
    run = _drive(tmp_path, "switch", SMOKE)
    assert run.codes == [] and run.crossing.verdict == "verified", run.crossing.reasons
    assert run.probe is not None and run.probe.model == SWITCH and run.switched_to == SWITCH
    assert run.probe.prefix == "extends"  # the toy carries its context over as it is
    assert {f.model for f in run.facts if f.mode == "script"} == {MAIN}


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("ignore_switch", f"the probe turn's requests name {MAIN}, not {SWITCH}"),
        ("switch_early", f"the replay's requests already named {SWITCH}, not {MAIN}"),
    ],
)
def test_a_switch_the_agent_did_not_make_is_not_crossed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, reason: str
) -> None:
    monkeypatch.setenv("TOY_FAULT", fault)
    run = _drive(tmp_path, "switch", SMOKE)
    assert run.crossing.verdict == "not_crossed"
    assert run.crossing.reasons == [reason]


@pytest.mark.parametrize(("arm", "cap"), [("compact", "compaction"), ("switch", "model_switch")])
@pytest.mark.parametrize("declared", ["no table", "a table without it"])
def test_an_agent_declaring_no_such_capability_is_refused_at_plan_time(
    tmp_path: Path, arm: str, cap: str, declared: str
) -> None:
    """The v1 arms need the manifest to declare their capability: refused before
    anything runs, with or without a [capabilities] table."""
    table = "" if declared == "no table" else '[capabilities]\nsteer = "injected"\n'
    manifest = _toy_copy(tmp_path / "toy", table)
    given = {"suite": "smoke", "trace": SMOKE.trace_id, "probe_limit": 1, "run": "v1",
             "out": str(tmp_path), "store": str(tmp_path / "store")}  # fmt: skip
    with pytest.raises(ContinuityError) as caught:
        _units(agent=str(manifest), arms=f"native,{arm}", **given)
    assert caught.value.code == f"adapter_capability_missing:{cap}"
    assert caught.value.location == arm
    assert not (tmp_path / "runs").exists() and not (tmp_path / "store").exists()


def test_an_agent_reporting_no_compaction_is_refused_at_initialize(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest without a table is checked when the adapter reports its capabilities."""
    monkeypatch.setenv("TOY_COMPACT", "none")
    with pytest.raises(AdapterError) as caught:
        _drive(tmp_path, "compact", SMOKE, load_manifest(TOY / "agent.toml"))
    assert caught.value.code == "adapter_capability_missing:compaction"


def test_the_toys_compaction_gives_the_reference_compaction_arms_labels(tmp_path: Path) -> None:
    """Unit level: the toy compacting the way the reference harness does (its kept tail,
    a content-free scripted summary) gets, probe by probe, the reference ``compaction-1``
    arm's availability label, superseded value and needle states on the same trace."""
    limit, suite = 4, "original"
    store = Store(tmp_path / "store")
    records, _, _ = build_units(store, suite, arms="compaction-1", traces=ORIGINAL.trace_id,
                                probe_limit=limit, run_dir=tmp_path / "ref")  # fmt: skip
    reference = {
        p.probe_id: (p.availability.fact, p.availability.superseded_present,
                     [s.in_context for s in p.evidence.needle_states])
        for p in records[0].probes if p.availability and p.evidence
    }  # fmt: skip
    _units(agent=str(TOY / "v1.toml"), arms="compact", trace=ORIGINAL.trace_id,
           suite=suite, probe_limit=limit, run="v1", out=str(tmp_path),
           store=str(tmp_path / "store"))  # fmt: skip
    path = next((tmp_path / "runs" / "v1" / "units").glob("*.json"))
    record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
    toy = {
        p.probe_id: (p.availability.fact, p.availability.superseded_present,
                     [s.in_context for s in p.agent.needle_states])
        for p in record.probes if p.availability and p.agent is not UNSET
    }  # fmt: skip
    assert record.arm == "agent-compact" and len(toy) == limit
    assert all(p.status == "valid" for p in record.probes), [p.status for p in record.probes]
    assert toy == reference
    # the reference arm really compacted these probes' context: not every needle is there
    assert any(False in states for _, _, states in toy.values())
    summaries = {s for p in record.probes if p.agent is not UNSET for s in p.agent.summaries}
    assert len(summaries) >= 1 and all("nothing extracted" in s for s in summaries)
    # the drill-down shows what the agent's compaction left its reader, and the verdict
    _, paths, _ = aggregate_run(store, tmp_path / "runs" / "v1")
    report = paths["report"].read_text(encoding="utf-8")
    assert (
        "the agent&#x27;s compaction summary" in report
        or "the agent's compaction summary" in report
    )
    assert "boundary verified; 1 adapter process(es); probe request " in report
    assert "(scripted summary of " in report


@pytest.fixture(scope="module")
def store_and_pack(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The toy's store and pack units over the smoke trace, and the reference arms'."""
    root = tmp_path_factory.mktemp("store-pack")
    _units(agent=str(TOY / "v1.toml"), arms="continuity-store,continuity-pack-cold",
           trace=SMOKE.trace_id, suite="smoke", probe_limit=2, run="sp", out=str(root),
           store=str(root / "store"))  # fmt: skip
    units = {
        r.arm: r
        for r in (msgspec.json.decode(p.read_bytes(), type=UnitRecord)
                  for p in (root / "runs" / "sp" / "units").glob("*.json"))
    }  # fmt: skip
    return {"root": root, "units": units}


@pytest.mark.xdist_group("store_and_pack")
def test_the_pack_reaches_a_new_session_through_context_inject(
    store_and_pack: dict[str, Any],
) -> None:
    """The reference harness's cold pack, injected into a new session: the probe request
    carries it, and each needle's retrievability is the reference lookup's."""
    record = store_and_pack["units"]["agent-continuity-pack-cold"]
    assert [p.status for p in record.probes] == ["valid", "valid"]
    for probe in record.probes:
        assert probe.agent is not UNSET and probe.agent.verdict == "verified"
        assert probe.agent.pack_carried is True and probe.agent.lookup_calls == 0
        # no store is offered: a fact the pack lacks is absent, never retrievable
        states = probe.agent.needle_states
        assert states and all(s.retrievable is None for s in states)


@pytest.mark.xdist_group("store_and_pack")
def test_the_store_is_offered_to_a_new_session_as_conversation_history(
    store_and_pack: dict[str, Any],
) -> None:
    record = store_and_pack["units"]["agent-continuity-store"]
    assert [p.status for p in record.probes] == ["valid", "valid"]
    for probe in record.probes:
        assert probe.agent is not UNSET and probe.agent.verdict == "verified"
        assert probe.agent.probe_request is not None
        assert "mcp__history__ConversationHistory" in probe.agent.probe_request.tools_offered
        assert probe.agent.pack_carried is None
        # the scripted reader looked the conversation up through the agent, metered
        assert probe.agent.lookup_calls >= 2 and probe.agent.lookup_bytes > 0
        assert probe.agent.probe_tool_attempts == 0  # none of it reached the fixture
        assert probe.answer in ("UNKNOWN", "ANSWER: UNKNOWN")  # then it declined
        states = probe.agent.needle_states  # what the reference lookup finds in the store
        assert states and all(s.retrievable is not None for s in states)


@pytest.mark.xdist_group("store_and_pack")
def test_the_store_and_pack_units_aggregate(store_and_pack: dict[str, Any]) -> None:
    """Their keys bind the reference checkpoint, and verifying them from their fields
    gives the same keys (they were once refused as ``unit_key_mismatch``)."""
    root = store_and_pack["root"]
    results, paths, _ = aggregate_run(Store(root / "store"), root / "runs" / "sp")
    assert set(results.arms) >= {"agent-continuity-store", "agent-continuity-pack-cold"}
    assert paths["report"].exists()


@pytest.mark.parametrize(
    ("fault", "arm", "reason"),
    [
        ("drop_pack", "continuity-pack-cold", "does not carry the injected pack"),
        ("hide_history", "continuity-store", "offers no ConversationHistory"),
        ("fake_history", "continuity-store", "the agent answered the rest itself"),
    ],
)
def test_a_store_or_pack_the_agent_drops_is_contradicted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, arm: str, reason: str
) -> None:
    monkeypatch.setenv("TOY_FAULT", fault)
    _units(agent=str(TOY / "v1.toml"), arms=arm, trace=SMOKE.trace_id, suite="smoke",
           probe_limit=1, run="f", out=str(tmp_path), store=str(tmp_path / "store"))  # fmt: skip
    path = next((tmp_path / "runs" / "f" / "units").glob("*.json"))
    probe = msgspec.json.decode(path.read_bytes(), type=UnitRecord).probes[0]
    assert probe.status == "contradicted" and any(reason in r for r in probe.reasons)


_REAL = {"provider": "openai-chat", "reader": "openai-codex:gpt-6-mini"}


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ({"agent": "v1", "arms": "switch", **_REAL}, "is needed by a real plan"),
        ({"agent": "v1", "arms": "native,agent-switch", **_REAL}, "is needed by a real plan"),
        ({"arms": "native", "switch_model": "local:b", **_REAL}, "add --agent"),
        ({"agent": "v1", "arms": "switch", "switch_model": "local:b"}, "offline the scripted"),
        ({"agent": "v1", "arms": "native", "switch_model": "local:b", **_REAL}, "switch arm"),
        ({"agent": "v1", "arms": "switch", "switch_model": "nocolon", **_REAL}, "provider:model"),
    ],
)
def test_the_model_a_switch_switches_to_is_named_by_a_real_plan_only(
    options: dict[str, str], why: str
) -> None:
    """A real plan with the switch arm names the second model (``--switch-model``),
    however the arm is spelled; the option is refused anywhere else, and a model that
    is not provider:model is refused as every plan model is."""
    if "agent" in options:
        options = {**options, "agent": str(TOY / "v1.toml")}
    with pytest.raises(ContinuityError) as caught:
        plan_from_request(PlanRequest.of(options))
    assert caught.value.code == "plan_invalid" and caught.value.location == "--switch-model"
    assert why in caught.value.message


def test_a_real_plan_binds_and_prices_the_switch_model_and_the_store_rounds() -> None:
    """The second model is in the plan (so in its digest) and its calls in the estimate;
    the store arm's probe turn is estimated as the reference store arm's lookup rounds."""
    base = {"agent": str(TOY / "v1.toml"), **_REAL}
    switching = plan_from_request(
        PlanRequest.of({**base, "arms": "native,switch", "switch_model": "local:other"})
    )
    assert switching.switch_model == "local:other"
    models = [(c.role, c.model) for c in workload(switching).calls]
    assert set(models) == {("answer", "openai-codex:gpt-6-mini"), ("answer", "local:other")}
    assert models.count(("answer", "local:other")) == models.count(
        ("answer", "openai-codex:gpt-6-mini")
    )
    other = plan_from_request(
        PlanRequest.of({**base, "arms": "native,switch", "switch_model": "local:third"})
    )
    assert plan_digest(other) != plan_digest(switching)
    native = plan_from_request(PlanRequest.of({**base, "arms": "native"}))
    assert native.switch_model is None  # unset, it leaves the digest as it was (pins elsewhere)
    store = plan_from_request(
        PlanRequest.of({**base, "arms": "native,continuity-store", "probe_limit": 1})
    )
    planned = workload(store, [trace_named("brightline-return")])
    step = ASSUMPTIONS["tokens_per_history_round"]
    first = planned.calls[0].input_tokens  # native's one call, then the store arm's rounds
    assert [c.input_tokens for c in planned.calls] == [
        first,
        *(first + r * step for r in range(ASSUMPTIONS["history_rounds"])),
    ]
    assert planned.live_turns == 2 and planned.answer_calls == 1 + ASSUMPTIONS["history_rounds"]


def test_an_invalid_reference_pack_stops_the_pack_arm_with_its_code(tmp_path: Path) -> None:
    """The harness's failure is never blamed on the agent: no sample runs."""
    invalid = RetainedView(retained=str(tmp_path / "none"), checkpoint="0" * 64, pack="",
                           pack_status="invalid")  # fmt: skip

    async def main() -> AgentRun:
        return await drive_agent(COMPACTING, SMOKE, work=tmp_path / "w",
                                 arm="continuity-pack-cold", probe="?", reader=OfflineReader(),
                                 retained=invalid)  # fmt: skip

    with pytest.raises(ArmError) as caught:
        anyio.run(main)
    assert (
        caught.value.code == "agent_pack_invalid"
        and caught.value.location == "continuity-pack-cold"
    )
    assert not (tmp_path / "w").exists()
