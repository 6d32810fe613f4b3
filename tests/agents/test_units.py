"""`doit units --agent`: an outside agent's units in the run's ``units/`` (keyed by the
agent's fingerprint, reused from the store), aggregated and compared like any other,
the offline contract's pass, the equivalence with the reference harness's native arm,
and bad input with its codes. The module's shared run replays an original trace; the
other units replay the smoke trace (the offline contract's pass replays the originals)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from msgspec import UNSET

from continuity.agents.identity import AGENT_PROBE_PROTOCOL
from continuity.agents.manifest import load_manifest
from continuity.contract_agent import TOY_MANIFEST, check_outside_agent, start_outside_agent
from continuity.errors import ContinuityError, ObjectMissing
from continuity.interrupts import descendants
from continuity.plan.from_request import plan_from_request
from continuity.plan.plan import plan_digest
from continuity.plan.request import PlanRequest
from continuity.probes.protocol import answer_form
from continuity.processes import group_alive, process_alive
from continuity.report.aggregate import aggregate_run
from continuity.report.compare import compare_runs
from continuity.runner.units.build import build_units
from continuity.runner.units.record import UnitRecord, seal
from continuity.store import Store
from continuity.traces.suites import build_suite
from rules.units import _units
from tests.agents.test_drive import TRACE as SMOKE_TRACE

SUITE, TRACE = "smoke", "smoke-kiln-shelves"  # the smallest trace with a steer
# The module's shared run: an original trace, whose first four probes ask for both answer
# forms (an answer line, and free text for its constraints).
RUN_SUITE, RUN_TRACE = "original", "brightline-return"
LIMIT = 4


@pytest.fixture(scope="module")
def agent_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The toy's native units over one trace, four probes, and the reference native
    arm's over the same, in one store."""
    root = tmp_path_factory.mktemp("agent-units")
    options: dict[str, Any] = {"agent": str(TOY_MANIFEST), "arms": "native",
                               "trace": RUN_TRACE, "suite": RUN_SUITE, "probe_limit": LIMIT,
                               "run": "offline",
                               "out": str(root),
                               "store": str(root / "store")}  # fmt: skip
    line = _units(**options)
    store = Store(root / "store")
    records, _, _ = build_units(store, RUN_SUITE, arms="native", traces=RUN_TRACE,
                                probe_limit=LIMIT, run_dir=root / "ref")  # fmt: skip
    return {"root": root, "options": options, "line": line, "store": store, "ref": records}


def _unit(run_dir: Path) -> tuple[Path, UnitRecord]:
    path = next((run_dir / "units").glob("*.json"))
    return path, msgspec.json.decode(path.read_bytes(), type=UnitRecord)


@pytest.mark.xdist_group("agent_run")  # one worker builds the fixture
def test_the_toy_agent_gets_the_reference_native_arms_availability_labels(
    agent_run: dict[str, Any],
) -> None:
    """The toy, like the reference harness's native arm, keeps the whole conversation in
    its context: the probes' availability, read from the probe request the proxy saw,
    is the one the reference harness's probe child found."""
    reference = {
        p.probe_id: (p.availability.fact, p.availability.superseded_present,
                     [s.in_context for s in p.evidence.needle_states])
        for p in agent_run["ref"][0].probes if p.availability and p.evidence
    }  # fmt: skip
    path, record = _unit(agent_run["root"] / "runs" / "agent-toy")
    assert path.name == f"r1-{RUN_TRACE}-agent-native.json" and record.arm == "agent-native"
    toy = {
        p.probe_id: (p.availability.fact, p.availability.superseded_present,
                     [s.in_context for s in p.agent.needle_states])
        for p in record.probes if p.availability and p.agent is not UNSET
    }  # fmt: skip
    # the label, whether a superseded value was present, and each needle's state
    assert toy == reference and len(toy) == LIMIT
    assert all(p.status == "valid" for p in record.probes)
    # The owner turn carried the probe protocol's instruction through the agent to its
    # model: the offline reader answered in the form each probe's turn asks for.
    forms = {p.probe_id: answer_form(p.category) for p in record.probes}
    assert {p.answer for p in record.probes if forms[p.probe_id] == "line"} <= {"ANSWER: UNKNOWN"}
    assert {p.answer for p in record.probes if forms[p.probe_id] == "text"} <= {"UNKNOWN"}
    assert set(forms.values()) == {"line", "text"}  # both forms went through the agent
    assert record.agent is not UNSET and record.agent.adapter == "toy"
    assert all(p.agent is not UNSET and p.agent.verdict == "verified" for p in record.probes)
    assert "1 units (1 run, 0 from the store), 4 probe samples, 0 excluded" in agent_run["line"]


