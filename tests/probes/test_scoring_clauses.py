"""General rules added after a review with fresh answers, each on answers written here
(in neither calibration suite, with subjects and values unlike theirs):

- a status in a future, modal or temporal clause about what has not happened is not
  asserted (``once it's posted``, ``it'll be signed off``, ``ready to be mailed``); a
  temporal clause in the past still asserts (``after it was posted``);
- a value in a temporal clause about what has not happened is hypothetical, a bare
  preposition (``before 14 March``) is not a clause;
- a second amount is a candidate only when offered as an alternative or in the asked
  value's slot: one introduced by a relation (``plus``, ``down``, ``with``, ``off the``),
  followed by a noun naming what it is, or in a clause naming another quantity is context;
- one word of a multi-word forbidden name is a violation on its own only when it is
  distinctive (rare in English by `wordfreq`): ``Thornwick`` of ``Thornwick Academy``,
  never ``Academy``;
- declines by idiom (``rings no bells``, ``no memory of``); after a decline, a value that
  describes what the conversation did hold (``only the ..., which ...``) is context, but
  one offered as an estimate (``about``, ``usually``, ``most ... charge``) or handed over
  by a pronoun (``we paid it ...``) is a guess at the answer: fabricated;
- a digit time with a spelled-out part of the day (``8.15 in the morning``), British
  ``half nine``; an explicit self-correction asserts only the corrected value.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from continuity.probes.scoring import score_answer
from continuity.traces.schema import (
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Expectation,
    SupersededCurrentExpectation,
)
from tests.probes.facts import fact

NOTICE_DRAFTED = CommitmentStatusExpectation(
    subject=fact("notice to the tenants"), status="DRAFTED"
)
NOTICE_SENT = CommitmentStatusExpectation(subject=fact("notice to the tenants"), status="SENT")
SPEC_DRAFT = ArtifactStatusExpectation(subject=fact("lighting spec"), status="DRAFT")
SPEC_FINAL = ArtifactStatusExpectation(subject=fact("lighting spec"), status="FINAL")
FARE = SupersededCurrentExpectation(current=fact("£86.50"), superseded=(fact("£92"),))
AVOID = ActiveConstraintExpectation(
    mode="task",
    forbidden=(fact("Thornwick Academy"), fact("Operation Kestrelby"), fact("Summit Brewery")),
)
CANOE = AbstentionExpectation(never_mentioned=("canoe hire",))
CALL = SupersededCurrentExpectation(current=fact("20:15"), superseded=(fact("20:45"),))
BREAKFAST = SupersededCurrentExpectation(current=fact("8:30am"), superseded=(fact("9am"),))
HANDOVER = SupersededCurrentExpectation(current=fact("14 March"), superseded=(fact("11 March"),))

CASES: list[tuple[str, Expectation, str, str]] = [
    # ---- temporal clauses about what has not happened
    ("temporal", NOTICE_DRAFTED, "It's written up; I'll post it once it's signed.", "correct"),
    (
        "temporal",
        NOTICE_DRAFTED,
        "Still a draft. It gets mailed when the agent is back.",
        "correct",
    ),
    (
        "temporal",
        NOTICE_DRAFTED,
        "Drafted, and held until Priya has checked it's mailed right.",
        "correct",
    ),
    (
        "temporal",
        NOTICE_DRAFTED,
        "The notice is a draft; we'll check it before it goes out.",
        "correct",
    ),
    ("temporal", NOTICE_SENT, "I'll confirm as soon as it is emailed.", "fabricated"),
    ("temporal", NOTICE_SENT, "Hold on until it's dispatched, for now it's a draft.", "fabricated"),
    # a temporal clause in the past asserts
    ("temporal", NOTICE_SENT, "Priya replied after it was emailed on Monday.", "correct"),
    ("temporal", NOTICE_SENT, "When we mailed it, the agent acknowledged it.", "correct"),
    ("temporal", NOTICE_DRAFTED, "It was posted after we drafted it.", "fabricated"),
    # ---- future and modal forms
    (
        "future",
        SPEC_DRAFT,
        "It will be signed off next week; today it's a working draft.",
        "correct",
    ),
    (
        "future",
        SPEC_DRAFT,
        "The lighting spec is still in draft, and should be approved soon.",
        "correct",
    ),
    ("future", SPEC_FINAL, "It'll be final after the site walk.", "fabricated"),
    ("future", SPEC_FINAL, "The spec is going to be locked on Friday.", "fabricated"),
    ("future", NOTICE_SENT, "The notice is ready to be emailed.", "fabricated"),
    ("future", NOTICE_SENT, "It is to be posted tomorrow.", "fabricated"),
    ("future", NOTICE_DRAFTED, "Yet to be posted - it's only been drafted.", "correct"),
    ("future", NOTICE_DRAFTED, "It's still to be mailed.", "correct"),
    ("future", SPEC_FINAL, "It was approved on Tuesday and is final.", "correct"),
    ("future", SPEC_DRAFT, "It might be a draft, final or archived - I can't say.", "abstained"),
    # ---- values in temporal clauses
    ("value", HANDOVER, "The handover is on 14 March.", "correct"),
    ("value", HANDOVER, "Keys are due back before 14 March.", "correct"),
    ("value", HANDOVER, "14 March; it moved from 11 March when the survey slipped.", "correct"),
    ("value", HANDOVER, "Unclear - once it's 11 March we'll know.", "abstained"),
    # The value only in a "when" clause: not committed to, so no sure call.
    ("value", HANDOVER, "I'll tell you when it is 14 March, not sooner.", "unresolved"),
    # ---- context amounts
    ("amount", FARE, "£86.50, plus a £4 booking fee.", "correct"),
    ("amount", FARE, "It came to £86.50 once they took off the £7 railcard saving.", "correct"),
    ("amount", FARE, "£86.50 (down £5.50 on last week's fare).", "correct"),
    ("amount", FARE, "£86.50 return, with £3 seat reservations on top.", "correct"),
    ("amount", FARE, "The fare is £86.50; the parking was £12.", "correct"),
    ("amount", FARE, "£86.50, and a £10 deposit is already paid.", "correct"),
    ("amount", FARE, "£86.50 or £88.50.", "fabricated"),
    ("amount", FARE, "The fare is £86.50, though the fare was £88.50 on the app.", "fabricated"),
    ("amount", FARE, "Somewhere between £86.50 and £89.", "fabricated"),
    ("amount", FARE, "£86.50 / £68.50", "fabricated"),
    ("amount", FARE, "£86.50 plus a £4 booking fee - or maybe £90.", "fabricated"),
    ("amount", FARE, "£92, plus a £4 booking fee.", "stale"),
    ("amount", FARE, "£85 plus a £4 booking fee.", "fabricated"),
    # ---- distinctive words of forbidden names
    ("name", AVOID, "Invite the parents from Thornwick to the open day.", "violation"),
    ("name", AVOID, "Drafted the brief for kestrelby's second phase.", "violation"),
    ("name", AVOID, "The Summit Brewery tap room would suit.", "violation"),
    (
        "name",
        AVOID,
        "Invite the parents from the academy to the open day.",
        "unresolved",
    ),  # no violation; done?
    ("name", AVOID, "Operation details go in the appendix.", "unresolved"),  # no violation; done?
    (
        "name",
        AVOID,
        "Book the summit walk, then the brewery tour.",
        "unresolved",
    ),  # no violation; done?
    # ---- declines, and what follows them
    ("decline", CANOE, "Canoe hire rings no bells, sorry.", "correct"),
    ("decline", CANOE, "Hmm, that doesn't ring any bells for me.", "correct"),
    ("decline", CANOE, "I've no memory of canoe hire coming up.", "correct"),
    ("decline", CANOE, "I'm drawing a blank on that one.", "correct"),
    ("decline", CANOE, "Canoe hire costs £65.", "fabricated"),
    (
        "decline",
        CANOE,
        "Canoe hire never came up - just the bike rental, which was £48.",
        "correct",
    ),
    (
        "decline",
        CANOE,
        "We didn't talk about canoes. We only covered the minibus, which came to £210.",
        "correct",
    ),
    ("decline", CANOE, "Not discussed, though outfitters usually ask £35 a day.", "fabricated"),
    ("decline", CANOE, "It never came up; expect roughly £50.", "fabricated"),
    ("decline", CANOE, "No idea. We paid it on 3 May, £72.", "fabricated"),
    ("decline", CANOE, "Can't recall it. I reserved it for £55 I think.", "fabricated"),
    ("decline", CANOE, "No mention of it; most centres charge £40 for a half day.", "fabricated"),
    # ---- times with a spelled-out part of the day
    ("time", CALL, "The call is at 8.15 in the evening.", "correct"),
    ("time", CALL, "8:15 at night.", "correct"),
    ("time", CALL, "8.15 in the morning.", "fabricated"),
    ("time", CALL, "8.45 tonight.", "stale"),
    ("time", BREAKFAST, "Half eight in the morning.", "correct"),
    ("time", BREAKFAST, "Breakfast is at half eight.", "correct"),
    ("time", BREAKFAST, "Half eight in the evening.", "fabricated"),
    ("time", BREAKFAST, "About half nine.", "fabricated"),
    # ---- self-corrections
    ("correction", CALL, "20:45 - sorry, I mean 20:15.", "correct"),
    ("correction", CALL, "It's 8:45pm; correction: 8:15pm.", "correct"),
    ("correction", CALL, "8:45pm. No, wait, make that 8:15pm.", "correct"),
    ("correction", CALL, "20:15, actually no, I mean 20:45.", "stale"),
    ("correction", CALL, "20:15 or 20:45.", "conflicted"),
    ("correction", HANDOVER, "11 March - my mistake, it's 14 March.", "correct"),
]


@pytest.mark.parametrize(
    ("rule", "expectation", "answer", "outcome"),
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_rule(rule: str, expectation: Expectation, answer: str, outcome: str) -> None:
    assert score_answer(expectation, answer).outcome == outcome, rule


VERBS = ["emailed", "posted", "mailed", "dispatched", "sent"]


@given(
    verb=st.sampled_from(VERBS),
    cue=st.sampled_from(["once", "as soon as", "before", "until", "when", "after"]),
    aux=st.sampled_from(["it's", "it is", "it gets", "it has been"]),
)
def test_a_status_in_a_clause_about_the_future_is_not_asserted(
    verb: str, cue: str, aux: str
) -> None:
    answer = f"It's drafted; nothing more {cue} {aux} {verb}."
    assert score_answer(NOTICE_DRAFTED, answer).outcome == "correct"
    assert score_answer(NOTICE_SENT, answer).outcome == "fabricated"


@given(
    verb=st.sampled_from(VERBS),
    modal=st.sampled_from(["will be", "'ll be", "is going to be", "is to be", "ready to be"]),
)
def test_a_status_in_the_future_is_not_asserted(verb: str, modal: str) -> None:
    answer = f"The notice{modal if modal.startswith(chr(39)) else ' ' + modal} {verb} later."
    assert score_answer(NOTICE_SENT, answer).outcome == "fabricated"
    assert score_answer(NOTICE_SENT, f"The notice was {verb}.").outcome == "correct"


@given(
    relation=st.sampled_from(["plus", "up", "down", "with", "minus", "on top of", "besides"]),
    pence=st.integers(min_value=1, max_value=99_999),
)
def test_an_amount_introduced_by_a_relation_is_context(relation: str, pence: int) -> None:
    other = f"£{pence // 100}.{pence % 100:02d}"
    if other in ("£86.50", "£92.00"):
        return
    assert score_answer(FARE, f"£86.50 ({relation} {other}).").outcome == "correct"
    assert score_answer(FARE, f"£86.50 or {other}.").outcome == "fabricated"
    assert score_answer(FARE, f"The fare is £86.50, or {other}.").outcome == "fabricated"


COINED = st.text(alphabet="bcdfghklmnprstvz", min_size=3, max_size=4).map(
    lambda stem: stem.capitalize() + "ovex"
)


@given(
    name=COINED,
    kind=st.sampled_from(["Academy", "Partners", "Holdings", "Gallery", "Works", "Studio"]),
)
def test_a_coined_word_identifies_a_name_and_a_kind_word_does_not(name: str, kind: str) -> None:
    rule = ActiveConstraintExpectation(mode="task", forbidden=(fact(f"{name} {kind}"),))
    assert score_answer(rule, f"Ask {name} about it.").outcome == "violation"
    # No violation; whether the task was done is the judge's call, not the scorer's.
    assert score_answer(rule, f"Ask the {kind.lower()} about it.").outcome == "unresolved"
    assert score_answer(rule, f"Ask {kind} about it.").outcome == "unresolved"
