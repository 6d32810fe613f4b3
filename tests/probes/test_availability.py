"""Availability: where the answer-bearing values were after the boundary."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from continuity.errors import TraceError
from continuity.memory.retained import RetainedStore
from continuity.messages import AssistantMessage, ModelRequest, UserMessage
from continuity.probes.availability import (
    LOOKUP_BYTES,
    LOOKUP_CALLS,
    ContextText,
    NeedleState,
    availability,
    fact_count,
    found_in,
    needles_for,
    reference_lookup,
    status_needle,
)
from continuity.probes.protocol import probe_turn_text
from continuity.sampling.evidence import needle_states
from continuity.traces import generator
from continuity.traces.keys import fixtures_dir
from continuity.traces.schema import (
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Trace,
)
from continuity.traces.validate import load_trace

TWO = 2  # two fact values, e.g. "Harbor Vale" and "pier 7"


def test_in_context_needs_every_value() -> None:
    states = [NeedleState(True, None, 0, 0), NeedleState(True, None, 0, 0)]
    assert availability(TWO, states, []).fact == "in_context"
    states = [NeedleState(True, None, 0, 0), NeedleState(False, None, 0, 0)]
    assert availability(TWO, states, []).fact == "absent"  # no store offered


def test_the_values_not_in_context_share_one_lookup_budget() -> None:
    # Each value alone fits the 8-call budget, together they do not.
    five = NeedleState(False, True, 5, 10_000)
    assert 5 <= LOOKUP_CALLS < 10
    result = availability(TWO, [five, five], [])
    assert result.fact == "absent" and result.reference_calls == 10
    three = NeedleState(False, True, 3, 10_000)
    assert availability(TWO, [three, five], []).fact == "retrievable"
    # Bytes are shared the same way.
    big = NeedleState(False, True, 1, LOOKUP_BYTES // 2 + 1)
    assert availability(TWO, [big, big], []).fact == "absent"
    # A value already in context costs nothing from the budget.
    seen = NeedleState(True, True, 5, 10_000)
    result = availability(TWO, [seen, five], [])
    assert result.fact == "retrievable" and result.reference_calls == 5


def test_no_fact_values_is_not_applicable_but_stale_values_still_count() -> None:
    result = availability(0, [], [NeedleState(True, None, 0, 0)])
    assert result.fact == "not_applicable" and result.superseded_present


# -- matching: the scorers' normaliser, whole tokens --------------------------------------


def test_whole_token_matching_never_finds_a_value_inside_a_longer_word() -> None:
    context = ContextText(["We meet in the afternoon, after the 12:30 train."])
    assert not context.holds("noon")
    assert not context.holds("12:3")
    assert ContextText(["We meet at noon."]).holds("noon")
    assert ContextText(["We meet at NOON."]).holds("Noon")  # case-insensitive


@pytest.mark.parametrize(
    "written",
    [
        "the account is kln 4471 qx",
        "the account is KLN\u20114471\u2011QX",  # non-breaking hyphens
        "the account is KLN\u2013\uff14\uff14\uff17\uff11\u2013QX",  # en dashes, full-width
        "the account is KLN-44\u200b71-QX.",  # a zero-width space inside
        "the account is\nKLN4471QX",
    ],
)
def test_separator_and_unicode_variants_are_found(written: str) -> None:
    assert ContextText(["first message", written]).holds("KLN-4471-QX")


def test_a_prefix_or_superstring_of_an_identifier_is_not_found() -> None:
    assert not ContextText(["the account is KLN-4471-QXZ"]).holds("KLN-4471-QX")
    assert not ContextText(["the account is KLN-4471-Q"]).holds("KLN-4471-QX")


# -- status needles ---------------------------------------------------------------------


def test_a_status_needle_needs_the_subject_stated_with_its_status() -> None:
    sentence = status_needle("fault report email", "SENT", "sentence")
    assert found_in("Done. I've sent the fault report email to the returns team.", sentence)
    assert found_in("Update: the Fault Report e-mail was SENT on Monday.", sentence) is False
    assert found_in("Update: the fault report email was SENT on Monday.", sentence)
    # The subject alone, or the status about something else, is not the fact.
    assert not found_in("Open items: the fault report email.", sentence)
    assert not found_in("The fault report email is open. The invoice was sent.", sentence)
    # A paragraph-scope needle accepts the status a sentence earlier, not a paragraph.
    paragraph = status_needle("launch invitation", "SENT", "paragraph")
    assert found_in("Done and sent. The launch invitation went out at noon.", paragraph)
    assert not found_in("Done and sent.\nThe launch invitation is still open.", paragraph)
    drafted = status_needle("claim", "DRAFTED", "sentence")
    assert found_in("The claim is unsent, in your drafts.", drafted)
    assert not found_in("I have not drafted anything; the claimant is waiting.", drafted)


def _shipped() -> list[Trace]:
    traces = [
        load_trace(p.read_bytes(), source=p.name)
        for p in sorted((fixtures_dir() / "original").glob("*.json"))
    ]
    traces += [
        generator.generate_trace(s, distractors=d) for s in (101, 104) for d in (False, True)
    ]
    return traces


def test_every_shipped_status_probe_has_an_evidence_needle_its_evidence_holds() -> None:
    seen = 0
    for trace in _shipped():
        turns = {t.turn_id: t for s in trace.sessions for t in s.turns}
        for probe in trace.probes:
            exp = probe.expectation
            needles = needles_for(exp, trace)
            assert fact_count(exp) == len(needles.fact), (trace.trace_id, probe.probe_id)
            if not isinstance(exp, (CommitmentStatusExpectation, ArtifactStatusExpectation)):
                continue
            seen += 1
            (needle,) = needles.fact
            texts = [getattr(turns[e], "text", "") for e in exp.subject.evidence]
            assert any(found_in(t, needle) for t in texts), (trace.trace_id, probe.probe_id)
            # The question names the subject, but never states the status with it.
            assert not found_in(probe.text, needle), (trace.trace_id, probe.probe_id)
    assert seen >= 30


def test_a_trace_whose_evidence_never_states_the_status_is_refused() -> None:
    trace = _shipped()[0]
    probe = next(p for p in trace.probes if isinstance(p.expectation, CommitmentStatusExpectation))
    wrong = msgspec.structs.replace(probe.expectation, status="DECLINED")
    with pytest.raises(TraceError) as raised:
        needles_for(wrong, trace)
    assert raised.value.code == "status_evidence_missing"


# -- the probe child's context: what came before the question -----------------------------


def _request(*messages: UserMessage | AssistantMessage) -> ModelRequest:
    return ModelRequest(session_id="s", provider="p", model="m", system="sys", messages=messages)


def test_the_probe_question_never_counts_as_context() -> None:
    question = probe_turn_text(
        "What is the status of the fault report email? Was it sent?", "commitment_status"
    )
    status = status_needle("fault report email", "SENT", "sentence")
    lost = _request(
        UserMessage(text="<summary>\n## Goal\nnothing extracted\n</summary>"),
        AssistantMessage(text="Noted; the return is on track."),
        UserMessage(text=question, source="probe"),
    )
    states = needle_states([status, "fault report email", "afternoon"], lost, None)
    assert [s.in_context for s in states] == [False, False, False]
    assert all(s.retrievable is None for s in states)  # no store offered
    kept = _request(
        AssistantMessage(text="I've sent the fault report email; we meet this afternoon."),
        UserMessage(text=question, source="probe"),
    )
    states = needle_states([status, "fault report email", "noon"], kept, None)
    assert [s.in_context for s in states] == [True, True, False]


def test_the_reference_lookup_uses_the_same_matching(tmp_path: Path) -> None:
    store = RetainedStore(tmp_path / "retained.sqlite3")
    store.retain_tool_result(
        "Ledger: " + "filler line. " * 900 + "Account KLN\u20114471\u2011QX opened. "
        "We meet in the afternoon.",
        tool="mail",
        tool_kind="email",
        entry_ref="e1",
    )
    store.retain_owner("I've sent the fault report email.", source="owner", entry_ref="e2")
    found = reference_lookup(store, "kln 4471 qx")
    assert found.retrievable and found.calls >= 3  # a search, then the record's pages
    assert not reference_lookup(store, "noon").retrievable
    status = status_needle("fault report email", "SENT", "sentence")
    assert reference_lookup(store, status).retrievable
    assert not reference_lookup(
        store, status_needle("fault report email", "DRAFTED", "message")
    ).retrievable
    store.close()


def test_a_free_recall_probes_needles_are_its_evidence_turns(tmp_path: Path) -> None:
    """An imported corpus's human-written answer is no literal of the trace: the fact is
    each evidence turn's whole text, found with any punctuation between its words, never
    in other words; the reference path searches for it in the retained store."""
    from continuity.traces.schema import (
        SCHEMA_VERSION,
        FreeRecallExpectation,
        OwnerMessage,
        Session,
        Trace,
    )

    said = "(9:40 am on 2 May, 2028)\nWendell: I repainted the rowing boat teal - twice!"
    trace = Trace(
        schema_version=SCHEMA_VERSION,
        trace_id="imported-boat",
        fictional=True,
        family="imported",
        scenario="invented",
        title="An invented chat",
        sessions=(Session(session_id="S1", date="2028-05-02",
                          turns=(OwnerMessage(turn_id="t1-01", text=said),)),),
        probes=(),
    )  # fmt: skip
    expectation = FreeRecallExpectation(answer="teal", evidence=("t1-01",), source_category=4)
    needles = needles_for(expectation, trace)
    assert len(needles.fact) == fact_count(expectation) == 1 and needles.superseded == []
    (needle,) = needles.fact
    # the same words with other spacing and punctuation
    assert ContextText(["9:40 am on 2 May 2028 -- Wendell: I repainted the rowing boat "
                        "teal, twice"]).holds(needle)  # fmt: skip
    assert ContextText(["[User]: (9:40 am on 2 May, 2028)\n\n  Wendell:  I repainted\nthe "
                        "rowing boat teal -- twice!!"]).holds(needle)  # fmt: skip
    # a summary in other words, or a part of the turn, does not hold it
    assert not ContextText(["Wendell painted his boat teal (twice)."]).holds(needle)
    assert not ContextText(["I repainted the rowing boat teal"]).holds(needle)
    store = RetainedStore(tmp_path / "retained.sqlite3")
    store.retain_owner(said, source="owner", entry_ref="e1")
    store.retain_owner("Ysolde: my kiln arrived on Tuesday.", source="owner", entry_ref="e2")
    assert reference_lookup(store, needle).retrievable
    store.close()
    empty = RetainedStore(tmp_path / "other.sqlite3")
    empty.retain_owner("Ysolde: my kiln arrived on Tuesday.", source="owner", entry_ref="e2")
    assert not reference_lookup(empty, needle).retrievable
    empty.close()
