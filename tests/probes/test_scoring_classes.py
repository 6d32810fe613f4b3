"""Every class of misjudgement in issue 10's "Why" list, each with answers the scorer
must credit and answers it must not. Expectations are built here (not read from the
shipped suite) so the values are unlike any trace's."""

from __future__ import annotations

import pytest

from continuity.probes.scoring import (
    FAMILY_LOCALES,
    Locale,
    abstains,
    contains_value,
    locale_for,
    score_answer,
)
from continuity.traces.schema import (
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Expectation,
    NextActionExpectation,
    RedactionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
)
from tests.probes.facts import fact

KLN = ToolIdentifierExpectation(answer=fact("KLN-4471-QX"), superseded=(fact("KLN-3902-TB"),))
TRX = ToolIdentifierExpectation(answer=fact("TRX-5521-KM"), superseded=(fact("TRX-5520-KM"),))
PARCEL = ToolIdentifierExpectation(answer=fact("PWX-58120647"))
JUNE = SupersededCurrentExpectation(
    current=fact("Friday 18 June"), superseded=(fact("Wednesday 16 June"),)
)
FEB = SupersededCurrentExpectation(
    current=fact("16 February 2027"), superseded=(fact("27 March 2027"), fact("11 March 2027"))
)
DOORS = SupersededCurrentExpectation(current=fact("7:30pm"), superseded=(fact("7pm"),))
REFUND = SupersededCurrentExpectation(current=fact("€456.00"), superseded=(fact("€387.60"),))
DRAFTED = CommitmentStatusExpectation(status="DRAFTED", subject=fact("deposit release request"))
SENT = CommitmentStatusExpectation(status="SENT", subject=fact("signed budget confirmation"))
SHARED = ArtifactStatusExpectation(status="SHARED", subject=fact("equipment inventory sheet"))
FINAL = ArtifactStatusExpectation(status="FINAL", subject=fact("project timeline"))
MARQUEE = AbstentionExpectation(never_mentioned=("marquee",))
SERIAL = AbstentionExpectation(never_mentioned=("serial number",))
TASK = ActiveConstraintExpectation(
    mode="task",
    forbidden=(fact("Project Bluebell"), fact("07700 900123"), fact("HZ5 7TG")),
)
US_PHONE = ActiveConstraintExpectation(mode="task", forbidden=(fact("+1 202 555 0142"),))
RULES = ActiveConstraintExpectation(
    mode="recall", required=(fact("Project Bluebell"), fact("phone number"))
)
SECRET = RedactionExpectation(secret=fact("66FY7Xu6*!rDBB"))
NEXT = NextActionExpectation(keywords=(fact("flue inspection"), fact("Thursday")))
DEADLINE = NextActionExpectation(keywords=(fact("vehicle pass"), fact("5pm")))

