"""Fixed-budget sizing of a holdout source (``doit lookup_budget --fixed-budget-sha256``).

An invented source (`tests.runner.fixed_budget_source`: four selected conversations of
15 probes each) is frozen and sized once for the module, through real probe children,
replays and loopback MCP calls in a private scratch store; nothing is mocked. The seed's
example, 6 roles x 4 conversations x 15 probes = 360 slots, is that sizing. The other
tests size a smaller selection, or read and edit the module's ``budget.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec
import pytest
from doit.exceptions import TaskFailed

from continuity.arms import ARMS
from continuity.digest import code_digest
from continuity.errors import ContinuityError, LookupError_, UsageError
from continuity.holdout import (
    HoldoutSource,
    holdout_binding,
    load_frozen,
    select_frozen,
    selected_traces,
)
from continuity.lookup.budget import CALL_CAP
from continuity.lookup.fixed_budget import (
    FixedBudget,
    fixed_budget_bytes,
    fixed_budget_sha256,
    load_fixed_budget,
    slot_with_derived,
)
from continuity.lookup.fixed_budget_classify import CLASSIFIER_MODULES, envelope_metrics
from continuity.lookup.policy import LOOKUP_PROTOCOL, default_policy_path, load_policy
from continuity.lookup.reader import binding_models
from continuity.lookup.soul import KNOWN_SOULS, read_known_soul
from continuity.memory.pack import PACK_RETRIEVAL_GUIDANCE
from continuity.plan.holdout_pricing import ReservationTerms, price_holdout, priced_slots
from continuity.plan.lookup_slots import EstimateRole
from continuity.plan.pricing import load_catalog
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.roles.table import ROLES
from continuity.runner.fixed_budget.measure import SLOT_CODE, SLOT_KIND, slot_spec
from continuity.runner.fixed_budget.scratch import SCRATCH_PREFIX
from continuity.runner.fixed_budget.sizing import (
    FixedBudgetRequest,
    FixedBudgetResult,
    fixed_budget_policy,
    holdout_jobs,
    run_fixed_budget,
)
from continuity.store import Store
from continuity.traces.schema import (
    AbstentionExpectation,
    FreeRecallExpectation,
    OwnerMessage,
    ToolIdentifierExpectation,
    ToolResult,
    iter_turns,
)
from rules.lookup import task_lookup_budget
from tests.conftest import REPO, store_files
from tests.holdout.toy import doit_args
from tests.runner.fixed_budget_source import FAMILIES, fixed_trace, frozen

# One worker runs this module: its module fixture is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("fixed-budget")

ALL_ROLES = [
    EstimateRole(name=r.name, arm=r.arm, code=r.code, soul_file=r.soul_file) for r in ROLES
]
TWO_ROLES = [r for r in ALL_ROLES if r.name in ("native", "pack")]
FROZEN = default_policy_path()
FROZEN_SHA = hashlib.sha256(FROZEN.read_bytes()).hexdigest()
SEED = 17


def request(output: Path, source: HoldoutSource, **more: Any) -> FixedBudgetRequest:
    return FixedBudgetRequest(
        output=output,
        source=source,
        seed=more.pop("seed", SEED),
        per_group=more.pop("per_group", None),
        fixed_budget_sha256=more.pop("fixed_budget_sha256", FROZEN_SHA),
        **more,
    )


@dataclass
class Sized:
    root: Path
    store: Store
    source: HoldoutSource
    result: FixedBudgetResult
    before: dict[str, bytes]
    recorded: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def sized(tmp_path_factory: pytest.TempPathFactory) -> Sized:
    root = tmp_path_factory.mktemp("fixed")
    store = Store(root / "store")
    source = frozen(store, root)
    before = store_files(store)
    recorded: list[str] = []
    result = run_fixed_budget(
        store,
        request(root / "out", source),
        ALL_ROLES,
        scratch_parent=root / "scratch",
        on_slot=lambda key, record: recorded.append(key),
    )
    return Sized(root, store, source, result, before, recorded)


def holdout_strings() -> list[str]:
    """Every question, answer and conversation text of the invented source."""
    found: list[str] = []
    for family_id, _, plant, friend, stem in FAMILIES:
        trace = fixed_trace(family_id, plant, friend, stem)
        found += [plant, friend]
        for probe in trace.probes:
            found.append(probe.text)
            expectation = probe.expectation
            if isinstance(expectation, ToolIdentifierExpectation):
                found.append(expectation.answer.value)
            elif isinstance(expectation, FreeRecallExpectation):
                found.append(expectation.answer)
            elif isinstance(expectation, AbstentionExpectation):
                found += list(expectation.never_mentioned)
        for _, _, turn in iter_turns(trace):
            if isinstance(turn, ToolResult):
                found += [line for line in turn.output.splitlines() if line.strip()]
            elif isinstance(turn, OwnerMessage):
                found.append(turn.text)
    return found


# -- the seed's example ----------------------------------------------------------------


def test_the_seeds_example_is_six_roles_by_four_conversations_by_fifteen_probes(
    sized: Sized,
) -> None:
    budget = sized.result.budget
    assert len(budget.slots) == 6 * 4 * 15 == 360
    assert Counter(s.role for s in budget.slots) == {r.name: 60 for r in ALL_ROLES}
    assert list(dict.fromkeys(s.trace_id for s in budget.slots)) == list(budget.holdout.selected)
    assert len(budget.holdout.selected) == 4
    per = Counter((s.role, s.trace_id) for s in budget.slots)
    assert set(per.values()) == {15}
    assert Counter(s.kind for s in budget.slots) == {"reference": 6 * 4 * 3, "envelope": 6 * 4 * 12}
    # Four (arm, soul) variants are measured; roles that differ only in checkout share one.
    assert (sized.result.measured, sized.result.reused, sized.result.failed) == (240, 0, 0)
    assert len(sized.recorded) == len(set(sized.recorded)) == 240
    assert not list((sized.root / "scratch").iterdir())  # the scratch store is gone


def test_every_slot_records_its_initial_context_and_initial_admission(sized: Sized) -> None:
    budget = sized.result.budget
    for slot in budget.slots:
        assert slot.status == "measured" and slot.failure is None
        assert slot.first_request_bytes > 0
        assert slot.initial_context_tokens == -(-slot.first_request_bytes // 3)
        admission = slot.initial_admission
        assert admission is not None
        assert (admission.tokens, admission.window_limit_tokens) == (
            slot.initial_context_tokens,
            272_000 - 16_000,
        )
        assert admission.admission_cap_tokens == 400_000_000 and admission.admitted
        if slot.kind == "envelope":
            assert (slot.calls, slot.bytes, slot.responses) == envelope_metrics(8, 126_976, 10)
        else:
            assert slot.discovered and slot.verified and 1 <= slot.calls <= 8
            assert slot.bytes == sum(slot.responses) and slot.classification == "feasible"
        assert slot.cold_tokens > 0 if ARMS[slot.arm].pack else slot.cold_tokens == 0
    by = {(s.role, s.trace_id, s.probe_id): s for s in budget.slots}
    extra = len(read_known_soul("continuity-soul-v2.md").core) - len(
        read_known_soul("continuity-soul-v1.md").core
    )
    for (role, trace, probe), slot in by.items():
        if role == "pack-only":  # the same measurement as pack: only the checkout differs
            twin = by[("pack", trace, probe)]
            assert msgspec.structs.replace(twin, role=role) == slot
        if role == "native-soul":  # S1 carries more of a soul into the first request
            assert (
                slot.first_request_bytes >= by[("native", trace, probe)].first_request_bytes + extra
            )
    # The classes follow from the metrics: a native full-budget envelope starts at the
    # native floor and returns every budget byte, so its peak crosses the window.
    for slot in budget.slots:
        if slot.kind == "envelope" and slot.arm == "native-lookup":
            start = max(slot.initial_context_tokens, 150_000)
            assert slot.peak_request_tokens == start + 126_976 + 300 * 10 > 256_000
            assert slot.classification == "context_bound"
        elif slot.kind == "envelope":
            start = max(slot.initial_context_tokens, slot.cold_tokens + 12_000)
            assert slot.peak_request_tokens == start + 126_976 + 300 * 10 <= 256_000
            assert slot.classification == "feasible"


def test_budget_json_binds_the_source_selection_reader_protocols_code_and_policy(
    sized: Sized,
) -> None:
    result, store = sized.result, sized.store
    data = result.path.read_bytes()
    assert result.sha256 == hashlib.sha256(data).hexdigest()
    assert load_fixed_budget(result.path, result.sha256) == result.budget
    budget = result.budget
    frozen_source = load_frozen(store, sized.source)
    binding = holdout_binding(frozen_source, select_frozen(frozen_source, SEED))
    assert msgspec.to_builtins(budget.holdout) == msgspec.to_builtins(binding)
    assert (budget.lookup_protocol, budget.probe_protocol) == (LOOKUP_PROTOCOL, PROBE_PROTOCOL)
    assert budget.classifier_code == code_digest(CLASSIFIER_MODULES)
    assert budget.code.measurement_code == code_digest(SLOT_CODE)
    assert len(budget.code.commit) == 40 or budget.code.commit == "unknown"
    terms = budget.budget
    policy = load_policy()
    assert (terms.policy_sha256, terms.policy_file) == (FROZEN_SHA, FROZEN.name)
    assert (terms.calls, terms.bytes, terms.rounds) == (policy.calls, policy.bytes, 10)
    assert (terms.calls, terms.bytes) == (8, 126_976)
    assert (terms.probe_deadline_seconds, terms.cleanup_seconds) == (600.0, 60.0)
    assert (terms.turn_seconds, terms.watchdog_seconds) == (690.0, 720.0)
    models = binding_models("default")
    assert (budget.reader.binding, budget.reader.reader, budget.reader.alternate) == (
        "default",
        *models,
    )
    guidance = -(-(len(PACK_RETRIEVAL_GUIDANCE.encode()) + 1) // 3)
    for role, bound in zip(ROLES, budget.roles, strict=True):
        assert (bound.name, bound.arm, bound.code, bound.soul_file) == (
            role.name,
            role.arm,
            role.code,
            role.soul_file,
        )
        assert (bound.soul_sha256, bound.soul_core_sha256) == KNOWN_SOULS[role.soul_file]
        assert bound.measured_code == "Rpack"
        assert bound.guidance_allowance_tokens == (guidance if ARMS[role.arm].pack else 0)
    ref = store.get_ref(result.ref)
    assert ref is not None and result.ref == f"lookup/fixed-budgets/{result.sha256}"
    assert [store.get_blob(o.digest) for o in ref.objects] == [data]
    assert sorted(ref.actions) == sorted(sized.recorded)
    assert {store.get_action(key).kind for key in ref.actions} == {SLOT_KIND}  # type: ignore[union-attr]


def test_nothing_of_the_holdout_reaches_the_output_or_the_records(sized: Sized) -> None:
    strings = holdout_strings()
    assert len(strings) > 100
    outputs = {
        name: (sized.result.path.parent / name).read_bytes()
        for name in ("budget.json", "summary.md")
    }
    added = {k: v for k, v in store_files(sized.store).items() if k not in sized.before}
    assert len(added) > 240  # every record's blob and action entry, the ref, budget.json
    for where, data in {**outputs, **added}.items():
        text = data.decode("utf-8", errors="replace")
        leaked = [s for s in strings if s in text]
        assert not leaked, (where, leaked[:3])


def test_a_rerun_reuses_every_record_and_reproduces_budget_json(sized: Sized) -> None:
    scratch = sized.root / "scratch-again"
    started = time.perf_counter()
    again = run_fixed_budget(
        sized.store, request(sized.root / "again", sized.source), ALL_ROLES, scratch_parent=scratch
    )
    assert (again.measured, again.reused, again.failed) == (0, 240, 0)
    assert again.path.read_bytes() == sized.result.path.read_bytes()
    assert again.sha256 == sized.result.sha256
    assert not scratch.exists()  # nothing to measure: no scratch store, no worker
    assert time.perf_counter() - started < 30


# -- classes recomputed on read ------------------------------------------------------------


def _write(budget: FixedBudget | dict[str, Any], path: Path) -> tuple[Path, str]:
    data = (
        fixed_budget_bytes(budget)
        if isinstance(budget, FixedBudget)
        else json.dumps(budget).encode()
    )
    path.write_bytes(data)
    return path, fixed_budget_sha256(data)


def _refused(path: Path, sha: str) -> LookupError_:
    with pytest.raises(LookupError_) as err:
        load_fixed_budget(path, sha)
    return err.value


def test_an_edited_class_is_refused_and_an_edited_metric_is_reclassified(
    sized: Sized, tmp_path: Path
) -> None:
    budget = sized.result.budget
    index = next(i for i, s in enumerate(budget.slots) if s.kind == "envelope" and s.role == "pack")
    slot = budget.slots[index]
    at = f"$.slots[{index}]"

    def edited(**changes: Any) -> FixedBudget:
        slots = list(budget.slots)
        slots[index] = msgspec.structs.replace(slot, **changes)
        return msgspec.structs.replace(budget, slots=slots)

    # The class alone.
    path, sha = _write(edited(classification="context_bound"), tmp_path / "class.json")
    err = _refused(path, sha)
    assert (err.code, err.location) == (
        "lookup_policy_class_mismatch",
        f"{path}:{at}.classification",
    )
    # A recorded metric alone: its derived metrics no longer follow.
    path, sha = _write(edited(first_request_bytes=900_000), tmp_path / "metric.json")
    err = _refused(path, sha)
    assert (err.code, err.location) == (
        "lookup_policy_metrics_mismatch",
        f"{path}:{at}.initial_context_tokens",
    )
    # The metric with everything it gives: the slot reads back as the class it gives.
    moved = slot_with_derived(
        msgspec.structs.replace(slot, first_request_bytes=900_000), 8, 126_976
    )
    slots = list(budget.slots)
    slots[index] = moved
    path, sha = _write(msgspec.structs.replace(budget, slots=slots), tmp_path / "moved.json")
    read = load_fixed_budget(path, sha).slots[index]
    assert read.classification == "context_bound" and slot.classification == "feasible"
    assert read.initial_admission is not None and not read.initial_admission.admitted
    assert read.initial_admission.tokens == 300_000
    # An envelope is the budget's, never fewer calls or bytes.
    path, sha = _write(edited(calls=7), tmp_path / "envelope.json")
    err = _refused(path, sha)
    assert (err.code, err.location) == ("lookup_policy_metrics_mismatch", f"{path}:{at}.responses")


def test_a_sizing_of_another_protocol_or_classifier_and_a_bad_file_are_refused(
    sized: Sized, tmp_path: Path
) -> None:
    budget = sized.result.budget
    cases: list[tuple[FixedBudget | dict[str, Any], str]] = [
        (msgspec.structs.replace(budget, lookup_protocol="lookup-allowed-v2"), "protocol"),
        (msgspec.structs.replace(budget, probe_protocol="probe-protocol-v9"), "protocol"),
        (msgspec.structs.replace(budget, classifier_code="0" * 64), "code"),
    ]
    codes = {"protocol": "lookup_policy_protocol_mismatch", "code": "lookup_policy_code_mismatch"}
    for i, (edited, what) in enumerate(cases):
        path, sha = _write(edited, tmp_path / f"binding-{i}.json")
        err = _refused(path, sha)
        assert (err.code, err.location) == (codes[what], str(path))
    raw = msgspec.to_builtins(budget)
    invalid: list[dict[str, Any]] = [
        {**raw, "schema": "continuity-lookup-budget-v2"},
        {**raw, "slots": [{**raw["slots"][0], "role": "nobody"}]},
        {**raw, "slots": [raw["slots"][0], raw["slots"][0]]},
        {**raw, "budget": {**raw["budget"], "calls": CALL_CAP + 1}},
        {**raw, "budget": {**raw["budget"], "rounds": 8}},
        {**raw, "extra": 1},
    ]
    for i, edited_raw in enumerate(invalid):
        path, sha = _write(edited_raw, tmp_path / f"invalid-{i}.json")
        assert _refused(path, sha).code == "lookup_policy_invalid", i
    path = sized.result.path
    assert _refused(path, "f" * 64).code == "lookup_policy_sha256_mismatch"
    assert _refused(path, "  ").code == "lookup_policy_sha256_required"
    assert _refused(tmp_path / "missing.json", "f" * 64).code == "lookup_policy_invalid"


# -- failures, interruption, kills ----------------------------------------------------------


def test_a_failed_child_is_unknown_blocks_pricing_and_is_measured_again(
    sized: Sized, tmp_path: Path
) -> None:
    store = Store(tmp_path / "store")
    source = frozen(store, tmp_path)
    failed = run_fixed_budget(
        store,
        request(tmp_path / "failed", source, per_group=1),
        TWO_ROLES,
        scratch_parent=tmp_path / "scratch",
        watchdog_seconds=0.001,  # the parent's watchdog kills every probe child at once
    )
    slots = failed.budget.slots
    assert len(slots) == 2 * 2 * 15 and (failed.measured, failed.failed) == (0, 60)
    assert {(s.status, s.failure, s.classification, s.cause) for s in slots} == {
        ("failed", "child_watchdog", "unknown", "child_watchdog")
    }
    assert load_fixed_budget(failed.path, failed.sha256) == failed.budget  # recomputed
    ref = store.get_ref(failed.ref)
    assert ref is not None and ref.actions == []  # a failure is never stored
    terms = ReservationTerms(byte_budget=126_976, rounds=10, output_limit=128_000)
    priced = price_holdout(priced_slots(slots), load_catalog(), failed.budget.reader.reader, terms)
    assert (priced.status, priced.code, priced.cap_usd) == (
        "blocked",
        "lookup_pricing_blocked",
        None,
    )
    assert "60 slots have unknown feasibility" in priced.reasons
    assert not list((tmp_path / "scratch").iterdir())
    again = run_fixed_budget(
        store,
        request(tmp_path / "again", source, per_group=1),
        TWO_ROLES,
        scratch_parent=tmp_path / "scratch",
    )
    assert (again.measured, again.reused, again.failed) == (60, 0, 0)
    assert {s.classification for s in again.budget.slots} <= {"feasible", "context_bound"}


class Interrupted(Exception):
    pass


def test_measuring_that_fails_removes_its_scratch_and_a_rerun_resumes(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    source = frozen(store, tmp_path)
    stored: list[str] = []

    def stop_after_five(key: str, record: object) -> None:
        stored.append(key)
        if len(stored) == 5:
            raise Interrupted

    with pytest.raises(Interrupted):
        run_fixed_budget(
            store,
            request(tmp_path / "first", source, per_group=1),
            TWO_ROLES,
            scratch_parent=tmp_path / "scratch",
            on_slot=stop_after_five,
        )
    assert not list((tmp_path / "scratch").iterdir())  # removed on failure too
    assert not (tmp_path / "first").exists()
    again = run_fixed_budget(
        store,
        request(tmp_path / "again", source, per_group=1),
        TWO_ROLES,
        scratch_parent=tmp_path / "scratch",
    )
    assert (again.measured, again.reused, again.failed) == (60 - 5, 5, 0)


_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from continuity.holdout import HoldoutSource
    from continuity.plan.lookup_slots import EstimateRole
    from continuity.runner.fixed_budget.sizing import FixedBudgetRequest, run_fixed_budget
    from continuity.store import Store

    store, manifest, sha, spec, output, scratch, budget = sys.argv[1:8]
    soul = "continuity-soul-v1.md"
    roles = [
        EstimateRole(name="native", arm="native-lookup", code="R0", soul_file=soul),
        EstimateRole(name="pack", arm="continuity-pack-cold", code="R0", soul_file=soul),
    ]
    request = FixedBudgetRequest(
        output=Path(output), source=HoldoutSource(Path(manifest), sha, Path(spec)),
        seed=17, per_group=1, fixed_budget_sha256=budget,
    )
    def tick(done, total, what, state):
        print(f"job {done} {state}", flush=True)
    run_fixed_budget(
        Store(Path(store)), request, roles, scratch_parent=Path(scratch), progress=tick
    )
    """
)


