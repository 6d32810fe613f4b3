"""The probe protocol: a fixed, value-free instruction on every probe turn (one per answer
form: a final answer line for value probes, free text otherwise), bound into every plan
digest; and availability read from what the reader had before the question.

The probe children here are real (`run_unit` with ``dump_requests``), over an original
and a hard trace and over arms that cross every kind of boundary."""

from __future__ import annotations

import json
from collections.abc import Iterator

import msgspec
import pytest

from continuity.arms import ARMS
from continuity.plan.from_request import plan_from_request
from continuity.plan.plan import LookupPlan, plan_digest
from continuity.plan.request import PlanRequest
from continuity.probes import answer_line
from continuity.probes.availability import needles_for
from continuity.probes.normalise import mentions
from continuity.probes.protocol import (
    ANSWER_LINE_CATEGORIES,
    ANSWER_LINE_INSTRUCTION,
    PROBE_INSTRUCTION,
    PROBE_PROTOCOL,
    answer_form,
    instruction_for,
    probe_turn_text,
    unknown_reply,
)
from continuity.runner.units.build import UnitRecord, run_unit
from continuity.store import Store
from continuity.traces import generator
from continuity.traces.keys import fixtures_dir
from continuity.traces.schema import (
    CATEGORIES,
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Fact,
    Trace,
)
from continuity.traces.suites import build_suite
from continuity.traces.validate import load_trace

# One worker runs this module: its module fixture is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("probe-protocol")

RUNS = {
    "original": "native,cold-rebuild,compaction-1,continuity-store,continuity-pack-cold",
    "hard": "native,cold-rebuild,compaction-2,restart-switch-compact,continuity-store-compaction",
}
Run = tuple[Trace, UnitRecord, list[dict[str, object]]]


def _shipped_traces() -> list[Trace]:
    originals = sorted((fixtures_dir() / "original").glob("*.json"))
    traces = [load_trace(p.read_bytes(), source=p.name) for p in originals]
    for seed in range(101, 109):
        traces.append(generator.generate_trace(seed))
        traces.append(generator.generate_trace(seed, distractors=True))
    return traces