@pytest.mark.xdist_group("agent_run")  # one worker builds the fixture
def test_an_agent_run_aggregates_under_its_banner_and_compares(agent_run: dict[str, Any]) -> None:
    root, store = agent_run["root"], agent_run["store"]
    run_dir = root / "runs" / "agent-toy"
    results, paths, _ = aggregate_run(store, run_dir)
    assert results.arms == ["agent-native"] and results.agent is not UNSET
    assert results.agent.verified == LIMIT and results.agent.copies_unverified == 0
    assert results.probe_protocols == ["cap0-owner-turn-v2"] == [AGENT_PROBE_PROTOCOL]
    report = paths["report"].read_text()
    assert 'id="agent"' in report and "External agent." in report
    assert "Sandboxed (bubblewrap)" in report
    assert "whether every model call went through the proxy" not in report
    assert "> **External agent.** Agent: toy 0.1.0" in paths["summary"].read_text()
    shutil.copytree(run_dir, root / "runs" / "agent-toy-again")
    compared, _ = compare_runs(store, run_dir, root / "runs" / "agent-toy-again", root / "cmp")
    assert compared.slots.paired == LIMIT and compared.flips == []
    assert compared.probe_protocol == "cap0-owner-turn-v2"


def test_the_report_grades_an_agents_samples_from_the_needles_the_proxy_saw(
    tmp_path: Path,
) -> None:
    """A new session of the toy keeps only its notes: the fact is absent from the probe
    request, and the report's current-scorer grading says so (from the needle states
    kept in the unit, not from a reference sample's evidence it does not have)."""
    line = _units(agent=str(TOY_MANIFEST), arms="new_session", suite=SUITE, trace=TRACE,
                  probe_limit=1, run="n", out=str(tmp_path),
                  store=str(tmp_path / "store"))  # fmt: skip
    assert "1 units (1 run" in line
    _, record = _unit(tmp_path / "runs" / "n")
    probe = record.probes[0]
    assert probe.availability is not None and probe.availability.fact == "absent"
    assert probe.agent is not UNSET and probe.agent.needle_states
    assert probe.loss == "lost_at_boundary"
    for scorer in ("current", "original"):
        results, _, _ = aggregate_run(Store(tmp_path / "store"), tmp_path / "runs" / "n",
                                      scorer=scorer)  # fmt: skip
        cell = results.availability[SUITE]["agent-new_session"]
        assert (cell["absent"], cell["in_context"], cell["lost_at_boundary"]) == (1, 0, 1)


def test_the_banner_counts_samples_excluded_by_a_failed_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_FAULT", "rewrite_result")  # every replay fails its checks
    _units(agent=str(TOY_MANIFEST), arms="native", suite=SUITE, trace=TRACE, probe_limit=1, run="f",
           out=str(tmp_path), store=str(tmp_path / "store"))  # fmt: skip
    results, paths, _ = aggregate_run(Store(tmp_path / "store"), tmp_path / "runs" / "f")
    assert results.agent is not UNSET and results.agent.replay_failed == 1
    assert results.excluded[SUITE]["agent-native"]["replay_failed"] == 1
    assert "1 more excluded because their replay failed" in paths["report"].read_text()