def test_a_killed_sizing_resumes_and_its_scratch_is_swept(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    source = frozen(store, tmp_path)
    scratch = tmp_path / "scratch"
    args = [str(store.root), str(source.manifest), source.manifest_sha256, str(source.spec)]
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, *args, str(tmp_path / "killed"), str(scratch), FROZEN_SHA],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert child.stdout is not None
    try:
        line = child.stdout.readline()  # the first job's records are stored
        assert line.startswith("job 1 15 measured"), line
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
    left = list(scratch.iterdir())
    assert [p.name.startswith(f"{SCRATCH_PREFIX}{child.pid}-") for p in left] == [True]
    again = run_fixed_budget(
        store, request(tmp_path / "again", source, per_group=1), TWO_ROLES, scratch_parent=scratch
    )
    assert again.reused >= 15 and again.measured + again.reused == 60 and again.failed == 0
    assert not list(scratch.iterdir())  # the killed run's scratch was swept, ours removed


# -- keys ---------------------------------------------------------------------------------


def test_each_input_of_a_slot_record_moves_its_key(sized: Sized) -> None:
    frozen_source = load_frozen(sized.store, sized.source)
    selection = select_frozen(frozen_source, SEED)
    traces = selected_traces(sized.store, frozen_source, selection)
    souls = [(role, read_known_soul(role.soul_file)) for role in ALL_ROLES]
    jobs = holdout_jobs(sized.store, traces, souls)
    assert len(jobs) == 4 * 4  # conversations x distinct (arm, soul)
    job, other = jobs[0], jobs[4]
    probe = job.probes[0]
    models = binding_models("default")
    terms = sized.result.budget.budget
    base = slot_spec(job, probe, models, terms)
    soul_s1 = read_known_soul("continuity-soul-v2.md")
    variants = {
        "trace": slot_spec(other, probe, models, terms),
        "arm": slot_spec(jobs[1], probe, models, terms),
        "probe": slot_spec(job, job.probes[1], models, terms),
        "soul": slot_spec(replace(job, soul=soul_s1), probe, models, terms),
        "reader": slot_spec(job, probe, binding_models("alternate"), terms),
        "protocol": slot_spec(job, probe, models, terms, ("lookup-allowed-v2", PROBE_PROTOCOL)),
        "calls": slot_spec(job, probe, models, msgspec.structs.replace(terms, calls=9)),
        "bytes": slot_spec(job, probe, models, msgspec.structs.replace(terms, bytes=1024)),
        "rounds": slot_spec(job, probe, models, msgspec.structs.replace(terms, rounds=12)),
        "policy": slot_spec(
            job, probe, models, msgspec.structs.replace(terms, policy_sha256="0" * 64)
        ),
    }
    keys = {name: spec.key() for name, spec in variants.items()}
    assert len(set(keys.values()) | {base.key()}) == len(keys) + 1
    assert base.code == code_digest(SLOT_CODE) and base.kind == SLOT_KIND
    assert base.inputs["trace"] == job.trace_key
    # Where the scratch store lives shapes no measured value: no key binds it.
    assert "continuity.runner.fixed_budget.scratch" not in SLOT_CODE