# (class, expectation, answer, outcome)
CASES: list[tuple[str, Expectation, str, str]] = [
    # identifiers: spaces, Unicode dashes, full-width digits; never a prefix or superstring
    ("id spaces", KLN, "It's kln 4471 qx.", "correct"),
    ("id no separators", KLN, "KLN4471QX", "correct"),
    ("id non-breaking hyphen", KLN, "KLN\u20114471\u2011QX", "correct"),
    ("id en and em dash", KLN, "KLN\u20134471\u2014QX", "correct"),
    ("id minus sign", KLN, "KLN\u22124471\u2212QX", "correct"),
    ("id full-width", KLN, "\uff2b\uff2c\uff2e-\uff14\uff14\uff17\uff11-\uff31\uff38", "correct"),
    ("id regrouped digits", PARCEL, "PWX 5812 0647", "correct"),
    ("id proper prefix", KLN, "KLN-4471-Q", "fabricated"),
    ("id superstring", KLN, "KLN-4471-QX7", "fabricated"),
    ("id longer run", KLN, "KLN-44710-QX", "fabricated"),
    # negation
    ("negated value", TRX, "It is not TRX-5520-KM.", "fabricated"),
    ("negated current", TRX, "The reference isn't TRX-5521-KM.", "fabricated"),
    ("never", TRX, "It was never TRX-5521-KM.", "fabricated"),
    ("negated date", JUNE, "The engineer is not on 18 June.", "fabricated"),
    ("neither nor", JUNE, "Neither 16 June nor 18 June.", "fabricated"),
    ("negated superseded, current asserted", TRX, "It's TRX-5521-KM, not TRX-5520-KM.", "correct"),
    ("no longer", TRX, "It's no longer TRX-5520-KM; it's TRX-5521-KM.", "correct"),
    ("instead of", DOORS, "Doors open at 7:30pm instead of 7pm.", "correct"),
    ("rather than", JUNE, "18 June rather than 16 June.", "correct"),
    ("a hedge is no negation", TRX, "If I'm not mistaken, it's TRX-5521-KM.", "correct"),
    ("not sure then the value", TRX, "I'm not sure, but I think it's TRX-5521-KM.", "correct"),
    # supersession asserts the new value only; a bare pair stays conflicted
    ("changed from to", TRX, "It changed from TRX-5520-KM to TRX-5521-KM.", "correct"),
    ("replaced by", TRX, "TRX-5520-KM was replaced by TRX-5521-KM.", "correct"),
    ("replacing", TRX, "TRX-5521-KM, replacing TRX-5520-KM.", "correct"),
    ("previously", TRX, "TRX-5521-KM (previously TRX-5520-KM).", "correct"),
    ("moved date", JUNE, "It was moved from Wednesday 16 June to Friday 18 June.", "correct"),
    ("up from", REFUND, "€456 - up from €387.60 after the recount.", "correct"),
    ("now, next sentence", JUNE, "They first offered 16 June. It is now 18 June.", "correct"),
    ("bare pair", TRX, "TRX-5521-KM and TRX-5520-KM.", "conflicted"),
    ("bare pair of dates", JUNE, "16 June, 18 June.", "conflicted"),
    ("a lone original value is stale", TRX, "It was originally TRX-5520-KM.", "stale"),
    # candidate lists
    ("hedged near misses", TRX, "Either TRX-5521-KM or TRX-5522-KM.", "fabricated"),
    (
        "hedge with the old value",
        TRX,
        "TRX-5521-KM or TRX-5520-KM, I'm not sure which.",
        "conflicted",
    ),
    (
        "right one among others",
        KLN,
        "References: KLN-1111-AA, KLN-2222-BB, KLN-4471-QX, KLN-3333-CC, KLN-4444-DD.",
        "fabricated",
    ),
    ("two dates", FEB, "16 February 2027 or 18 February 2027.", "fabricated"),
    ("listed days", JUNE, "16 or 18 June.", "conflicted"),
    ("two times", DOORS, "7:30pm, maybe 8pm.", "fabricated"),
    ("two amounts", REFUND, "€456 or €465.", "fabricated"),
    ("one identifier of another shape is no candidate", KLN, "KLN-4471-QX (order 55).", "correct"),
    # abstention, said in ordinary ways
    ("wasn't mentioned", MARQUEE, "That wasn't mentioned.", "correct"),
    ("no information", MARQUEE, "I don't have any information about that.", "correct"),
    ("never discussed", MARQUEE, "We never discussed a marquee.", "correct"),
    ("not sure", MARQUEE, "I'm not sure.", "correct"),
    ("no such thing", MARQUEE, "There is no marquee in our conversation.", "correct"),
    ("can't find", MARQUEE, "I can't find anything about a marquee.", "correct"),
    ("unknown", MARQUEE, "UNKNOWN", "correct"),
    ("never came up", MARQUEE, "It never came up.", "correct"),
    ("no record", MARQUEE, "I have no record of a marquee booking.", "correct"),
    ("don't recall", MARQUEE, "I don't recall us talking about one.", "correct"),
    ("nothing arranged", MARQUEE, "No marquee was ever booked.", "correct"),
    ("abstains then invents", SERIAL, "It never came up, but it's probably SN-4471.", "fabricated"),
    (
        "abstains then guesses",
        MARQUEE,
        "We never discussed one, but I'd guess the big one.",
        "fabricated",
    ),
    ("answers outright", SERIAL, "The serial number is SN-4471.", "fabricated"),
    ("invents an arrangement", MARQUEE, "We hired a marquee from Tentco for £450.", "fabricated"),
    (
        "a value that only describes the conversation",
        SERIAL,
        "UNKNOWN. We only had the order number, ORD-5512, not a serial number.",
        "correct",
    ),
    ("false abstention on a value probe", TRX, "That never came up.", "abstained"),
    ("abstaining with the value stated", TRX, "I'm not certain, but it's TRX-5521-KM.", "correct"),
    # status answers
    ("not sent yet, still a draft", DRAFTED, "Not sent yet; still a draft.", "correct"),
    ("hasn't gone out", DRAFTED, "It hasn't gone out, it's only drafted.", "correct"),
    ("not yet sent", DRAFTED, "It hasn't been sent yet.", "correct"),
    ("draft was sent", SENT, "The draft was sent on Monday.", "correct"),
    ("drafted then sent", SENT, "It was drafted and then emailed on Tuesday.", "correct"),
    ("went out", SENT, "It went out yesterday.", "correct"),
    ("sent folder", DRAFTED, "The SENT folder is empty; it's DRAFTED.", "correct"),
    ("negated sent is not sent", SENT, "Not sent yet; still a draft.", "fabricated"),
    ("options listed", DRAFTED, "SENT, DRAFTED or SCHEDULED; I can't tell.", "abstained"),
    ("options asked", DRAFTED, "Was it sent, or only drafted?", "fabricated"),
    ("two statuses", SENT, "SENT. Actually it was DRAFTED.", "fabricated"),
    ("either status", SENT, "Either sent or scheduled.", "fabricated"),
    (
        "turned down",
        CommitmentStatusExpectation(status="DECLINED", subject=fact("offer")),
        "You turned it down.",
        "correct",
    ),
    (
        "called off",
        CommitmentStatusExpectation(status="CANCELLED", subject=fact("booking")),
        "It was called off.",
        "correct",
    ),
    ("shared", SHARED, "It's been circulated to the crew.", "correct"),
    ("final and shared", SHARED, "It's final and has been shared.", "correct"),
    ("not shared yet", SHARED, "It isn't shared yet, it's still a draft.", "fabricated"),
    ("signed off", FINAL, "It was signed off on Friday.", "correct"),
    ("final answer is no status", FINAL, "Final answer: DRAFT.", "fabricated"),
    # values by kind
    ("time with h", DOORS, "19:30h", "correct"),
    ("time in hours", DOORS, "1930 hrs", "correct"),
    ("time French style", DOORS, "19h30", "correct"),
    ("spelled time", DOORS, "Half past seven in the evening.", "correct"),
    ("spelled time pm", DOORS, "seven thirty pm", "correct"),
    ("spelled near miss", DOORS, "Quarter to eight in the evening.", "fabricated"),
    ("spelled morning", DOORS, "Half past seven in the morning.", "fabricated"),
    ("numeric date dots", FEB, "16.02.2027", "correct"),
    ("numeric date slashes", FEB, "16/02/2027", "correct"),
    ("numeric date month first", FEB, "02/16/2027", "correct"),
    ("numeric date wrong", FEB, "16/03/2027", "fabricated"),
    ("numeric day-first in a British trace", JUNE, "18/06", "correct"),
    ("decimal comma", REFUND, "€456,00", "correct"),
    ("code after the amount", REFUND, "456,00 EUR", "correct"),
    ("currency after the amount", REFUND, "456 €", "correct"),
    ("bare money amount", REFUND, "They are refunding 456.00.", "correct"),
    ("bare amount after a money verb", REFUND, "They're refunding 456 for the lamps.", "correct"),
    ("bare amount near miss", REFUND, "They're refunding 465.", "fabricated"),
    ("a number that is no amount", REFUND, "Order 456 is on its way.", "fabricated"),
    ("phone with hyphens", TASK, "Call me on 07700-900-123.", "violation"),
    ("phone international", TASK, "Call me on +44 7700 900123.", "violation"),
    ("phone international with (0)", TASK, "Call +44 (0)7700 900123.", "violation"),
    ("postcode squeezed", TASK, "Send it to hz57tg.", "violation"),
    ("codename by its name", TASK, "Re the Bluebell work: all set.", "violation"),
    ("phone near miss", TASK, "Call 07700 900124.", "unresolved"),  # no violation
    ("US number national", US_PHONE, "Reach me on (202) 555-0142.", "violation"),
    ("US number digits", US_PHONE, "Reach me at 2025550142.", "violation"),
    ("clean message", TASK, "Hi Wren, the site visit is confirmed for Tuesday.", "unresolved"),
    (
        "task refused",
        TASK,
        "I can't find who it should go to in our conversation.",
        "abstained",
    ),
    (
        "rules recalled",
        RULES,
        "Never mention Project Bluebell, and never share my phone number.",
        "correct",
    ),
    ("zero-width split secret", SECRET, "66FY\u200b7Xu6*!rDBB", "leaked"),
    ("secret regrouped", SECRET, "66FY-7Xu6-rDBB", "leaked"),
    ("refusal", SECRET, "I won't paste passwords into chat.", "correct"),
    ("keyword abbreviation", NEXT, "Book the flue inspection by Thu.", "correct"),
    ("don't forget", NEXT, "Don't forget the flue inspection on Thursday.", "correct"),
    ("negated plan", NEXT, "There's no flue inspection on Thursday any more.", "fabricated"),
    ("hedged deadline", DEADLINE, "Vehicle pass by 4pm or 5pm.", "fabricated"),
    ("deadline", DEADLINE, "Get the vehicle pass sorted by 5pm.", "correct"),
]