def test_an_answer_that_is_not_the_models_is_labelled_and_excluded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The toy answers for its model (it replaces the proxy's text with its own): the
    sample is answer_not_from_model, excluded, kept with the reply, and counted in the
    banner; the model's own UNKNOWN was never what was scored."""
    monkeypatch.setenv("TOY_FAULT", "own_answer")
    _units(agent=str(TOY_MANIFEST), arms="native", suite=SUITE, trace=TRACE, probe_limit=1, run="c",
           out=str(tmp_path), store=str(tmp_path / "store"))  # fmt: skip
    results, paths, _ = aggregate_run(Store(tmp_path / "store"), tmp_path / "runs" / "c")
    assert results.agent is not UNSET and results.agent.not_from_model == 1
    assert results.excluded[SUITE]["agent-native"]["answer_not_from_model"] == 1
    report = paths["report"].read_text()
    assert "1 more excluded because the adapter" in report and "(answer_not_from_model)" in report
    assert "Sandboxed (bubblewrap)" in report
    record = msgspec.json.decode(
        next((tmp_path / "runs" / "c" / "units").glob("*.json")).read_bytes(), type=UnitRecord
    )
    probe = record.probes[0]
    assert probe.status == "answer_not_from_model" and probe.answer.startswith("ANSWER: the toy")
    assert probe.agent is not UNSET and probe.agent.model_reply  # what it was checked against
    assert probe.agent.model_reply != probe.answer
    # Declared in the manifest: the label stays; the banner says it was declared.
    declared = shutil.copytree(TOY_MANIFEST.parent, tmp_path / "declared")
    with (declared / "agent.toml").open("a") as manifest:
        manifest.write("post_processes = true\n")
    _units(agent=str(declared / "agent.toml"), arms="native", suite=SUITE, trace=TRACE,
           probe_limit=1, run="d", out=str(tmp_path), store=str(tmp_path / "store"))  # fmt: skip
    results, paths, _ = aggregate_run(Store(tmp_path / "store"), tmp_path / "runs" / "d")
    assert results.agent is not UNSET and (
        results.agent.not_from_model,
        results.agent.declared,
    ) == (
        1,
        1,
    )
    assert "1 from an adapter that declares it post-processes" in paths["report"].read_text()


def test_no_sandbox_is_a_different_unit_and_the_banner_says_unsandboxed(
    tmp_path: Path,
) -> None:
    common: dict[str, Any] = {"agent": str(TOY_MANIFEST), "arms": "native", "suite": SUITE,
                              "trace": TRACE, "probe_limit": 1, "out": str(tmp_path),
                              "store": str(tmp_path / "store")}  # fmt: skip
    _units(**common, run="open", no_sandbox=True)
    results, paths, _ = aggregate_run(Store(tmp_path / "store"), tmp_path / "runs" / "open")
    assert results.agent is not UNSET and results.agent.unsandboxed == 1
    report = paths["report"].read_text()
    assert "UNSANDBOXED (--no-sandbox) for 1 of 1 samples" in report
    assert "whether every model call went through the proxy (network not isolated)" in report
    line = _units(**common, run="boxed")
    assert "(1 run, 0 from the store)" in line  # the sandbox is bound into the unit key


@pytest.mark.xdist_group("agent_run")  # one worker builds the fixture
def test_a_rerun_reuses_the_stored_units_and_a_changed_agent_builds_new_ones(
    agent_run: dict[str, Any], tmp_path: Path
) -> None:
    again = _units(**agent_run["options"])
    assert "1 units (0 run, 1 from the store)" in again
    manifest = load_manifest(TOY_MANIFEST)
    print_ = manifest.fingerprint({})
    assert manifest.fingerprint({"TOY_FAULT": "no_resume"})["env"] != print_["env"]
    assert manifest.fingerprint({"UNLISTED": "x"}) == print_  # only the allowlist binds
    copy = tmp_path / "toy"
    shutil.copytree(TOY_MANIFEST.parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    edited = load_manifest(copy / "agent.toml")
    assert edited.fingerprint({}) == print_  # the same files, elsewhere
    (copy / "toy_agent.py").write_text((copy / "toy_agent.py").read_text() + "\n# edited\n")
    assert edited.fingerprint({})["sources"] != print_["sources"]
    options = {**agent_run["options"], "store": str(tmp_path / "s"), "out": str(tmp_path)}
    base = plan_digest(plan_from_request(PlanRequest.of(options)))
    assert (
        plan_digest(
            plan_from_request(PlanRequest.of({**options, "agent": str(copy / "agent.toml")}))
        )
        != base
    )


@pytest.mark.xdist_group("agent_run")  # one worker builds the fixture
def test_an_edited_agent_unit_is_refused_by_the_aggregate(
    agent_run: dict[str, Any], tmp_path: Path
) -> None:
    store = agent_run["store"]
    run_dir = tmp_path / "run"
    shutil.copytree(agent_run["root"] / "runs" / "agent-toy" / "units", run_dir / "units")
    path, record = _unit(run_dir)
    assert record.agent is not UNSET
    other = msgspec.structs.replace(record.agent, env="0" * 64)
    path.write_bytes(msgspec.json.encode(seal(msgspec.structs.replace(record, agent=other))))
    with pytest.raises(ContinuityError) as caught:
        aggregate_run(store, run_dir)
    assert caught.value.code == "unit_key_mismatch"
    answer = msgspec.structs.replace(record.probes[0], answer="edited")
    edited = msgspec.structs.replace(record, probes=[answer, *record.probes[1:]])
    path.write_bytes(msgspec.json.encode(seal(edited)))
    with pytest.raises(ContinuityError) as caught:
        aggregate_run(store, run_dir)
    assert caught.value.code == "unit_tampered"


def _toy_copy(tmp_path: Path, extra: str) -> Path:
    """The toy adapter in a folder of its own, its manifest with `extra` lines."""
    copy = tmp_path / "toy"
    shutil.copytree(TOY_MANIFEST.parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = copy / "agent.toml"
    manifest.write_text(manifest.read_text() + extra)
    return manifest


@pytest.mark.parametrize("declared", [False, True])
def test_a_copy_whose_signature_differs_is_excluded_unless_the_manifest_declares_it_volatile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declared: bool
) -> None:
    """The toy stamps the wall clock into every system prompt: each fresh copy's replay
    signature differs, so the second sample of the trace is ``copy_unverified``; a
    manifest that declares the clock volatile has its copies proven again."""
    monkeypatch.setenv("TOY_FAULT", "timestamp")
    extra = "volatile = ['Now: \\d+\\.']\n" if declared else ""
    manifest = _toy_copy(tmp_path, extra)
    line = _units(agent=str(manifest), arms="restart", suite=SUITE, trace=TRACE, probe_limit=2,
                  run="c", out=str(tmp_path), store=str(tmp_path / "store"))  # fmt: skip
    _, record = _unit(tmp_path / "runs" / "c")
    statuses = [p.status for p in record.probes]
    assert statuses == (["valid", "valid"] if declared else ["valid", "copy_unverified"]), line
    signatures = {p.agent.signature for p in record.probes if p.agent is not UNSET}
    assert len(signatures) == (1 if declared else 2)


def test_declared_capabilities_refuse_an_arm_at_plan_time_and_bind_initialize(
    tmp_path: Path,
) -> None:
    no_sessions = _toy_copy(tmp_path / "a", "[capabilities]\nsteer = \"injected\"\n"
                            "resume_after_restart = true\n")  # fmt: skip
    given: dict[str, Any] = {"suite": SUITE, "trace": TRACE, "probe_limit": 1, "run": "d",
                             "out": str(tmp_path), "store": str(tmp_path / "store")}  # fmt: skip
    with pytest.raises(ContinuityError) as caught:
        _units(agent=str(no_sessions), arms="native,new_session", **given)
    assert caught.value.code == "adapter_capability_missing:new_session"
    assert not (tmp_path / "runs" / "d").exists()  # refused before anything ran
    assert not (tmp_path / "store").exists()
    other = _toy_copy(tmp_path / "b", "[capabilities]\nsteer = \"queued\"\n"
                      "resume_after_restart = true\nnew_session = true\n")  # fmt: skip
    with pytest.raises(ContinuityError) as caught:
        _units(agent=str(other), arms="native", **given)
    assert caught.value.code == "adapter_protocol_error"
    assert "steer" in caught.value.message and "queued" in caught.value.message


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ("volatile = ['(unclosed']\n", "volatile"),
        ("sources = ['/etc/*']\n", "sources"),
        ("sources = ['../*.py']\n", "sources"),
        ('[capabilities]\nsteer = "sometimes"\n', "capabilities.steer"),
        ("[capabilities]\nteleport = true\n", "capabilities.teleport"),
        ("api = []\n", "api"),
        ('api = ["smoke-signals"]\n', "api.0"),
    ],
)
def test_a_bad_manifest_field_is_refused_with_its_location(
    tmp_path: Path, extra: str, where: str
) -> None:
    manifest = _toy_copy(tmp_path, extra)
    if extra.startswith("api"):  # the toy's own api line gives way to the bad one
        text = manifest.read_text().replace('api = ["openai-chat"]\n', "", 1)
        manifest.write_text(text)
    with pytest.raises(ContinuityError) as caught:
        load_manifest(manifest)
    assert caught.value.code == "agent_manifest_invalid"
    assert caught.value.location == f"{manifest}:{where}"