# -- the fixed budget and the command's refusals ---------------------------------------------


def test_the_fixed_budget_is_a_frozen_policy_named_by_its_sha256(tmp_path: Path) -> None:
    path, policy = fixed_budget_policy(FROZEN_SHA)
    assert (path, policy.calls, policy.bytes) == (FROZEN, 8, 126_976)
    copy = tmp_path / "another-frozen.json"
    copy.write_bytes(FROZEN.read_bytes())
    assert fixed_budget_policy(FROZEN_SHA, copy)[0] == copy
    refusals: list[tuple[Callable[[], object], str]] = [
        (lambda: fixed_budget_policy("0" * 64), "lookup_fixed_budget_unknown"),
        (lambda: fixed_budget_policy("not-a-sha"), "lookup_fixed_budget_unknown"),
        (lambda: fixed_budget_policy("0" * 64, copy), "lookup_policy_sha256_mismatch"),
    ]
    # an earlier frozen file (schema v1: no protocol binding) gives only its limits
    for name in ("budget-v1.json", "budget-v2.json"):
        legacy = FROZEN.with_name(name)
        path, limits = fixed_budget_policy(hashlib.sha256(legacy.read_bytes()).hexdigest())
        assert (path, limits.calls, limits.bytes) == (legacy, 8, 126_976)
    broken = tmp_path / "out-of-range.json"
    broken.write_text('{"schema": "continuity-lookup-budget-v1", "calls": 0, "bytes": 1}')
    refusals.append(
        (
            lambda: fixed_budget_policy(hashlib.sha256(broken.read_bytes()).hexdigest(), broken),
            "lookup_policy_invalid",
        )
    )
    for call, code in refusals:
        with pytest.raises(ContinuityError) as err:
            call()
        assert err.value.code == code