def _expected_strings(value: object) -> Iterator[str]:
    """Every string an expectation holds: fact values, terms, statuses."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Fact):
        yield value.value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _expected_strings(item)
    elif isinstance(value, msgspec.Struct):
        for field in value.__struct_fields__:
            if field != "mode":  # recall/task: a mode, not a value
                yield from _expected_strings(getattr(value, field))


# The exact bytes of both instructions (probe-protocol-v3). A change to either is a new
# protocol version: this test fails first, and PROBE_PROTOCOL must move with it.
GOLDEN_INSTRUCTIONS = {
    "text": (
        "Answer format: if what I am asking about never came up in our conversation (tool "
        "results count as part of it), say that it never came up and answer UNKNOWN."
    ),
    "line": (
        "Answer format: end your reply with one line of the form ANSWER: <value>, where "
        "<value> is only what I am asking for, exactly as it appeared in our conversation. "
        "If it never came up in our conversation (tool results count as part of it), end "
        "with the line ANSWER: UNKNOWN instead."
    ),
}


def test_the_instruction_bytes_are_golden_and_bound_to_v3() -> None:
    assert PROBE_PROTOCOL == "probe-protocol-v3"
    assert GOLDEN_INSTRUCTIONS["text"] == PROBE_INSTRUCTION
    assert GOLDEN_INSTRUCTIONS["line"] == ANSWER_LINE_INSTRUCTION
    for category in CATEGORIES:
        form = answer_form(category)
        turn = probe_turn_text("Q?", category)
        assert turn.encode() == b"Q?\n\n" + GOLDEN_INSTRUCTIONS[form].encode(), category
        assert instruction_for(category) == GOLDEN_INSTRUCTIONS[form]
    # The value categories answer on a line; the free-text ones (a redaction probe asked
    # for its value on a line would be invited to leak it) keep v2's instruction.
    assert {c for c in CATEGORIES if answer_form(c) == "line"} == {
        "tool_identifier",
        "superseded_current",
        "commitment_status",
        "artifact_status",
        "abstention",
    }
    assert set(CATEGORIES) >= ANSWER_LINE_CATEGORIES


def test_a_reader_following_the_instruction_writes_a_line_the_scorer_reads() -> None:
    line_turn = probe_turn_text("What is the order number?", "tool_identifier")
    text_turn = probe_turn_text("What rules did I set?", "active_constraint")
    assert unknown_reply(line_turn) == "ANSWER: UNKNOWN"
    assert unknown_reply(text_turn) == "UNKNOWN"
    assert unknown_reply("[owner] " + line_turn + " (via the agent)") == "ANSWER: UNKNOWN"
    assert answer_line.read(unknown_reply(line_turn)).kind == "unknown"
    # A reply that echoes the instruction gives no answer line by doing so.
    assert answer_line.read(line_turn).kind == "missing"


def test_the_instructions_name_no_expected_value_and_no_category() -> None:
    values = {
        v for t in _shipped_traces() for p in t.probes for v in _expected_strings(p.expectation)
    }
    assert len(values) > 200  # originals and hard 101-108, with and without distractors
    for instruction in (PROBE_INSTRUCTION, ANSWER_LINE_INSTRUCTION):
        assert [v for v in values if mentions(instruction, v)] == []
        for category in CATEGORIES:
            for spelling in (category, category.replace("_", " ")):
                assert spelling.lower() not in instruction.lower(), category
        # Each tells the reader how to decline, the same way every time.
        assert "UNKNOWN" in instruction and "never came up" in instruction


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Run]:
    root = tmp_path_factory.mktemp("protocol")
    store = Store(root / "store")
    found: dict[tuple[str, str], Run] = {}
    for suite, arms in RUNS.items():
        seeds = (101,) if suite == "hard" else None
        item = build_suite(store, suite, seeds, out_dir=root / "out").items[0]
        trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
        for arm_id in arms.split(","):
            dump = root / f"{suite}-{arm_id}.jsonl"
            record, _ = run_unit(store, trace, item, ARMS[arm_id], dump_requests=dump)
            requests = [json.loads(line) for line in dump.read_text().splitlines()]
            found[(suite, arm_id)] = (trace, record, requests)
    return found


def _first_requests(requests: list[dict[str, object]]) -> list[list[dict[str, str]]]:
    """The first reader request of every probe: the one that ends with a user turn (a
    reader's later requests end with a tool result)."""
    firsts = []
    for request in requests:
        messages = request["messages"]
        assert isinstance(messages, list)
        if messages[-1]["role"] == "user":
            firsts.append(messages)
    return firsts


def test_every_probe_turn_ends_with_the_same_instruction_bytes(
    runs: dict[tuple[str, str], Run],
) -> None:
    suffixes = set()
    for (suite, arm_id), (trace, _, requests) in runs.items():
        firsts = _first_requests(requests)
        assert len(firsts) == len(trace.probes), (suite, arm_id)
        for probe, messages in zip(trace.probes, firsts, strict=True):
            last = messages[-1]["content"]
            turn = probe_turn_text(probe.text, probe.category)
            assert last == turn, (suite, arm_id, probe.probe_id)
            assert last.endswith("\n\n" + instruction_for(probe.category))
            suffixes.add(last[len(probe.text) :].encode("utf-8"))
            # The instruction is on the probe turn only, never earlier in the context.
            for instruction in (PROBE_INSTRUCTION, ANSWER_LINE_INSTRUCTION):
                assert all(instruction not in m["content"] for m in messages[:-1])
    # Two suffixes in all, one per answer form, each identical wherever it appears.
    assert suffixes == {
        ("\n\n" + PROBE_INSTRUCTION).encode("utf-8"),
        ("\n\n" + ANSWER_LINE_INSTRUCTION).encode("utf-8"),
    }


def test_a_status_subject_lost_at_the_boundary_is_absent_though_the_question_names_it(
    runs: dict[tuple[str, str], Run],
) -> None:
    lost = 0
    for (suite, arm_id), (trace, record, requests) in runs.items():
        firsts = _first_requests(requests)
        for probe, result, messages in zip(trace.probes, record.probes, firsts, strict=True):
            exp = probe.expectation
            if not isinstance(exp, (CommitmentStatusExpectation, ArtifactStatusExpectation)):
                continue
            before = "\n".join(m["content"] for m in messages[:-1])
            assert mentions(messages[-1]["content"], exp.subject.value)  # the question names it
            assert result.availability is not None
            if not mentions(before, exp.subject.value):
                lost += 1
                assert result.availability.fact == "absent", (suite, arm_id, probe.probe_id)
                assert result.loss == "lost_at_boundary"
            if arm_id == "native":  # the evidence turn is there, verbatim
                assert result.availability.fact == "in_context", probe.probe_id
    assert lost >= 4  # the compacted and rebuilt arms of the hard trace lose subjects


def test_the_status_needle_is_the_evidence_not_the_subject(
    runs: dict[tuple[str, str], Run],
) -> None:
    """The needle the child checks for a status probe is the subject with its status,
    never the bare subject (which the question itself names)."""
    trace, _, _ = runs[("hard", "native")]
    for probe in trace.probes:
        exp = probe.expectation
        if isinstance(exp, (CommitmentStatusExpectation, ArtifactStatusExpectation)):
            (needle,) = needles_for(exp, trace).fact
            assert needle != exp.subject.value and needle.startswith(exp.subject.value)


def test_every_plan_digest_binds_the_protocol_version() -> None:
    for options in ({}, {"suite": "hard", "seeds": "101"}, {"probe_mode": "lookup-allowed-v1"}):
        plan = plan_from_request(PlanRequest.of(options))
        assert plan.probe_protocol == PROBE_PROTOCOL
        older = msgspec.structs.replace(plan, probe_protocol="probe-protocol-v1")
        assert plan_digest(older) != plan_digest(plan)
        assert msgspec.structs.replace(older, probe_protocol=PROBE_PROTOCOL) == plan
    assert isinstance(
        plan_from_request(PlanRequest.of({"probe_mode": "lookup-allowed-v1"})), LookupPlan
    )