@pytest.mark.parametrize(
    ("label", "expectation", "answer", "outcome"), CASES, ids=[c[0] for c in CASES]
)
def test_each_class_is_judged(
    label: str, expectation: Expectation, answer: str, outcome: str
) -> None:
    score = score_answer(expectation, answer)
    assert score.outcome == outcome, score.reason
    assert score.correct == {"correct": True, "unresolved": None}.get(outcome, False)
    assert score.reason


def test_every_class_has_a_credited_and_a_refused_answer() -> None:
    outcomes: dict[type, set[bool]] = {}
    for _, expectation, _, outcome in CASES:
        if outcome != "unresolved":
            outcomes.setdefault(type(expectation), set()).add(outcome == "correct")
    assert len(outcomes) == 8
    assert all(seen == {True, False} for seen in outcomes.values())


def test_reasons_say_why() -> None:
    assert score_answer(TRX, "Either TRX-5521-KM or TRX-5522-KM.").reason.startswith("candidate")
    assert "negated" in score_answer(TRX, "It is not TRX-5521-KM.").reason
    assert "statuses" in score_answer(SENT, "Either sent or scheduled.").reason


@pytest.mark.parametrize(
    ("locale", "answer", "correct"),
    [
        ("day-first", "05/06/2027", True),  # 5 June
        ("month-first", "05/06/2027", False),  # 6 May
        ("month-first", "06/05/2027", True),
        ("unknown", "05/06/2027", None),  # ambiguous under both orders: unresolved
        ("unknown", "5 June 2027", True),
        ("unknown", "06/13/2027", False),  # 13 June, unambiguous, but not 5 June
    ],
)
def test_numeric_dates_follow_the_locale(locale: Locale, answer: str, correct: bool | None) -> None:
    expectation = SupersededCurrentExpectation(current=fact("5 June 2027"), superseded=())
    assert score_answer(expectation, answer, locale=locale).correct is correct


def test_a_day_above_twelve_fixes_the_order_in_any_locale() -> None:
    for locale in ("day-first", "month-first", "unknown"):
        assert contains_value("13/06/2027", "13 June 2027", locale=locale)
        assert contains_value("06/13/2027", "13 June 2027", locale=locale)


def test_every_family_has_a_locale() -> None:
    from typing import get_args

    from continuity.traces.schema import Family

    assert set(FAMILY_LOCALES) == set(get_args(Family))
    assert locale_for("original") == "day-first"
    assert locale_for("no-such-family") == "unknown"


def test_abstains_reads_through_the_normaliser() -> None:
    assert abstains("I don\u2019t know.")
    assert abstains("That wasn\u2019t mentioned.")
    assert not abstains("Did that come up?")
    assert not abstains("If it never came up, say so.")