def run_task(**options: Any) -> TaskFailed | None:
    action = task_lookup_budget()["actions"][0]
    return action(**{"fixed_budget_sha256": None, **options})


def source_options(source: HoldoutSource) -> dict[str, Any]:
    return {
        "manifest": str(source.manifest),
        "manifest_sha256": source.manifest_sha256,
        "statistical_spec": str(source.spec),
    }


def test_every_refusal_of_the_command_has_its_code(sized: Sized, tmp_path: Path) -> None:
    full = {**source_options(sized.source), "store": str(sized.store.root), "selection_seed": SEED}
    out = str(tmp_path / "new")
    existing = tmp_path / "exists"
    existing.mkdir()
    cases: list[tuple[dict[str, Any], str]] = [
        # An empty sha256 is refused before any workload or source option is looked at.
        (
            {"fixed_budget_sha256": "   ", "manifest": "x", "suites": "nope"},
            "lookup_empty_fixed_budget_sha256",
        ),
        ({"fixed_budget_sha256": "", "output": out}, "lookup_empty_fixed_budget_sha256"),
        ({"fixed_budget_sha256": FROZEN_SHA, "output": out}, "holdout_source_incomplete"),
        (
            {"fixed_budget_sha256": FROZEN_SHA, "manifest": "m", "output": out},
            "holdout_source_incomplete",
        ),
        ({**full, "output": out}, "lookup_fixed_budget_required"),
        ({"policy": str(FROZEN), "output": out}, "lookup_fixed_budget_required"),
        ({"selection_seed": 3, "output": out}, "holdout_source_incomplete"),
        ({"per_group": 1, "output": out}, "holdout_source_incomplete"),
        (
            {**full, "fixed_budget_sha256": FROZEN_SHA, "suites": "original", "output": out},
            "lookup_legacy_option_refused",
        ),
        (
            {**full, "fixed_budget_sha256": FROZEN_SHA, "seeds": "101", "output": out},
            "lookup_legacy_option_refused",
        ),
        ({**full, "fixed_budget_sha256": FROZEN_SHA}, "lookup_output_required"),
        (
            {**full, "fixed_budget_sha256": FROZEN_SHA, "output": str(existing)},
            "lookup_output_exists",
        ),
        ({**full, "fixed_budget_sha256": "0" * 64, "output": out}, "lookup_fixed_budget_unknown"),
        (
            {
                **full,
                "fixed_budget_sha256": FROZEN_SHA,
                "policy": str(tmp_path / "nope.json"),
                "output": out,
            },
            "lookup_policy_invalid",
        ),
        (
            {**full, "fixed_budget_sha256": FROZEN_SHA, "selection_seed": -1, "output": out},
            "holdout_selection_seed_required",
        ),
        (
            {**full, "fixed_budget_sha256": FROZEN_SHA, "manifest_sha256": "f" * 64, "output": out},
            "holdout_manifest_sha256_mismatch",
        ),
    ]
    for options, code in cases:
        failed = run_task(**options)
        assert isinstance(failed, TaskFailed), (options, code)
        assert str(failed.message).startswith(f"{code}:"), (code, failed.message)
    assert not (tmp_path / "new").exists()
    # A scratch store inside the user's store is refused before anything is measured (the
    # alternate reader binding has no stored record, so it must measure).
    with pytest.raises(UsageError) as err:
        run_fixed_budget(
            sized.store,
            request(tmp_path / "inside", sized.source, binding="alternate"),
            ALL_ROLES,
            scratch_parent=sized.store.root / "scratch",
        )
    assert err.value.code == "lookup_scratch_root_invalid"
    assert not (sized.store.root / "scratch").exists()


