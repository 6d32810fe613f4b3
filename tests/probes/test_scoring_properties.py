"""Properties of the scorer over generated values: any separator rendering of an
identifier matches, no proper prefix or extension does; numeric and named dates agree
in the locale; a phone number matches in any grouping, with or without its country code;
a negated value is never asserted; a value beside a candidate of its kind is never
correct."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from continuity.probes.scoring import contains_value, score_answer
from continuity.traces.schema import SupersededCurrentExpectation, ToolIdentifierExpectation
from tests.probes.facts import fact

ALNUM = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
run = st.text(alphabet=ALNUM, min_size=2, max_size=6)


@st.composite
def identifiers(draw: st.DrawFn) -> str:
    prefix = draw(st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ", min_size=2, max_size=4))
    rest = draw(st.lists(run, min_size=1, max_size=3))
    value = "-".join([prefix, *rest])
    if not any(c.isdigit() for c in value):
        value += "-7"
    return value


SEPARATORS = ["-", " ", "", "\u2010", "\u2011", "\u2013", "\u2014", "\u2212", " - ", "/", "."]


@given(value=identifiers(), separator=st.sampled_from(SEPARATORS), lower=st.booleans())
def test_any_separator_rendering_matches(value: str, separator: str, lower: bool) -> None:
    rendered = separator.join(value.split("-"))
    rendered = rendered.lower() if lower else rendered
    expectation = ToolIdentifierExpectation(answer=fact(value))
    assert score_answer(expectation, f"The reference is {rendered}.").correct


@given(value=identifiers(), cut=st.integers(min_value=1, max_value=5), extra=run)
def test_no_proper_prefix_or_extension_matches(value: str, cut: int, extra: str) -> None:
    prefix = value[: max(1, len(value) - cut)].rstrip("-")
    expectation = ToolIdentifierExpectation(answer=fact(value))
    assert not score_answer(expectation, f"The reference is {prefix}.").correct
    assert not score_answer(expectation, f"The reference is {value}{extra}.").correct
    assert not score_answer(expectation, f"The reference is {value}-{extra}.").correct


@given(value=identifiers())
def test_a_negated_value_is_never_asserted(value: str) -> None:
    expectation = ToolIdentifierExpectation(answer=fact(value))
    for cue in ("not", "never", "no longer", "rather than"):
        assert not score_answer(expectation, f"It is {cue} {value}.").correct


@given(value=identifiers(), noise=run)
def test_a_candidate_of_the_same_shape_is_never_correct(value: str, noise: str) -> None:
    runs = value.split("-")
    rival = "-".join([*runs[:-1], (noise * 6)[: len(runs[-1])]])
    if rival.upper() == value.upper() or not any(c.isdigit() for c in rival):
        return
    expectation = ToolIdentifierExpectation(answer=fact(value))
    assert not score_answer(expectation, f"Either {value} or {rival}.").correct


@given(day=st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2099, 12, 31)))
def test_numeric_dates_agree_with_named_ones_day_first(day: dt.date) -> None:
    named = f"{day.day} {day:%B} {day.year}"
    expectation = SupersededCurrentExpectation(current=fact(named), superseded=())
    for numeric in (f"{day:%d/%m/%Y}", f"{day:%d.%m.%Y}", f"{day:%d-%m-%Y}", f"{day:%Y-%m-%d}"):
        assert score_answer(expectation, f"It is on {numeric}.", locale="day-first").correct
    swapped = f"{day:%m/%d/%Y}"
    correct = score_answer(expectation, f"It is on {swapped}.", locale="day-first").correct
    # month-first reads only when the day fixes the order (or both readings coincide)
    assert correct == (day.day > 12 or day.day == day.month)


@given(number=st.integers(min_value=1_000_000_000, max_value=9_999_999_999))
def test_a_phone_number_matches_in_any_grouping(number: int) -> None:
    digits = str(number)
    value = f"0{digits[:4]} {digits[4:]}"
    for answer in (
        f"0{digits}",
        f"0{digits[:4]}-{digits[4:7]}-{digits[7:]}",
        f"+44 {digits[:4]} {digits[4:]}",
        f"+44 (0){digits[:4]} {digits[4:]}",
        f"(0{digits[:4]}) {digits[4:]}",
    ):
        assert contains_value(f"Call {answer} today", value), answer
    other = str(number + 1)[-10:]
    assert not contains_value(f"Call 0{other}", value)