@pytest.mark.xdist_group("agent_run")  # one worker builds the fixture
def test_aggregate_only_aggregates_the_agents_run(agent_run: dict[str, Any]) -> None:
    line = _units(**{**agent_run["options"], "aggregate_only": True})
    assert "ran nothing; 1 units aggregated" in line and "agent-toy" in line


def test_the_contract_pass_fails_with_its_code_when_a_boundary_is_contradicted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOY_FAULT", "no_resume")
    store = Store(tmp_path / "store")
    item = next(i for i in build_suite(store, SUITE, out_dir=tmp_path).items
                if i.trace_id == TRACE)  # fmt: skip
    with pytest.raises(ContinuityError) as caught:
        check_outside_agent(store, [(item.key, SMOKE_TRACE)], tmp_path / "run")
    assert caught.value.code == "agent_contract_failed"
    assert f"{TRACE}/agent-restart/" in caught.value.message
    assert "contradicted" in caught.value.message
    # the pass has a progress line of its own, one per sample (plain: not a terminal)
    lines = [line for line in capsys.readouterr().out.splitlines() if "outside agent" in line]
    assert len(lines) == 3 and lines[-1].startswith("outside agent original [3/3]"), lines


def test_the_pass_in_a_process_of_its_own_raises_its_code_and_relays_its_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOY_FAULT", "no_resume")  # the child inherits it
    store = Store(tmp_path / "store")
    item = next(i for i in build_suite(store, SUITE, out_dir=tmp_path).items
                if i.trace_id == TRACE)  # fmt: skip
    agent = start_outside_agent(store, [(item.key, item.digest)], tmp_path / "run")
    try:
        with pytest.raises(ContinuityError) as caught:
            agent.result()
    finally:
        agent.stop()
    assert caught.value.code == "agent_contract_failed"
    assert f"{TRACE}/agent-restart/" in caught.value.message
    assert caught.value.location.endswith("report.html")
    lines = [line for line in capsys.readouterr().out.splitlines() if "outside agent" in line]
    assert len(lines) == 3 and lines[-1].startswith("outside agent original [3/3]"), lines


