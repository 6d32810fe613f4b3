"""Value formats: the shipped original suite's expected values (money in three
currencies, day-month dates without a year, clock times, short codes) matched in the
renderings a reader plausibly uses, and near misses kept apart. Each case asserts the
outcome class and the reason."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from continuity.probes.scoring import contains_value, score_answer
from continuity.traces.schema import (
    ActiveConstraintExpectation,
    CommitmentStatusExpectation,
    Expectation,
    Fact,
    NextActionExpectation,
    SupersededCurrentExpectation,
)
from continuity.traces.validate import load_trace
from tests.conftest import ORIGINALS

SHIPPED: dict[tuple[str, str], Expectation] = {
    (trace.trace_id, probe.probe_id): probe.expectation
    for trace in (load_trace(p.read_bytes(), source=str(p)) for p in ORIGINALS.glob("*.json"))
    for probe in trace.probes
}

BUFFET = SHIPPED["orchard-hall-booking", "p06"]  # £483.00, was £414.00
DOORS = SHIPPED["orchard-hall-booking", "p05"]  # 7:30pm, was 7pm
REFUND = SHIPPED["brightline-return", "p06"]  # €456.00, was €387.60
COLLECTION = SHIPPED["brightline-return", "p05"]  # Thursday 15 April, was Wednesday 14 April
DEADLINE = SHIPPED["brightline-return", "p11"]  # replacement quote, Monday 19 April, noon
RULES = SHIPPED["brightline-return", "p03"]  # Lumora Trade, €560, email only
REMOVALS = SHIPPED["fernway-office-move", "p06"]  # £1,745, was £1,640
INSTALL = SHIPPED["fernway-office-move", "p05"]  # Friday 18 June, was Wednesday 16 June
HANDBACK = SHIPPED["fernway-office-move", "p11"]  # handback, Tuesday 22 June, 10am
BUDGET = SHIPPED["fernway-office-move", "p03"]  # Larchmont, £1,800, Priya
PITCH = SHIPPED["harbor-market-stall", "p05"]  # C7, was B14
SIGNAGE = SHIPPED["harbor-market-stall", "p06"]  # $172.50, was $148.00
VISIT = SupersededCurrentExpectation(  # the hard suite's shape: a date with its year
    current=Fact(value="24 March 2027", evidence=("t1",)),
    superseded=(Fact(value="14 March 2027", evidence=("t1",)),),
)

CURRENT = "current value only"
BOTH = "current and superseded values"
OLD = "a superseded value"
ANOTHER_FORM = "another value, of a form the probe does not match"
NUMBERS_KEPT = "another form, holding every number of the expected value"
NO_VALUE = "no value of the expected kind and no recognised decline"
OTHER = "1 other value(s), not the current value"

CASES: list[tuple[str, Expectation, str, str, str]] = [
    # money: any of $ £ €, thousands separators and .00 optional, the currency must agree
    ("pounds without pence", BUFFET, "£483", "correct", CURRENT),
    ("pounds in a sentence", BUFFET, "The buffet comes to £483 in total.", "correct", CURRENT),
    ("pounds as a code", BUFFET, "GBP 483.00", "correct", CURRENT),
    ("pounds as a word", BUFFET, "483 pounds", "correct", CURRENT),
    ("pounds stale then current", BUFFET, "£414.00 then £483", "conflicted", BOTH),
    ("pounds stale", BUFFET, "It's £414.", "stale", OLD),
    ("pounds near miss amount", BUFFET, "£438.00", "fabricated", OTHER),
    ("pounds near miss pence", BUFFET, "£483.50", "fabricated", OTHER),
    ("pounds near miss currency dollars", BUFFET, "$483", "fabricated", OTHER),
    ("pounds near miss currency euros", BUFFET, "€483.00", "fabricated", OTHER),
    ("pounds lucky digits", BUFFET, "Order 483 is confirmed.", "fabricated", ANOTHER_FORM),
    ("euros without cents", REFUND, "Brightline is refunding €456.", "correct", CURRENT),
    ("euros as a word", REFUND, "456 euros", "correct", CURRENT),
    ("euros stale then current", REFUND, "€387.60, then €456", "conflicted", BOTH),
    ("euros superseded explicitly", REFUND, "€387.60 at first, now €456", "correct", CURRENT),
    ("euros stale", REFUND, "€387.60", "stale", OLD),
    ("euros near miss currency", REFUND, "£456.00", "fabricated", OTHER),
    ("thousands without separator", REMOVALS, "£1745 including VAT", "correct", CURRENT),
    ("thousands with pence", REMOVALS, "£1,745.00", "correct", CURRENT),
    ("thousands stale", REMOVALS, "£1640", "stale", OLD),
    ("thousands near miss amount", REMOVALS, "£1,754", "fabricated", OTHER),
    ("thousands misgrouped", REMOVALS, "£17,45", "fabricated", OTHER),
    ("thousands near miss currency", REMOVALS, "$1,745", "fabricated", OTHER),
    ("dollars one decimal", SIGNAGE, "$172.5", "correct", CURRENT),
    ("dollars stale", SIGNAGE, "$148", "stale", OLD),
    ("dollars near miss currency", SIGNAGE, "£172.50", "fabricated", OTHER),
    # dates without a year: weekday optional, any year, abbreviated or ordinal
    ("day month", INSTALL, "18 June", "correct", CURRENT),
    ("weekday comma day month", INSTALL, "Friday, 18 June", "correct", CURRENT),
    ("abbreviated ordinal", INSTALL, "Fri 18th June", "correct", CURRENT),
    ("the day of month", INSTALL, "Friday the 18th of June", "correct", CURRENT),
    ("month day", INSTALL, "June 18", "correct", CURRENT),
    ("with the year", INSTALL, "Friday 18 June 2027", "correct", CURRENT),
    ("iso", INSTALL, "2027-06-18", "correct", CURRENT),
    ("date stale", INSTALL, "16 June", "stale", OLD),
    ("date stale then current", INSTALL, "Wed 16 June, then Fri 18 June", "conflicted", BOTH),
    ("date near miss day", INSTALL, "19 June", "fabricated", OTHER),
    ("date near miss month", INSTALL, "Friday 18 July", "fabricated", OTHER),
    ("date near miss weekday", INSTALL, "Thursday 18 June", "fabricated", OTHER),
    ("date near miss year", INSTALL, "18 June 2026", "fabricated", OTHER),  # a Thursday
    ("date range", INSTALL, "16-18 June", "unresolved", NO_VALUE),  # a range is no one date
    ("abbreviated both", COLLECTION, "Thu 15 Apr", "correct", CURRENT),
    ("abbreviated stale", COLLECTION, "Wed 14 Apr", "stale", OLD),
    ("collection rebooked", COLLECTION, "14 April, rebooked for 15 April", "correct", CURRENT),
    ("collection both", COLLECTION, "14 April and 15 April", "conflicted", BOTH),
    # dates with a year: the year must be stated
    ("abbreviated month", VISIT, "24 Mar 2027", "correct", CURRENT),
    ("abbreviated month first", VISIT, "Mar 24, 2027", "correct", CURRENT),
    ("weekday agrees", VISIT, "Wednesday 24 March 2027", "correct", CURRENT),
    ("weekday disagrees", VISIT, "Tuesday 24 March 2027", "fabricated", OTHER),
    ("other year", VISIT, "24 March 2028", "fabricated", OTHER),
    ("abbreviated stale with year", VISIT, "14 Mar 2027", "stale", OLD),
    # every number of the date, beside a word the scorer cannot read as a month: no sure
    # call either way (never credited)
    ("lucky month word", VISIT, "24 Marching bands, 2027", "unresolved", NUMBERS_KEPT),
    # times: 12-hour with or without a space or dots, 24-hour, a dot for the colon
    ("time spaced", DOORS, "7:30 pm", "correct", CURRENT),
    ("time dotted", DOORS, "7.30pm", "correct", CURRENT),
    ("time p.m.", DOORS, "Doors open at 7:30 p.m.", "correct", CURRENT),
    ("time 24-hour", DOORS, "19:30", "correct", CURRENT),
    ("time 24-hour dotted", DOORS, "19.30", "correct", CURRENT),
    ("time bare 12-hour", DOORS, "7:30", "correct", CURRENT),
    ("time stale", DOORS, "7 pm", "stale", OLD),
    ("time stale 24-hour", DOORS, "19:00", "stale", OLD),
    ("time stale then current", DOORS, "7pm, then 7:30pm", "conflicted", BOTH),
    ("time near miss hour", DOORS, "8:30pm", "fabricated", OTHER),
    ("time near miss minutes", DOORS, "7:15pm", "fabricated", OTHER),
    ("time near miss half", DOORS, "7:30am", "fabricated", OTHER),
    ("time near miss 24-hour", DOORS, "17:30", "fabricated", OTHER),
    ("time lucky price", DOORS, "Tickets are $7.30 and $19.30.", "fabricated", ANOTHER_FORM),
    # short codes: whole tokens, case and a space or hyphen ignored
    ("code", PITCH, "Pitch C7.", "correct", CURRENT),
    ("code lower case", PITCH, "pitch c7", "correct", CURRENT),
    ("code spaced", PITCH, "pitch C 7", "correct", CURRENT),
    ("code stale", PITCH, "B14", "stale", OLD),
    ("code stale then current", PITCH, "B14, then C7", "conflicted", BOTH),
    ("code superseded explicitly", PITCH, "B14, now C7", "correct", CURRENT),
    ("code near miss longer", PITCH, "C70", "fabricated", OTHER),
    ("code inside a reference", PITCH, "HSM-C7", "fabricated", ANOTHER_FORM),
]

KEYWORD_CASES: list[tuple[str, Expectation, str, str, str]] = [
    (
        "deadline weekday and noon",
        DEADLINE,
        "Send the replacement quote by noon on Monday, 19 April.",
        "correct",
        "every keyword",
    ),
    (
        "deadline 12pm and ordinal",
        DEADLINE,
        "The replacement quote, by 12pm on Mon 19th April.",
        "correct",
        "every keyword",
    ),
    (
        "deadline near miss day",
        DEADLINE,
        "The replacement quote, by noon on Tuesday 20 April.",
        "fabricated",
        "1 keyword(s) missing (1 stated as another value)",
    ),
    ("handback 10 am", HANDBACK, "The handback, 22 June at 10 am.", "correct", "every keyword"),
    (
        "handback near miss 10pm",
        HANDBACK,
        "The handback, Tuesday 22 June at 10pm.",
        "fabricated",
        "1 keyword(s) missing (1 stated as another value)",
    ),
    (
        "budget without separator",
        BUDGET,
        "Never mention Larchmont; removals budget £1800; copy Priya.",
        "correct",
        "every required term",
    ),
    (
        "budget near miss currency",
        BUDGET,
        "Never mention Larchmont; removals budget $1,800; copy Priya.",
        "fabricated",
        "1 of 3 terms missing (1 stated as another value)",
    ),
    (
        "rules with cents",
        RULES,
        "Never mention Lumora Trade, spend at most €560.00, email only.",
        "correct",
        "every required term",
    ),
    (
        "rules lucky substring",
        RULES,
        "Never mention Lumora Trade, spend at most €560, voicemail only.",
        "unresolved",  # a missing phrase may be a paraphrase: no sure call
        "1 of 3 terms not found",
    ),
]


@pytest.mark.parametrize(
    ("label", "expectation", "answer", "outcome", "reason"),
    CASES + KEYWORD_CASES,
    ids=[c[0] for c in CASES + KEYWORD_CASES],
)
def test_rendering_is_judged_as_intended(
    label: str, expectation: Expectation, answer: str, outcome: str, reason: str
) -> None:
    score = score_answer(expectation, answer)
    assert (score.outcome, score.reason) == (outcome, reason)
    assert score.correct == (None if outcome == "unresolved" else outcome == "correct")


SUPERSEDED = sorted(
    (key, exp) for key, exp in SHIPPED.items() if isinstance(exp, SupersededCurrentExpectation)
)


@pytest.mark.parametrize(("key", "exp"), SUPERSEDED, ids=["-".join(k) for k, _ in SUPERSEDED])
def test_every_shipped_value_is_its_own_kind(
    key: tuple[str, str], exp: SupersededCurrentExpectation
) -> None:
    current = exp.current.value
    old = [f.value for f in exp.superseded]
    assert score_answer(exp, f"It is {current}.").outcome == "correct"
    for value in old:
        assert score_answer(exp, f"It is {value}.").outcome == "stale"
        assert score_answer(exp, f"{value}, then {current}").outcome == "conflicted"


def test_every_shipped_term_is_found_as_written() -> None:
    for exp in SHIPPED.values():
        if isinstance(exp, NextActionExpectation):
            terms = [f.value for f in exp.keywords]
        elif isinstance(exp, ActiveConstraintExpectation) and exp.mode == "recall":
            terms = [f.value for f in exp.required]
        else:
            continue
        assert score_answer(exp, "; ".join(terms)).correct, terms


# Renderings that used to be blind spots, now read as the value.
FORMERLY_MISSED: list[tuple[str, Expectation, str]] = [
    ("year left out", VISIT, "The visit is on 24 March."),
    ("amount without a currency", BUFFET, "It comes to 483.00 in total."),
    ("spelled-out day", INSTALL, "The eighteenth of June."),
    ("hours suffix", DOORS, "Doors at 1930 hrs."),
]


@pytest.mark.parametrize(
    ("label", "expectation", "answer"), FORMERLY_MISSED, ids=[c[0] for c in FORMERLY_MISSED]
)
def test_former_blind_spots_are_read(label: str, expectation: Expectation, answer: str) -> None:
    assert score_answer(expectation, answer).outcome == "correct"


BLIND_SPOTS: list[tuple[str, Expectation, str]] = [
    ("relative day", INSTALL, "The day after Thursday 17 June."),
    ("amount in thousands shorthand", REMOVALS, "About £1.7k, so £1,745 exactly."),
    # A rare word that names a kind of business still identifies the name on its own.
    (
        "rare kind word of a forbidden name",
        ActiveConstraintExpectation(
            mode="task", forbidden=(Fact(value="Quillmoor Vintners", evidence=("t1",)),)
        ),
        "Ask the local vintners for a mixed case.",
    ),
    # Readiness without a draft word asserts no stage.
    (
        "ready before it goes out",
        CommitmentStatusExpectation(
            subject=Fact(value="reply to the council", evidence=("t1",)), status="DRAFTED"
        ),
        "The reply is ready for your review before it goes out.",
    ),
    # "once" with a past verb the scorer does not know as past reads as not yet happened.
    (
        "once with an irregular past",
        CommitmentStatusExpectation(
            subject=Fact(value="reply to the council", evidence=("t1",)), status="SENT"
        ),
        "Once we sent it, the council replied.",
    ),
]

# Answers the scorer credits that a careful reader would not (strict xfails).
FALSE_CREDITS: list[tuple[str, Expectation, str, str]] = [
    # A second amount followed by the asked quantity's own noun reads as context.
    (
        "candidate amount labelled with the asked noun",
        REFUND,
        "The refund is €456.00, though one email said a €465 refund.",
        "fabricated",
    ),
]


@pytest.mark.xfail(reason="a blind spot listed in the README", strict=True)
@pytest.mark.parametrize(
    ("label", "expectation", "answer", "verdict"), FALSE_CREDITS, ids=[c[0] for c in FALSE_CREDITS]
)
def test_known_false_credits_are_misjudged(
    label: str, expectation: Expectation, answer: str, verdict: str
) -> None:
    assert score_answer(expectation, answer).outcome == verdict


@pytest.mark.xfail(reason="a blind spot listed in the README", strict=True)
@pytest.mark.parametrize(
    ("label", "expectation", "answer"), BLIND_SPOTS, ids=[c[0] for c in BLIND_SPOTS]
)
def test_known_blind_spots_are_misjudged(label: str, expectation: Expectation, answer: str) -> None:
    assert score_answer(expectation, answer).outcome == "correct"


SYMBOLS = {"$": "USD", "£": "GBP", "€": "EUR"}


def _renderings(symbol: str, cents: int) -> list[str]:
    amount = Decimal(cents) / 100
    grouped = f"{amount:,.2f}"
    short = grouped.removesuffix(".00")
    return [
        f"{symbol}{grouped}",
        f"{symbol}{short}",
        f"{symbol}{grouped.replace(',', '')}",
        f"{symbol} {short}",
        f"{SYMBOLS[symbol]} {grouped}",
    ]


@given(
    symbol=st.sampled_from(sorted(SYMBOLS)),
    cents=st.integers(min_value=0, max_value=10**9),
    other=st.integers(min_value=0, max_value=10**9),
)
def test_money_renderings_agree_and_other_amounts_do_not(
    symbol: str, cents: int, other: int
) -> None:
    renderings = _renderings(symbol, cents)
    for value in renderings:
        for answer in renderings:
            assert contains_value(f"It is {answer}.", value)
    for foreign in SYMBOLS.keys() - {symbol}:
        assert not contains_value(_renderings(foreign, cents)[0], renderings[0])
    if other != cents:
        assert not contains_value(_renderings(symbol, other)[0], renderings[0])


@given(hour=st.integers(min_value=0, max_value=23), minute=st.integers(min_value=0, max_value=59))
def test_twelve_and_twenty_four_hour_times_agree(hour: int, minute: int) -> None:
    half = "am" if hour < 12 else "pm"
    twelve = f"{(hour - 1) % 12 + 1}:{minute:02d}{half}"
    renderings = [
        twelve,
        twelve.replace(half, f" {half}"),
        twelve.replace(":", "."),
        f"{hour:02d}:{minute:02d}",
    ]
    for value in renderings:
        for answer in renderings:
            assert contains_value(f"at {answer}", value), (value, answer)
    shifted = f"{(hour + 1) % 24:02d}:{minute:02d}"
    assert not contains_value(f"at {shifted}", twelve)