def test_doit_lookup_budget_prints_the_sha256_estimate_quotes(sized: Sized, tmp_path: Path) -> None:
    output = tmp_path / "sizing"
    env = {
        **os.environ,
        "CONTINUITY_STORE": str(sized.store.root),
        "CONTINUITY_OUT": str(tmp_path / "o"),
    }
    env.pop("CI", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "doit",
            "lookup_budget",
            "--fixed-budget-sha256",
            FROZEN_SHA,
            *doit_args(sized.source),
            "--selection-seed",
            str(SEED),
            "--output",
            str(output),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sha = hashlib.sha256((output / "budget.json").read_bytes()).hexdigest()
    assert sha == sized.result.sha256
    summary, where = done.stdout.strip().splitlines()[-2:]
    assert "360 slots (6 roles x 4 conversations x their probes)" in summary
    assert "0 slot records measured, 240 reused from the store, 0 failed" in summary
    path = output / "budget.json"
    assert where == (
        f"budget.json in {path} (sha256 {sha}); use it with --lookup-policy {path} "
        f"--lookup-policy-sha256 {sha}"
    )


def test_reader_model_names_the_paid_reader_and_the_measurement_is_the_same(
    sized: Sized, tmp_path: Path
) -> None:
    """`doit lookup_budget --reader-model`: the sizing prices that reader; the slots are
    measured (here reused from a copy of the store) by the scripted binding as before."""
    store = Store(tmp_path / "store")
    shutil.copytree(sized.store.root, store.root, dirs_exist_ok=True)
    result = run_fixed_budget(
        store,
        request(tmp_path / "out", sized.source, reader_model="openai:gpt-test"),
        ALL_ROLES,
        scratch_parent=tmp_path / "scratch",
    )
    before = sized.result.budget
    assert result.budget.reader.reader == "openai:gpt-test"
    assert result.budget.reader.binding == before.reader.binding == "default"
    assert result.budget.reader.alternate == before.reader.alternate
    assert result.budget.slots == before.slots and result.measured == 0


def test_a_reader_model_that_is_not_provider_model_is_coded(tmp_path: Path) -> None:
    from continuity.commands.lookup_sizing import LookupBudgetRequest, check_reader_model
    from continuity.errors import UsageError

    for bad in ("gpt-test", "openai:", ":gpt", "openai:gpt test", "openai:gpt\n"):
        with pytest.raises(UsageError) as caught:
            check_reader_model(LookupBudgetRequest(reader_model=bad))
        assert caught.value.code == "lookup_reader_model_invalid"
    chosen = LookupBudgetRequest(reader_model="openai:gpt-test")
    assert check_reader_model(chosen) == "openai:gpt-test"
    assert check_reader_model(LookupBudgetRequest()) is None
