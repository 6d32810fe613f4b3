"""Probe units: availability on hard traces, excluded samples, no leakage to readers."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from continuity.arms import ARMS
from continuity.harness.keys import ReplayConfig
from continuity.runner.units import run as unit_run
from continuity.runner.units.build import UnitRecord, build_units, run_unit
from continuity.runner.units.build import judged as judged_by
from continuity.runner.units.execution import Execution
from continuity.sampling.receipts import ProcessReceipt
from continuity.store import Store
from continuity.traces.schema import CATEGORIES, Trace, decode_trace, iter_turns
from continuity.traces.suites import SuiteItem, build_suite

# One worker runs this module: its module fixture is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("hard-units")


@pytest.fixture(scope="module")
def hard_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, list[UnitRecord]]]:
    root = tmp_path_factory.mktemp("units")
    store = Store(root / "store")
    records, folder, built = build_units(
        store,
        "hard",
        (101,),
        arms="native,cold-rebuild,continuity-store",
        run_dir=root / "out" / "runs" / "t",
        # offline the scripted judge plays it
        execution=Execution(judge="openai-codex:gpt-6.1-sol"),
    )
    assert built == 3 and sorted(p.name for p in folder.glob("*.json")) == [
        "r1-gen-grant-101-cold-rebuild.json",
        "r1-gen-grant-101-continuity-store.json",
        "r1-gen-grant-101-native.json",
    ]
    yield store, records


@pytest.fixture(scope="module")
def hard_units(hard_run: tuple[Store, list[UnitRecord]]) -> list[UnitRecord]:
    return hard_run[1]


def _probe(units: list[UnitRecord], arm: str, role: str) -> object:
    unit = next(u for u in units if u.arm == arm)
    return next(p for p in unit.probes if p.design_role == role)


def test_the_account_reference_is_where_the_design_puts_it(
    hard_units: list[UnitRecord],
) -> None:
    native = _probe(hard_units, "native", "account_reference")
    cold = _probe(hard_units, "cold-rebuild", "account_reference")
    store = _probe(hard_units, "continuity-store", "account_reference")
    assert native.availability.fact == "in_context"  # type: ignore[attr-defined]
    assert cold.availability.fact == "absent"  # type: ignore[attr-defined]
    assert store.availability.fact == "retrievable"  # type: ignore[attr-defined]
    assert (native.loss, cold.loss, store.loss) == (  # type: ignore[attr-defined]
        "present_but_missed",
        "lost_at_boundary",
        "lost_at_retrieval",
    )
    head = _probe(hard_units, "cold-rebuild", "head_identifier")
    assert head.availability.fact == "in_context"  # type: ignore[attr-defined]
    assert head.availability.superseded_present is False  # type: ignore[attr-defined]


def test_every_probe_is_scored_with_its_evidence(
    hard_run: tuple[Store, list[UnitRecord]],
) -> None:
    store, hard_units = hard_run
    for unit in hard_units:
        assert unit.content_digest and len(unit.probes) == 14
        assert {p.category for p in unit.probes} == set(CATEGORIES)
        for probe in unit.probes:
            assert probe.status == "valid" and probe.outcome is not None
            assert probe.evidence is not None and probe.evidence.answer == probe.answer
            assert probe.usage.input + probe.usage.cache_read > 0
        assert all(p.evidence.fresh_process for p in unit.probes if p.evidence)
        # The pids live beside the unit (its action entry), never in its sealed bytes.
        entry = store.get_action(unit.key)
        assert entry is not None
        processes = msgspec.convert(entry.meta["processes"], list[ProcessReceipt])
        assert [r.probe_index for r in processes] == list(range(14))
        assert len({r.child_pid for r in processes}) == 14  # a fresh process per probe
        assert all(r.child_pid != r.parent_pid for r in processes)
        assert b"_pid" not in msgspec.json.encode(unit)
        # The plan has a judge: it reads every valid answer the scorer left unresolved
        # and every next action, and nothing else.
        assert [v.probe_id for v in unit.judge] == [
            p.probe_id for p in unit.probes if p.status == "valid" and judged_by(p)
        ]
        assert any(p.category == "next_action" for p in unit.probes) and unit.judge
        assert all(v.judge == "scripted-judge" and v.outcome for v in unit.judge)


def test_without_a_judge_no_answer_is_judged_and_the_key_says_so(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    item = build_suite(store, "original", out_dir=tmp_path / "out").items[0]
    trace = decode_trace(store.get_blob(item.digest))
    plain, _ = run_unit(store, trace, item, ARMS["native"], probe_limit=2)
    judged, status = run_unit(
        store,
        trace,
        item,
        ARMS["native"],
        probe_limit=2,
        execution=Execution(judge="openai:judge"),
    )
    assert plain.judge == [] and plain.binding is None
    assert status == "built" and judged.key != plain.key  # the judge is bound in the key
    # The judge reads unresolved answers and next actions; these two probes (the trace's
    # first, identifiers) are neither, so it was bound but read nothing.
    assert [v.probe_id for v in judged.judge] == [p.probe_id for p in judged.probes if judged_by(p)]
    assert [p.answer for p in judged.probes] == [p.answer for p in plain.probes]


def test_units_are_cached_in_the_store(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    item = build_suite(store, "original", out_dir=tmp_path / "out").items[0]
    trace = decode_trace(store.get_blob(item.digest))
    first, status = run_unit(store, trace, item, ARMS["native"], probe_limit=2)
    assert status == "built" and len(first.probes) == 2
    again, status = run_unit(store, trace, item, ARMS["native"], probe_limit=2)
    assert status == "cached" and again == first
    other, status = run_unit(store, trace, item, ARMS["native"], probe_limit=2, repeat=2)
    assert status == "built" and other.key != first.key


def test_excluded_samples_are_kept_with_their_class_and_never_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkpoint replayed without retention: the store arm finds no retained records.
    monkeypatch.setattr(
        unit_run, "replay_config_for", lambda arm, probe_mode="recall-only": ReplayConfig()
    )
    store = Store(tmp_path / "store")
    item = build_suite(store, "original", out_dir=tmp_path / "out").items[1]
    trace = decode_trace(store.get_blob(item.digest))
    record, _ = run_unit(store, trace, item, ARMS["continuity-store"], probe_limit=3)
    assert [p.status for p in record.probes] == ["store_degraded"] * 3
    for probe in record.probes:
        assert probe.outcome is None and probe.correct is None and probe.availability is None
        assert probe.reasons and probe.evidence is not None


def _conversation(trace: Trace) -> str:
    return "\n".join(
        getattr(t, "text", "") + getattr(t, "output", "") for _, _, t in iter_turns(trace)
    )


def _facts(expectation: object, keys: tuple[str, ...] | None = None) -> list[str]:
    """Literal values named by an expectation (all of them, or only under `keys`)."""
    values: list[str] = []

    def walk(node: object, wanted: bool) -> None:
        if isinstance(node, dict):
            if wanted and "value" in node:
                values.append(str(node["value"]))
            for key, child in node.items():
                walk(child, wanted or keys is None or key in keys)
        elif isinstance(node, (list, tuple)):
            for child in node:
                walk(child, wanted)

    walk(msgspec.to_builtins(expectation), keys is None)
    return values


def _leaks(payload: dict[str, object], trace: Trace) -> list[str]:
    text = json.dumps(payload)
    found = [
        name
        for name in (*CATEGORIES, "expectation", "design_role", "never_mentioned", "evidence")
        if name in text
    ]
    conversation = _conversation(trace)
    found += [
        value
        for probe in trace.probes
        for value in _facts(probe.expectation)
        if value in text and value not in conversation
    ]
    messages = payload["messages"]
    assert isinstance(messages, list)
    users = [m["content"] for m in messages if m["role"] == "user"]
    probe_text = str(users[-1]) if users else ""  # the probe is the last user message
    answers = ("answer", "current", "superseded", "secret")  # not framing like a subject
    found += [
        f"probe message carries {value}"
        for probe in trace.probes
        for value in _facts(probe.expectation, answers)
        if value in probe_text
    ]
    return found


@pytest.mark.parametrize(
    ("suite", "seed", "arms"),
    [
        ("original", None, "all"),
        ("hard", 101, "native,continuity-store-compaction,continuity-pack-cold"),
    ],
)
def test_no_expected_value_rubric_or_category_reaches_a_reader(
    tmp_path: Path, suite: str, seed: int | None, arms: str
) -> None:
    store = Store(tmp_path / "store")
    result = build_suite(store, suite, (seed,) if seed else None, out_dir=tmp_path / "out")
    item: SuiteItem = result.items[0]
    trace = decode_trace(store.get_blob(item.digest))
    dumps = 0
    from continuity.arms import parse_arms

    for arm in parse_arms(arms, family=trace.family):
        dump = tmp_path / f"{arm.id}.jsonl"
        run_unit(store, trace, item, arm, dump_requests=dump)
        for line in dump.read_text().splitlines():
            dumps += 1
            assert _leaks(json.loads(line), trace) == [], arm.id
    assert dumps >= len(trace.probes) * 3


# sha256 of each hard unit's content (canonical JSON, sorted keys) with its key, content
# digest, checkpoint key and trace key blanked: what a refactor must leave unchanged.
# Measured before the unit runner was split into steps (issue 12) and after: identical.
# Keys move when code moves; a change here is a change in what a unit records. Issue 35's
# redaction rule changed only the redaction samples' reason ("the secret is not
# recoverable from the reply"); with the old reason ("no run of the secret") put back the
# units hash to the previous pins (2957a71b..., c4e2ff72..., 358fc874...). Issue 35's
# judge routing moved them again: the judge reads next actions and unresolved answers
# only, so each unit holds fewer verdicts (57c1db3e..., 2a5485bc..., 2860391f... before);
# no probe's outcome changed (the offline contract's units, checked the same way, differ
# only in the verdicts dropped). Probe-protocol-v3 moved them again (cc44f11f...,
# c531924f..., 656dc984... before): each unit records the protocol, the scripted reader's
# value-probe decline ``ANSWER: UNKNOWN`` with its reason, and the token counts of the
# longer instruction (tests/sampling/test_golden.py diffs such units field by field). A
# refused task is abstained, not correct (issue 35): the scripted reader's declined task
# drafts changed outcome (a18b525c..., 0fe0de47..., 40f5c863... before). Each sample's
# evidence came to name the store tree of what its reader saw (``context``); with that
# field removed the units hash to the previous pins (1c0ce655..., b2fb6979..., 2913e1c8...).
PINNED_CONTENT = {
    "cold-rebuild": "ffda4e88f0001d213e7b3c4fb7f852a7874ac65a4f923fc523a8f186750d6eff",
    "continuity-store": "04dda026af0c6bbbb2bd10681177f492ea3f66ad8fbc682c2f8f035770631fc3",
    "native": "377619009838d3e53b2c3f40e9a8c0e71cd93a38cc1d01958d0190e9d8a70703",
}


def test_unit_contents_apart_from_keys_are_pinned(hard_units: list[UnitRecord]) -> None:
    digests = {}
    for unit in hard_units:
        content = msgspec.to_builtins(unit)
        for field in ("key", "content_digest", "checkpoint", "trace_key"):
            content[field] = ""
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
        digests[unit.arm] = hashlib.sha256(canonical.encode()).hexdigest()
    assert digests == PINNED_CONTENT
