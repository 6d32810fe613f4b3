"""Free recall by meaning (issue 35, item 5): rarity decides, paraphrases of frequency,
number and abbreviation match, and what is neither sure nor wrong stays doubtful.

Every answer here is written for these tests; the property tests generate their words,
so no rule can pass by knowing a string."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from wordfreq import zipf_frequency

from continuity.probes import free_recall
from continuity.probes.paraphrase import (
    Rate,
    compare_rates,
    expand_abbreviations,
    rates,
    spell_numbers,
)
from continuity.probes.recall_words import GENERIC_ZIPF, closed_class, generic, stem
from tests.probes.test_free_recall import verdict

_PROPERTY = settings(max_examples=150, deadline=None, derandomize=True, database=None)


# ------------------------------------------------------------------ three-way verdicts


def test_score_parts_returns_matched_total_and_doubtful() -> None:
    parts = free_recall.score_parts(
        "A painting class and a harp.", "pottery class, harp", "day-first"
    )
    assert isinstance(parts, free_recall.RecallParts)
    assert parts == free_recall.RecallParts(matched=1, total=2, doubtful=1)
    assert tuple(free_recall.score_parts("Nothing.", "harp", "day-first")) == (0, 1, 0)


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        # the rare word decides: two of three shared is not enough when it differs
        ("pottery class on Saturday", "A painting class on Saturday.", "doubtful"),
        ("pottery class on Saturday", "She does pottery every Saturday.", "doubtful"),
        ("pottery class on Saturday", "The pottery class, on Saturdays.", "matched"),
        # a generic word may go unsaid, when nothing stands in its place
        ("a pottery workshop on Saturday night", "Pottery workshop on Saturday.", "matched"),
        ("big old barn", "A small old barn.", "doubtful"),
        # a closed class member in the gold's place contradicts it
        ("pottery class on Saturday", "A pottery class on Sunday.", "missing"),
        ("first prize for her marmalade", "Second prize for her marmalade.", "missing"),
        ("3 kittens", "She has 4 kittens.", "missing"),
        ("first prize for her marmalade", "On 21st May, a prize for her marmalade.", "doubtful"),
        ("a green kayak", "A red kayak.", "missing"),
        # a modifier of the class stays with its word
        ("2 ferrets and a parrot", "A parrot and two ferrets.", "matched"),
        ("2 ferrets and a parrot", "Two parrots and a ferret.", "doubtful"),
        ("a green kayak", "A red canoe and a green kayak.", "matched"),
        ("a green kayak", "A green canoe and a red kayak.", "missing"),
        # another name beside a held part of the same name; a name beside a word may
        # be a narrower place
        ("Captain Orwin Halloway", "Captain Orwin Pettigrew.", "missing"),
        ("Captain Orwin Halloway", "Captain Orwin.", "doubtful"),
        ("Orwin Halloway", "Orwin Pettigrew.", "missing"),  # a name run starts a sentence
        ("a harp recital in Lisbon", "A harp recital in Alfama.", "doubtful"),
        # another value of the kind, or a denial, contradicts a typed value
        ("9 May 2027", "On 19 May 2027.", "missing"),
        ("June 2029", "In June 2028.", "missing"),
        ("9 May 2027", "Not on 9 May 2027.", "missing"),
        # sharing nothing distinctive is missing; sharing some is doubtful
        ("a velvet armchair", "A wooden bookcase.", "missing"),
        ("low tide", "When the tide is out.", "doubtful"),
        # an extra member asserted beside a whole list is doubtful
        ("figs, walnuts", "Figs, walnuts and some quince paste.", "doubtful"),
        ("figs, walnuts", "Figs and walnuts, specifically.", "matched"),
        ("figs, walnuts", "Figs and walnuts, both from the market.", "matched"),
        # polar golds: a reason of the answer's own that the gold does not give
        ("No; she is allergic to feathers", "No, because she hates mornings.", "doubtful"),
        ("No; she is allergic to feathers", "No - the feathers make her sneeze.", "matched"),
        ("No; she is allergic to feathers", "Not sure, but I'd guess no.", "doubtful"),
        ("No; she is allergic to feathers", "Maybe, maybe not.", "missing"),
        # candidates joined by "either ... or" offer a guess
        ("2028", "Either 2027 or 2028, I'm not sure which.", "missing"),
    ],
)
def test_rarity_decides_and_doubt_is_kept(gold: str, answer: str, expected: str) -> None:
    assert verdict(gold, answer) == expected


# ------------------------------------------------------------------ paraphrase families


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        ("every two weeks", "Fortnightly.", "matched"),
        ("fortnightly", "Every other week.", "matched"),
        ("fortnightly", "Once a fortnight.", "matched"),
        ("fortnightly", "Every week.", "missing"),
        ("twice a week", "Two times per week.", "matched"),
        ("twice a week", "Twice weekly.", "matched"),
        ("four times a week", "4x a week.", "matched"),
        ("twice a week", "A couple of times a week.", "doubtful"),
        ("twice a week", "Four times a week.", "missing"),
        ("daily", "Every day.", "matched"),
        ("daily", "Once a day.", "matched"),
        ("weekly", "Once a week.", "matched"),
        ("monthly", "Every month.", "matched"),
        ("monthly", "Every four weeks.", "doubtful"),
        ("monthly", "Weekly.", "missing"),
        ("annually", "Every year.", "matched"),
        ("yearly", "Once a year.", "matched"),
        ("every six months", "Twice a year.", "matched"),
        ("twice a year", "Every six months.", "matched"),
        ("fortnightly", "Biweekly.", "doubtful"),  # twice a week, or every two weeks
        ("once or twice a year", "Once or twice a year.", "matched"),
        ("once or twice a year", "Twice a year.", "doubtful"),
        # an answer's named days are a habit; a gold's stay words
        ("weekly", "Every Saturday.", "matched"),
        ("twice a week", "Every Monday and Thursday.", "matched"),
        ("twice a week", "On Tuesdays.", "missing"),
        ("kayaking every Saturday", "Kayaking on Saturdays.", "matched"),
        ("kayaking every Saturday", "Kayaking every Sunday.", "missing"),
        (
            "volunteers at a cat rescue once a fortnight",
            "Volunteering at a cat rescue, every two weeks.",
            "matched",
        ),
        ("volunteers at a cat rescue once a fortnight", "At a cat rescue, weekly.", "missing"),
    ],
)
def test_frequencies_match_by_rate(gold: str, answer: str, expected: str) -> None:
    assert verdict(gold, answer) == expected


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        ("2028", "Twenty twenty-eight.", "matched"),
        ("1999", "Nineteen ninety-nine.", "matched"),
        ("28 guests", "Twenty-eight guests.", "matched"),
        ("150 tulips", "A hundred and fifty tulips.", "matched"),
        ("12 eggs", "A dozen eggs.", "matched"),
        ("6 eggs", "Half a dozen eggs.", "matched"),
        ("ten years", "A decade.", "matched"),
        ("5 years", "Half a decade.", "matched"),
        ("two times", "Twice.", "matched"),
        ("2 kittens", "A couple of kittens.", "doubtful"),
        ("under-12s hockey", "An under-twelve hockey team.", "matched"),
        ("November 2026", "Nov '26.", "matched"),
        ("November 2026", "Nov 2026.", "matched"),
    ],
)
def test_numbers_match_in_digits_or_words(gold: str, answer: str, expected: str) -> None:
    assert verdict(gold, answer) == expected


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        ("UK", "The United Kingdom.", "matched"),
        ("United Kingdom", "The UK.", "matched"),
        ("a map from LOTR", "A map from the Lord of the Rings.", "matched"),
        ("GTA:SA", "Grand Theft Auto: San Andreas.", "matched"),
        ("DIY projects", "Do it yourself projects.", "matched"),
        ("strategy MMOs", "Strategy massively multiplayer online games.", "matched"),
        ("UK", "Under kitchen cabinets.", "missing"),  # two letters need capitals
        ("United States", "The USA.", "doubtful"),  # a longer acronym may abbreviate it
        ("NYC", "New Jersey City.", "missing"),
    ],
)
def test_abbreviations_match_their_expansions(gold: str, answer: str, expected: str) -> None:
    assert verdict(gold, answer) == expected


def test_rates_read_the_count_and_the_period() -> None:
    (fortnight,) = rates("every other week")
    assert fortnight.readings == {Rate(Fraction(1, 14), "day")} and fortnight.vague is None
    (two_way,) = rates("bi-weekly")
    assert two_way.readings == {Rate(Fraction(2, 7), "day"), Rate(Fraction(1, 14), "day")}
    (few,) = rates("a few times a month")
    assert few.readings == frozenset() and few.vague == "a few"
    assert rates("a week later, on Monday") == []
    assert compare_rates(rates("weekly")[0], rates("every 7 days")[0]) == "same"


def test_spell_numbers_leaves_single_words_and_times() -> None:
    assert spell_numbers("one or two, eleven thirty") == "one or two, eleven thirty"
    assert spell_numbers("two thousand and five, twenty oh five") == "2005, 2005"
    assert spell_numbers("three hundred and twelve") == "312"


def test_expand_abbreviations_only_with_the_other_text() -> None:
    assert expand_abbreviations("The UK.", "United Kingdom") == "The UK United Kingdom."
    assert expand_abbreviations("The UK.", "Ukraine") == "The UK."
    assert expand_abbreviations("The United Kingdom.", "UK") == "The United Kingdom UK."


def test_words_by_class_and_rarity() -> None:
    assert closed_class("saturdays") == ("weekday", "saturday")
    assert closed_class("second") == ("ordinal", "2th") and stem("2nd") == "2th"
    assert closed_class("grey") == closed_class("gray") == ("colour", "gray")
    assert closed_class("may") is None  # also a verb
    assert generic("time") and not generic("pottery") and not generic("first")


# ------------------------------------------------------------------ properties

# Distinctive nouns: each rarer than the generic threshold, no one a stem-prefix of another.
_RARE = (
    "pottery", "marzipan", "origami", "falconry", "taxidermy", "calligraphy", "archery",
    "beekeeping", "embroidery", "quilting", "topiary", "harpsichord", "trombone", "ukulele",
    "accordion", "zither", "dulcimer", "bagpipes", "kayak", "canoe", "snorkel", "sourdough",
    "tripod", "spyglass", "lantern", "meadow", "violin", "harbour", "saffron", "walnut",
)  # fmt: skip
_GENERIC = ("class", "morning", "group", "trip", "club", "course", "night", "session")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_FRAMES = ("{}.", "It was {}.", "I think it was {}.", "{}, as far as I remember.")


def _related(a: str, b: str) -> bool:
    x, y = stem(a), stem(b)
    return x == y or (min(len(x), len(y)) >= 4 and (x.startswith(y) or y.startswith(x)))


def test_the_property_pools_are_what_they_claim() -> None:
    assert all(zipf_frequency(word, "en") < GENERIC_ZIPF - 1 for word in _RARE)
    assert not any(_related(a, b) for i, a in enumerate(_RARE) for b in _RARE[i + 1 :])


@_PROPERTY
@given(
    st.sampled_from(_RARE),
    st.sampled_from(_RARE),
    st.sampled_from(_GENERIC),
    st.sampled_from(_WEEKDAYS),
    st.sampled_from(_FRAMES),
    st.booleans(),
)
def test_swapping_the_rare_word_never_matches(
    rare: str, other: str, kind: str, day: str, frame: str, rare_first: bool
) -> None:
    assume(not _related(rare, other))
    gold = f"{rare} {kind} on {day}" if rare_first else f"{kind} for {rare} on {day}"
    answer = gold.replace(rare, other)
    assert verdict(gold, frame.format(gold)) == "matched"
    assert verdict(gold, frame.format(answer)) != "matched"


@_PROPERTY
@given(
    st.sampled_from(_RARE),
    st.sampled_from(_WEEKDAYS),
    st.sampled_from(_WEEKDAYS),
    st.integers(2, 12),
    st.integers(2, 12),
)
def test_another_member_of_a_closed_class_is_missing(
    rare: str, day: str, other_day: str, count: int, other_count: int
) -> None:
    assume(day != other_day and count != other_count)
    assert verdict(f"{rare} class on {day}", f"A {rare} class on {other_day}.") == "missing"
    assert verdict(f"{count} {rare}s", f"There were {other_count} {rare}s.") == "missing"


_PERIOD_ADVERBS = {"day": "daily", "week": "weekly", "month": "monthly", "year": "yearly"}
_COUNT_WORDS = {1: "once", 2: "twice"}
_NUMBER_WORDS = ("one", "two", "three", "four", "five", "six")


def _renderings(count: int, period: str) -> list[str]:
    """Ways to say `count` times a `period`."""
    forms = [f"{count} times a {period}", f"{_NUMBER_WORDS[count - 1]} times per {period}"]
    if count in _COUNT_WORDS:
        forms += [f"{_COUNT_WORDS[count]} a {period}", f"{_COUNT_WORDS[count]} each {period}"]
        forms.append(f"{_COUNT_WORDS[count]} {_PERIOD_ADVERBS[period]}")
    if count == 1:
        forms += [_PERIOD_ADVERBS[period], f"every {period}", f"each {period}"]
    return forms


@_PROPERTY
@given(
    st.integers(1, 6),
    st.sampled_from(sorted(_PERIOD_ADVERBS)),
    st.integers(1, 6),
    st.data(),
)
def test_a_rate_in_any_wording_matches_and_another_count_never_does(
    count: int, period: str, other: int, data: st.DataObject
) -> None:
    gold = data.draw(st.sampled_from(_renderings(count, period)))
    same = data.draw(st.sampled_from(_renderings(count, period)))
    assert verdict(gold, f"About {same}.") == "matched"
    assume(other != count)
    different = data.draw(st.sampled_from(_renderings(other, period)))
    assert verdict(gold, f"About {different}.") == "missing"


@_PROPERTY
@given(st.sampled_from(("day", "week", "month", "year")), st.integers(2, 9))
def test_an_interval_is_a_rate(period: str, every: int) -> None:
    spelled = _NUMBER_WORDS[every - 1] if every <= 6 else str(every)
    gold = f"every {every} {period}s"
    assert verdict(gold, f"Once every {spelled} {period}s.") == "matched"
    assert verdict(gold, f"Every {every + 1} {period}s.") == "missing"


_ONES = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
          "seventeen", "eighteen", "nineteen")  # fmt: skip
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def _say(n: int) -> str:
    """An English rendering of 1 <= n <= 999."""
    if n >= 100:
        rest = n % 100
        return f"{_ONES[n // 100]} hundred" + (f" and {_say(rest)}" if rest else "")
    if n >= 20:
        return _TENS[n // 10] + (f"-{_ONES[n % 10]}" if n % 10 else "")
    return _TEENS[n - 10] if n >= 10 else _ONES[n]


@_PROPERTY
@given(st.integers(21, 999), st.integers(1900, 2099))
def test_numbers_in_words_read_as_their_digits(n: int, year: int) -> None:
    assume(n % 10 or n >= 100)  # "thirty" alone is one word, left as it is
    assert spell_numbers(f"about {_say(n)} of them") == f"about {n} of them"
    century, rest = divmod(year, 100)
    said = _say(century) + " " + (f"oh {_ONES[rest]}" if 0 < rest < 10 else _say(rest))
    assume(rest != 0)
    assert spell_numbers(f"in {said}") == f"in {year}"
    assert verdict(str(year), f"In {said}.") == "matched"


_TITLE_WORDS = (
    "Harbour", "Lantern", "Velvet", "Orchard", "Copper", "Meadow", "Silver", "Thistle",
    "Marble", "Juniper", "Falcon", "Quarry", "Raven", "Bramble", "Ember", "Willow",
)  # fmt: skip


@_PROPERTY
@given(st.lists(st.sampled_from(_TITLE_WORDS), min_size=2, max_size=4, unique=True), st.data())
def test_an_acronym_matches_its_expansion_both_ways(words: list[str], data: st.DataObject) -> None:
    phrase = " ".join(words)
    acronym = "".join(word[0] for word in words)
    assert verdict(phrase, f"It was the {acronym}.") == "matched"
    assert verdict(acronym, f"It was the {phrase}.") == "matched"
    others = [w for w in _TITLE_WORDS if w[0] != words[-1][0]]
    wrong = data.draw(st.sampled_from(others))
    assert verdict(acronym, f"It was the {' '.join([*words[:-1], wrong])}.") != "matched"


@_PROPERTY
@given(st.lists(st.sampled_from(_RARE), min_size=1, max_size=3, unique=True))
def test_an_answer_repeating_the_gold_is_matched(words: list[str]) -> None:
    for gold in (", ".join(words), " ".join(words), f"the {words[0]} club twice a week"):
        assert verdict(gold, f"I believe it was {gold}.") == "matched"
