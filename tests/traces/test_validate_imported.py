"""Validation of imported traces: free-recall answers and abstention decoys, each
refusal with its code and location (an invented two-speaker conversation)."""

from __future__ import annotations

import msgspec
import pytest

from continuity.errors import TraceInvalid
from continuity.traces.schema import (
    SCHEMA_VERSION,
    AbstentionExpectation,
    AssistantMessage,
    Expectation,
    FreeRecallExpectation,
    OwnerMessage,
    Probe,
    Session,
    ToolCall,
    ToolResult,
    Trace,
    encode_trace,
)
from continuity.traces.validate import load_trace, validate_trace


def _trace(*expectations: Expectation, texts: tuple[str, ...] = ()) -> Trace:
    turns = (
        OwnerMessage(turn_id="t1-01", text="Wendell: I repainted the rowing boat teal."),
        AssistantMessage(
            turn_id="t1-01.call",
            tool_calls=(
                ToolCall(
                    call_id="c1", tool="chat_history", arguments={"channel": "Ysolde", "days": 1}
                ),
            ),
        ),
        ToolResult(
            turn_id="t1-02",
            call_id="c1",
            tool="chat_history",
            tool_kind="chat",
            output="Ysolde: Lovely! My kiln finally arrived on Tuesday.",
        ),
        AssistantMessage(turn_id="t1-01.reply", text="Ysolde replied."),
    )
    probes = tuple(
        Probe(probe_id=f"q{i:03d}", text=(texts[i] if i < len(texts) else "What happened?"),
              expectation=exp)
        for i, exp in enumerate(expectations)
    )  # fmt: skip
    return Trace(
        schema_version=SCHEMA_VERSION,
        trace_id="imported-boat",
        fictional=True,
        family="imported",
        scenario="invented",
        title="An invented chat",
        sessions=(Session(session_id="S1", date="2027-04-02", turns=turns),),
        probes=probes,
    )


def _codes(trace: Trace) -> list[tuple[str, str]]:
    with pytest.raises(TraceInvalid) as caught:
        validate_trace(trace, source="t")
    return [(issue.code, issue.location) for issue in caught.value.issues]


def _recall(answer: str, evidence: tuple[str, ...] = ("t1-01",)) -> FreeRecallExpectation:
    return FreeRecallExpectation(answer=answer, evidence=evidence, source_category=4)


def test_a_valid_imported_trace_round_trips() -> None:
    trace = _trace(_recall("teal"), AbstentionExpectation(never_mentioned=(), decoys=("a kiln",)))
    validate_trace(trace, source="t")
    assert load_trace(encode_trace(trace)) == trace
    # empty decoys are not encoded: traces without them keep their bytes and digests
    plain = AbstentionExpectation(never_mentioned=("a marquee",))
    assert b"decoys" not in msgspec.json.encode(plain)


def test_a_free_recall_answer_needs_existing_evidence() -> None:
    assert _codes(_trace(_recall("teal", ("t9-99",)))) == [
        ("evidence_unknown", "$.probes[0].expectation.evidence[0]")
    ]
    assert ("evidence_unknown", "$.probes[0].expectation.evidence") in _codes(
        _trace(_recall("teal", ()))
    )


def test_an_empty_answer_or_decoy_is_malformed() -> None:
    assert ("trace_malformed", "$.probes[0].expectation.answer") in _codes(_trace(_recall(" ")))
    bad = AbstentionExpectation(never_mentioned=(), decoys=(" ",))
    assert _codes(_trace(bad)) == [("trace_malformed", "$.probes[0].expectation.decoys[0]")]
    empty = AbstentionExpectation(never_mentioned=(), decoys=())
    assert _codes(_trace(empty)) == [("trace_malformed", "$.probes[0].expectation.never_mentioned")]


def test_a_probe_that_states_its_own_answer_leaks() -> None:
    trace = _trace(_recall("teal"), texts=("Did Wendell paint the boat teal?",))
    assert _codes(trace) == [("probe_leaks_answer", "$.probes[0].text")]
    # a whole-word match only: "eyes" does not give "yes" away
    validate_trace(_trace(_recall("yes"), texts=("Whose eyes are green?",)), source="t")


def test_the_imported_family_has_shape_rules_of_its_own() -> None:
    from continuity.traces.schema import Fact, RedactionExpectation

    assert _codes(_trace()) == [("shape_out_of_range", "$.probes")]  # at least one probe
    secret = RedactionExpectation(secret=Fact(value="Zq7!Zq7!Zq7!", evidence=("t1-02",)))
    codes = _codes(_trace(_recall("teal"), secret))
    assert ("shape_out_of_range", "$.probes") in codes  # no redaction probe


def test_free_recall_belongs_to_imported_families_only() -> None:
    from continuity.traces.keys import fixtures_dir

    original = load_trace((fixtures_dir() / "original" / "brightline-return.json").read_bytes())
    extra = Probe(probe_id="fr1", text="What happened?", expectation=_recall("teal", ("d1-01",)))
    with_free_recall = msgspec.structs.replace(original, probes=(*original.probes, extra))
    with pytest.raises(TraceInvalid) as caught:
        validate_trace(with_free_recall, source="t")
    assert any(
        issue.code == "shape_out_of_range" and "free_recall" in issue.message
        for issue in caught.value.issues
    )
