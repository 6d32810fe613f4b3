"""Free recall: each rule of `continuity.probes.free_recall` on answers written fresh for
these tests (none is in a calibration suite), LoCoMo's token-F1 and relative dates.

Item verdicts are read straight from `free_recall.score_parts`; how a verdict becomes an
outcome (abstained, fabricated, unresolved) is `continuity.probes.scoring`'s, tested in
test_free_recall_scoring.py."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.probes import free_recall
from continuity.probes.normalise import normalise
from continuity.probes.relative_dates import gold_days, states_one_of
from continuity.probes.scoring import score_answer
from continuity.probes.token_f1 import locomo_f1, token_f1
from continuity.traces.schema import AbstentionExpectation


def verdict(gold: str, answer: str) -> str:
    """``matched``, ``doubtful`` (every item matched or doubtful) or ``missing``."""
    parts = free_recall.score_parts(normalise(answer), gold, "day-first")
    if parts.matched == parts.total:
        return "matched"
    if parts.doubtful and parts.matched + parts.doubtful == parts.total:
        return "doubtful"
    return "missing"


def _decoy(decoy: str, answer: str) -> str:
    expectation = AbstentionExpectation(never_mentioned=(), decoys=(decoy,))
    return score_answer(expectation, answer).outcome


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        # parts: after a ';' a reason or an alternative, either part suffices
        ("Lighthouse tour; he loves old buildings", "The lighthouse tour, surely.", "matched"),
        ("Lighthouse tour; he loves old buildings", "A river cruise.", "missing"),
        # list items: every one
        ("oboe, harp", "She plays the harp and the oboe.", "matched"),
        ("oboe, harp", "The oboe, I believe.", "missing"),
        # a comma inside a date separates nothing
        ("March 3, 2028", "On 3 March 2028.", "matched"),
        ("March 3, 2028", "In 2028.", "missing"),
        # polar golds: the answer's first committed polarity; the reason is optional
        ("Likely yes since he keeps bees", "Probably, yes.", "matched"),
        ("Likely yes since he keeps bees", "I doubt it; no.", "missing"),
        ("Presumably not", "I don't think so.", "matched"),
        ("No; the ferry was cancelled", "Nope.", "matched"),
        # negated content words never state the gold
        ("Copenhagen", "Not Copenhagen: they chose Oslo.", "missing"),
        ("Copenhagen", "They went to Copenhagen in the end.", "matched"),
        # number words are digits; British spellings read as American ones
        ("4", "Four of them.", "matched"),
        ("twelve", "12 in total.", "matched"),
        ("Favourite colour", "Her favorite color.", "matched"),
        ("Theatre", "The theater downtown.", "matched"),
        # a stem that begins the other counts (four letters or more)
        ("Photography", "She's into photos and photographing birds.", "matched"),
        # guesses, declines and denials state nothing
        ("darts", "It could be darts, snooker or bowling - I'm not certain.", "missing"),
        ("darts", "I don't think that ever came up.", "missing"),
        ("darts", "He never took up darts, he said it bored him.", "missing"),
        ("oboe, harp", "The oboe, and another one I can't remember.", "missing"),
        # dated golds the other way round
        ("The day before 9 July 2028", "The day after 9 July 2028.", "missing"),
    ],
)
def test_free_recall_rules(gold: str, answer: str, expected: str) -> None:
    assert verdict(gold, answer) == expected


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        ("The Friday before 20 October 2028", "Friday 13 October 2028.", "matched"),
        ("The Friday before 20 October 2028", "On October 13th.", "matched"),
        ("The Friday before 20 October 2028", "On October 6th.", "missing"),
        ("The week before 1 March 2028", "29 February 2028.", "matched"),  # leap year span
        ("The week before 1 March 2028", "1 March 2028.", "missing"),
        ("The weekend before 14 July 2028", "Saturday 8 July 2028.", "matched"),
        ("The day after 31 December 2028", "1 January 2029.", "matched"),
        # the relative date itself, in the gold's words or narrower
        ("The weekend before 14 July 2028", "The weekend before 14 July 2028.", "matched"),
        ("The weekend before 14 July 2028", "The Sunday before 14 July 2028.", "matched"),
        ("The weekend before 14 July 2028", "The weekend after 14 July 2028.", "missing"),
        # a dated gold against the answer's own relative date
        ("7 May 2028", "The Sunday before 14 May 2028.", "matched"),
        ("7 May 2028", "The week before 14 May 2028.", "doubtful"),
        ("7 May 2028", "The Saturday before 14 May 2028.", "missing"),
        # no date read: the phrase's own words leave it open
        ("The weekend before 14 July 2028", "That weekend, early that July.", "doubtful"),
        ("The week of 10 July 2028", "The second week of July 2028.", "doubtful"),
        ("The week before 1 February 2029", "The last week of January 2029.", "doubtful"),
        ("The week of 10 July 2028", "The second week of July 2027.", "missing"),
        ("The week of 10 July 2028", "Early August 2028.", "missing"),
        ("The Friday after 2 June 2028", "In 2028.", "missing"),  # a year is not the day
    ],
)
def test_relative_dates_resolve_to_the_days_they_allow(
    gold: str, answer: str, expected: str
) -> None:
    assert verdict(gold, answer) == expected


def test_gold_days_computes_weekdays_and_spans() -> None:
    span, days = gold_days("The Monday after 2 June 2028", "day-first") or ((0, 0), set())
    assert days == {dt.date(2028, 6, 5)} and span == (4, 28)
    _, week = gold_days("the week of 7 June 2028", "day-first") or ((0, 0), set())
    assert min(week) == dt.date(2028, 6, 5) and max(week) == dt.date(2028, 6, 11)
    assert gold_days("11 June 2028", "day-first") is None  # not relative
    assert gold_days("The week before 11 June", "day-first") is None  # no year: no anchor
    assert states_one_of("on 5 June, a Monday", {dt.date(2028, 6, 5)}, "day-first")
    assert not states_one_of("Tuesday 5 June", {dt.date(2028, 6, 5)}, "day-first")


@pytest.mark.parametrize(
    ("decoy", "answer", "outcome"),
    [
        ("a copper kettle", "That never came up for Ines.", "correct"),
        ("a copper kettle", "Ines bought a copper kettle.", "fabricated"),
        # A decline beside the decoy, offered as a question: a guess, or another's answer?
        # No sure call (issue 35: a guess framed as a question is for the judge).
        ("a copper kettle", "I'm not sure... maybe a copper kettle?", "unresolved"),
        ("a copper kettle", "That was Ravi, who bought a copper kettle; Ines didn't.", "correct"),
        ("a copper kettle", "It was Ravi who bought the copper kettle, not Ines.", "correct"),
        ("a copper kettle", "Did you mean Ravi? Let me know.", "correct"),
        ("a copper kettle", "Ines never bought anything like that.", "correct"),
        # Another item, stated plainly: no value the scorer reads and no decline it
        # knows, so no sure call ("That's outside what we covered" reads the same).
        ("a copper kettle", "She bought a teapot.", "unresolved"),
    ],
)
def test_decoys(decoy: str, answer: str, outcome: str) -> None:
    assert _decoy(decoy, answer) == outcome


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(
        st.sampled_from(["lantern", "meadow", "violin", "harbour", "pottery", "sailing"]),
        min_size=1,
        max_size=3,
        unique=True,
    )
)
def test_an_answer_that_states_the_gold_is_matched_and_its_denial_is_not(
    words: list[str],
) -> None:
    gold = ", ".join(words)
    assert verdict(gold, f"It was {gold}.") == "matched"
    assert verdict(gold, f"It was not {' or '.join(words)}.") == "missing"


def test_gold_parts_split_answers_lists_and_keep_dates_whole() -> None:
    assert free_recall.gold_parts("Yes; she loves boats") == [["Yes"], ["she loves boats"]]
    assert free_recall.gold_parts("figs, honey and jam") == [["figs", "honey", "jam"]]
    assert free_recall.gold_parts("April 26, 2028") == [["April 26  2028"]]
    assert free_recall.gold_parts("twenty-one tins and a dozen jars") == [["21 tins", "12 jars"]]


def test_polarity_reads_the_first_committed_word() -> None:
    assert free_recall.polarity("Probably not. She likes it here.") == "no"
    assert free_recall.polarity("Most likely, given the job.") == "yes"
    assert free_recall.polarity("Yes, though she isn't sure.") == "yes"
    assert free_recall.polarity("Hard to say.") is None
    assert free_recall.polarity("She works at the bakery.") is None


def test_token_f1_follows_locomo() -> None:
    # normalised "the blue bike" -> "blue bike"; "a bike" -> "bike": 1 shared token
    assert token_f1("the blue bike", "a bike") == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert token_f1("nothing alike", "blue bike") == 0.0
    assert token_f1("Painting!", "paintings") == 1.0  # Porter stems agree
    # category 1: each gold part's best F1 against the answer's comma parts, averaged
    assert locomo_f1("harp, oboe", "oboe, flute", 1) == pytest.approx(0.5)
    # category 3: only the gold before its first ';'
    assert locomo_f1("lake cabin", "lake cabin; likes hiking", 3) == 1.0
    assert locomo_f1("7 May 2028", "7 May 2028", 2) == 1.0
    with pytest.raises(ValueError, match="no token-F1"):
        locomo_f1("anything", "gold", 5)