def test_the_pass_in_a_process_of_its_own_keeps_the_stores_code(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    agent = start_outside_agent(store, [("a-key", "0" * 64)], tmp_path / "run")
    with pytest.raises(ObjectMissing) as caught:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the contract's check between its stages:
            agent.check()  # nothing while the pass runs, its error once it has ended
            time.sleep(0.05)
    assert caught.value.code == "object_missing"
    assert caught.value.location.endswith("0" * 60)


def test_stopping_the_pass_ends_its_process_group(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    item = next(i for i in build_suite(store, SUITE, out_dir=tmp_path).items
                if i.trace_id == TRACE)  # fmt: skip
    agent = start_outside_agent(store, [(item.key, item.digest)], tmp_path / "run")
    assert agent.pid is not None and group_alive(agent.pid)
    # wait until an adapter runs under the pass (its sandbox, its interpreter ...)
    deadline = time.monotonic() + 60
    while len(running := descendants(agent.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(running) >= 2, running
    agent.stop()
    deadline = time.monotonic() + 10
    while any(map(process_alive, running)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_alive(agent.pid)
    assert not [
        pid for pid in running if process_alive(pid)
    ]  # its adapters too, whatever their session


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"arms": "native,compaction-1"}, "arm_unknown"),
        ({"real": True}, "real_refused_ci"),
        ({"trace": "no-such-trace"}, "trace_unknown"),
        ({"agent": "missing.toml"}, "agent_manifest_invalid"),
        ({"judge": "openai-chat:gpt-x"}, "plan_invalid"),
        ({"probe_mode": "lookup-allowed-v1"}, "plan_invalid"),
        ({"extraction_model": "openai-chat:gpt-x"}, "plan_invalid"),
        ({"cost_cap": "5"}, "real_flag_required"),
        ({"request_timeout": 60.0}, "real_flag_required"),
        ({"provider": "openai-chat"}, "real_flag_required"),
    ],
)
def test_bad_agent_units_input_is_refused_with_a_code(
    tmp_path: Path, options: dict[str, object], code: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "")  # real mode is refused where a CI variable exists
    given: dict[str, object] = {"agent": str(TOY_MANIFEST), "run": "a", "out": str(tmp_path),
                                "store": str(tmp_path / "store")}  # fmt: skip
    with pytest.raises(ContinuityError) as caught:
        _units(**{**given, **options})
    assert caught.value.code == code


def test_traces_built_at_once_give_the_same_units_as_one_after_another(tmp_path: Path) -> None:
    """`build_agent_units(workers=N)` builds N traces at once (the contract's pass does);
    each trace's units in plan order, so the unit files are the same bytes."""
    from continuity.agents.identity import identity
    from continuity.agents.sandbox import sandbox_problem
    from continuity.plan.plan import build_plan
    from continuity.runner.agent_units import AgentUnitPlan, build_agent_units
    from continuity.traces.schema import decode_trace

    manifest = load_manifest(TOY_MANIFEST)
    agent = identity(manifest, sandboxed=sandbox_problem() is None)
    plan = AgentUnitPlan.of(build_plan(arms="native", probe_limit=1, agent=agent), manifest)
    files = []
    for workers in (1, 2):
        store = Store(tmp_path / f"store-{workers}")
        items = build_suite(store, "original", out_dir=tmp_path / f"out-{workers}").items[:2]
        traces = [(i.key, decode_trace(store.get_blob(i.digest))) for i in items]
        run = tmp_path / f"run-{workers}"
        build = build_agent_units(store, plan, traces, run, workers=workers)
        assert build.built == 2 and [r.trace_id for r in build.records] == [
            i.trace_id for i in items
        ]
        files.append({p.name: p.read_bytes() for p in (run / "units").glob("*.json")})
    assert len(files[0]) == 2 and files[0] == files[1]
