"""Standard paraphrases that free recall reads as the same value: how often, how many, and
abbreviations.

Every function here reads normalised text (`continuity.probes.normalise`).

- **How often** (`rates`): a frequency is read as a `Rate`, a count per period. Periods
  are counted in days (an hour is 1/24, a week 7, a fortnight 14) or in months (a
  quarter is 3, a year 12). The forms are an adverb (``daily``, ``nightly``, ``weekly``,
  ``fortnightly``, ``monthly``, ``quarterly``, ``yearly``, ``annually``,
  ``semiannually``, ``biennially``, ``hourly``), a count per period (``twice a week``,
  ``3 times per month``, ``3x a week``, ``once each year``, ``five days a week``), a
  count with an adverb (``twice weekly``), and an interval (``every day``, ``every
  other week``, ``every second month``, ``(once) every four months``, ``each year``). So
  ``fortnightly``, ``every two weeks`` and ``every other week`` are one rate, as are
  ``twice a year`` and ``every six months``. In an answer, named days are a habit too
  (``every Monday and Thursday`` is twice a week, ``on Saturdays`` and ``every
  weekend`` weekly, ``mornings and nights`` twice a day); in a gold they stay
  words the answer must hold. Some forms stay open: ``biweekly``, ``bimonthly`` and
  ``biannually`` each have two readings (twice a period or every second period), and
  a vague count (``a few times a week``, ``once or twice a year``) fixes only the
  period. `compare_rates` calls two rates the same only when both have the same
  readings, different only when both are fixed and unequal, and open otherwise. Days
  and months are compared only when the rates are far apart (``weekly`` is not
  ``monthly``; ``every four weeks`` is open against it).
- **How many** (`spell_numbers`): a number written in more than one word becomes its
  digits: ``twenty-eight`` is ``28``, ``a hundred and fifty`` is ``150``, ``two
  thousand and five`` is ``2005``, a year said in pairs (``nineteen ninety-nine``,
  ``twenty twenty-eight``, ``twenty oh five``, with a first pair of eighteen to twenty)
  is its year, ``a dozen`` is ``12`` and ``half a dozen`` is ``6``; ``twice`` and
  ``thrice`` are ``two times`` and ``three times``, and ``a decade`` is its count of years.
  Single number words are left as they are (free recall already compares ``three`` with
  ``3``). A vague quantity (``a couple of``, ``a few``, ``several``, ``dozens``) is no
  number: `VAGUE_QUANTITY` finds it, and free recall calls a number against it doubtful.
- **Abbreviations** (`expand_abbreviations`): an acronym of two to six capitals (a
  final ``s`` allowed: ``MMOs``) stands for a run of words in the other text whose
  initials spell it, where ``of``, ``the``, ``and``, ``for``, ``a``, ``an``, ``in``,
  ``on``, ``to`` and ``at`` inside the run may be skipped or counted (``LOTR``: ``Lord
  of the Rings``; ``DIY``: ``do it yourself``) and a hyphen splits words
  (``CS``: ``Counter-Strike``). A two-letter acronym needs its words capitalised
  (``UK``: ``United Kingdom``, never ``under kitchen``). A year cut to two digits
  (``'26``) stands for the other text's year that ends in them.

Limits: acronyms that do not spell initials (``PhD``, ``Dr``, mixed case) and
abbreviations that shorten a word (``approx.``) are not read; an acronym for a phrase
that is not in the other text is not expanded from any dictionary.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from typing import Literal, NamedTuple

__all__ = [
    "VAGUE_QUANTITY",
    "Base",
    "Rate",
    "RateMatch",
    "RateMention",
    "compare_rates",
    "expand_abbreviations",
    "rates",
    "spell_numbers",
]

# ---------------------------------------------------------------- how many
_UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = (
    "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen",
)  # fmt: skip
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_VALUES = (
    {w: n for n, w in enumerate(_UNITS, 1)}
    | {w: n for n, w in enumerate(_TEENS, 10)}
    | {w: n for n, w in zip(range(20, 100, 10), _TENS, strict=True)}
)
_U, _T, _D = ("|".join(words) for words in (_UNITS, _TEENS, _TENS))
_TU = rf"(?:(?:{_D})(?:[\s-]+(?:{_U}))?|{_T}|{_U})"
_HUNDREDS = rf"(?:(?:{_U}|a|an)\s+hundred(?:\s+(?:and\s+)?{_TU})?)"
_UP_TO_999 = rf"(?:{_HUNDREDS}|{_TU})"
_SPELLED = re.compile(
    r"(?i)(?<![\w-])(?:"
    rf"(?P<year>(?:eighteen|nineteen|twenty)[\s-]+(?:(?:{_D})(?:[\s-]+(?:{_U}))?|{_T}"
    rf"|oh[\s-]+(?:{_U})|hundred))"
    rf"|(?P<thousands>(?:{_UP_TO_999}|a|an)\s+thousand(?:,?\s+(?:and\s+)?{_UP_TO_999})?)"
    rf"|(?P<hundreds>{_HUNDREDS})"
    rf"|(?P<compound>(?:{_D})[\s-]+(?:{_U}))"
    rf"|(?P<dozen>(?:half\s+a|a|an|{_TU})\s+dozen)"
    r")(?![\w-])"
)
VAGUE_QUANTITY = re.compile(
    r"(?i)\b(?:a\s+couple(?:\s+of)?|a\s+few|several|a\s+handful(?:\s+of)?|dozens|scores"
    r"|a\s+number\s+of|many|multiple|numerous)\b"
)


def _value(words: str) -> int:
    """The number a run of number words says (validated by `_SPELLED`)."""
    tokens = [t for t in re.split(r"[\s,-]+", words.lower()) if t and t != "and"]
    if tokens[:2] == ["half", "a"]:
        return 6
    total = current = 0
    for token in tokens:
        if token in ("a", "an"):
            current = 1
        elif token == "hundred":
            current = max(current, 1) * 100
        elif token == "thousand":
            total, current = total + max(current, 1) * 1000, 0
        elif token == "dozen":
            current = max(current, 1) * 12
        else:
            current += _VALUES[token]
    return total + current


def _year(words: str) -> int:
    first, rest = re.split(r"[\s-]+", words.lower(), maxsplit=1)
    if rest == "hundred":
        return _VALUES[first] * 100
    rest = re.sub(r"^oh[\s-]+", "", rest)
    return _VALUES[first] * 100 + _value(rest)


_DECADES = re.compile(
    rf"(?i)(?<![\w-])(?:(?P<half>half\s+a)|a|an|one|(?P<count>{_U}|\d{{1,2}}))\s+decades?(?![\w-])"
)
_MULTIPLES = re.compile(r"(?i)(?<![\w-])(?:(?P<twice>twice)|(?P<thrice>thrice))(?![\w-])")


def spell_numbers(text: str) -> str:
    """`text` with every number written in more than one word (or as ``a dozen``) in
    digits, and ``twice`` and ``thrice`` as ``two times`` and ``three times``; single
    number words are left as they are."""

    def digits(m: re.Match[str]) -> str:
        return str(_year(m.group(0)) if m["year"] else _value(m.group(0)))

    def times(m: re.Match[str]) -> str:
        return "two times" if m["twice"] else "three times"

    def decades(m: re.Match[str]) -> str:
        if m["half"]:
            return "5 years"
        count = m["count"]
        n = (int(count) if count.isdigit() else _VALUES[count.lower()]) if count else 1
        return f"{10 * n} years"

    text = _DECADES.sub(decades, _SPELLED.sub(digits, text))
    return _MULTIPLES.sub(times, text)


# ---------------------------------------------------------------- how often
Base = Literal["day", "month"]


class Rate(NamedTuple):
    """So many events per period; `per` is the count divided by the period's length in
    `base` units (``twice a week`` is 2/7 per day)."""

    per: Fraction
    base: Base


class RateMention(NamedTuple):
    """A frequency in a text: its span, its readings (one when it is fixed, two for
    ``biweekly``; none when its count is vague), the period it names (as a rate of one
    a period) and, for a vague count, its words (``a few``, ``once or twice``)."""

    start: int
    end: int
    readings: frozenset[Rate]
    period: Rate
    vague: str | None


_DAYS_PER_MONTH = Fraction(36525, 1200)  # 365.25 / 12
_PERIODS: dict[str, Rate] = {
    "hour": Rate(Fraction(24), "day"),
    "day": Rate(Fraction(1), "day"),
    "night": Rate(Fraction(1), "day"),
    "week": Rate(Fraction(1, 7), "day"),
    "fortnight": Rate(Fraction(1, 14), "day"),
    "month": Rate(Fraction(1), "month"),
    "quarter": Rate(Fraction(1, 3), "month"),
    "year": Rate(Fraction(1, 12), "month"),
}
# Adverbs: each a tuple of (count, period, every n periods) readings.
_ADVERBS: dict[str, tuple[tuple[int, str, int], ...]] = {
    "hourly": ((1, "hour", 1),),
    "daily": ((1, "day", 1),),
    "nightly": ((1, "night", 1),),
    "weekly": ((1, "week", 1),),
    "fortnightly": ((1, "fortnight", 1),),
    "biweekly": ((2, "week", 1), (1, "week", 2)),
    "monthly": ((1, "month", 1),),
    "bimonthly": ((2, "month", 1), (1, "month", 2)),
    "quarterly": ((1, "quarter", 1),),
    "yearly": ((1, "year", 1),),
    "annually": ((1, "year", 1),),
    "biannually": ((2, "year", 1), (1, "year", 2)),
    "semiannually": ((2, "year", 1),),
    "biennially": ((1, "year", 2),),
}
_ADVERB = r"(?P<adverb>hourly|daily|nightly|weekly|fortnightly|bi-?weekly|monthly|bi-?monthly"
_ADVERB += r"|quarterly|yearly|annually|bi-?annually|semi-?annually|half-yearly|biennially)"
_COUNT_WORDS = {"once": 1, "twice": 2, "thrice": 3, "a": 1, "an": 1, "single": 1}
_COUNT = r"\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_TIMES = rf"(?:once|twice|thrice|(?:{_COUNT}|a|an)\s+times?|\d{{1,2}}\s?x)"  # "3x a week"
_VAGUE_TIMES = (
    r"(?:a\s+few|a\s+couple(?:\s+of)?|several|multiple|many|a\s+number\s+of|some"
    r"|a\s+handful\s+of)\s+times"
    rf"|(?:once|twice|thrice|{_COUNT})(?:\s+times)?\s+or\s+(?:twice|thrice|(?:{_COUNT})\s+times)"
)
_PERIOD = r"(?P<period>hour|day|night|week|fortnight|month|quarter|year)s?"
_EDGE_BEFORE, _EDGE_AFTER = r"(?i)(?<![\w-])", r"(?![\w-])"
_RATE_FORMS = (
    # a count per period: "twice a week", "3 times per month", "five days a week"
    re.compile(
        _EDGE_BEFORE + rf"(?:(?P<vague>{_VAGUE_TIMES})|(?P<times>{_TIMES})"
        rf"|(?P<days>{_COUNT})\s+(?:day|night|evening|morning)s?)"
        rf"\s+(?:(?:a|an|per|each|every)\s+{_PERIOD}|{_ADVERB})" + _EDGE_AFTER
    ),
    # an interval: "every other week", "once every four months", "each year"
    re.compile(
        _EDGE_BEFORE + rf"(?:once\s+)?(?:every|each)\s+(?:(?P<every>{_COUNT}|other|second"
        rf"|third|single|(?P<few>few|couple\s+of))\s+)?{_PERIOD}" + _EDGE_AFTER
    ),
    re.compile(_EDGE_BEFORE + _ADVERB + _EDGE_AFTER),  # "fortnightly"
)
# Habits an answer states by naming the days: "every Monday and Thursday" (twice a
# week), "on Saturdays", "every weekend", "mornings and nights" (twice a day).
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_DAY_PART = r"(?:morning|afternoon|evening|night)"
_HABITS = (
    (
        re.compile(
            _EDGE_BEFORE + rf"(?:(?:every|each)\s+(?:{_WEEKDAY}|weekend)"
            rf"(?:(?:\s*,\s*|\s+and\s+|\s*,\s+and\s+)(?:{_WEEKDAY}|weekend))*"
            rf"|on\s+{_WEEKDAY}s(?:(?:\s*,\s*|\s+and\s+|\s*,\s+and\s+){_WEEKDAY}s)*)" + _EDGE_AFTER
        ),
        Rate(Fraction(1, 7), "day"),
    ),
    (
        re.compile(
            _EDGE_BEFORE + rf"(?:every|each)\s+{_DAY_PART}"
            rf"(?:(?:\s*,\s*|\s+and\s+|\s*,\s+and\s+){_DAY_PART})*" + _EDGE_AFTER
        ),
        Rate(Fraction(1), "day"),
    ),
)
_LISTED = re.compile(rf"(?i){_WEEKDAY}|weekend|{_DAY_PART}")
_ORDINAL_STEPS = {"other": 2, "second": 2, "third": 3, "single": 1}
_NUMBER_WORDS = {w: n for w, n in _VALUES.items() if n <= 12}


def _count(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _COUNT_WORDS.get(word) or _NUMBER_WORDS[word]


def _rate(count: int, period: str, every: int) -> Rate:
    unit = _PERIODS[period]
    return Rate(unit.per * count / every, unit.base)


def _adverb_readings(adverb: str) -> tuple[tuple[int, str, int], ...]:
    adverb = adverb.lower().replace("-", "")
    return _ADVERBS["semiannually" if adverb == "halfyearly" else adverb]


def _mention(m: re.Match[str]) -> RateMention:
    groups = m.groupdict()
    if groups.get("period"):
        period = m["period"].lower()
        base = [(1, period, 1)]
    else:
        base = list(_adverb_readings(m["adverb"]))
    unit = _rate(1, base[0][1], 1)
    vague = groups.get("vague") or groups.get("few")
    if vague:
        words = " ".join(re.sub(r"\btimes?\b", "", vague.lower()).split())
        return RateMention(m.start(), m.end(), frozenset(), unit, words)
    counted = groups.get("times") or groups.get("days")
    if counted:
        head = counted.split()[0]
        head = re.sub(r"(?<=\d)[xX]$", "", head)  # "3x"
        factor = _count(head)
    else:
        factor = 1
    step = groups.get("every")
    every = (_ORDINAL_STEPS.get(step.lower()) or _count(step)) if step else 1
    readings = frozenset(_rate(factor * c, p, every * n) for c, p, n in base)
    return RateMention(m.start(), m.end(), readings, unit, None)


def _habit(m: re.Match[str], period: Rate) -> RateMention:
    count = len(_LISTED.findall(m.group(0)))
    return RateMention(
        m.start(), m.end(), frozenset({period._replace(per=period.per * count)}), period, None
    )


def rates(text: str, *, habits: bool = False) -> list[RateMention]:
    """Every frequency in normalised `text`, in order (see the module doc). With
    `habits`, days named as a habit count too (``every Monday and Thursday`` is twice a
    week, ``on Saturdays`` weekly, ``every morning`` daily): an answer's reading, since
    a gold's named days are words that must be held themselves."""
    found: list[tuple[re.Match[str], Rate | None]] = [
        (m, None) for form in _RATE_FORMS for m in form.finditer(text)
    ]
    if habits:
        found += [(m, period) for form, period in _HABITS for m in form.finditer(text)]
    found.sort(key=lambda pair: (pair[0].start(), -pair[0].end()))
    kept: list[tuple[re.Match[str], Rate | None]] = []
    for m, period in found:  # overlapping readings: the longest, then the first, stands
        if not kept or m.start() >= kept[-1][0].end():
            kept.append((m, period))
    return [_mention(m) if period is None else _habit(m, period) for m, period in kept]


RateMatch = Literal["same", "different", "open"]


def compare_rates(expected: RateMention, stated: RateMention) -> RateMatch:
    """Whether a stated frequency is the expected one: ``same`` when both have the same
    readings (a vague count: the same words and period), ``different`` when both are
    fixed, single and counted in the same unit, else ``open``."""
    if expected.vague is not None or stated.vague is not None:
        same = (expected.vague, expected.period) == (stated.vague, stated.period)
        return "same" if same else "open"
    if expected.readings == stated.readings:
        return "same"
    if len(expected.readings) == 1 and len(stated.readings) == 1:
        (wanted,), (said,) = expected.readings, stated.readings
        if wanted.base == said.base:
            return "different"
        # A week and a month are compared only when far apart: "every four weeks" is
        # about monthly, "weekly" is not.
        ratio = _per_day(wanted) / _per_day(said)
        if ratio > Fraction(3, 2) or ratio < Fraction(2, 3):
            return "different"
    return "open"


def _per_day(rate: Rate) -> Fraction:
    return rate.per if rate.base == "day" else rate.per / _DAYS_PER_MONTH


# ---------------------------------------------------------------- abbreviations
_ACRONYM = re.compile(r"(?<![\w'-])(?P<letters>[A-Z]{2,6})s?(?![\w-])")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_SKIPPABLE = frozenset(("of", "the", "and", "for", "a", "an", "in", "on", "to", "at"))
_SHORT_YEAR = re.compile(r"(?<![\w'])'(?P<yy>\d{2})(?!\w)")
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")


def _spells(letters: str, words: list[str], first: int, capitals: bool) -> int | None:
    """The index after the last word of a run from `first` whose initials spell
    `letters` (interior skippable words skipped or counted), or None."""

    def walk(k: int, j: int) -> int | None:
        if k == len(letters):
            return j
        if j >= len(words):
            return None
        word = words[j]
        if word[0].lower() == letters[k] and (not capitals or word[0].isupper()):
            found = walk(k + 1, j + 1)
            if found is not None:
                return found
        if k > 0 and word.lower() in _SKIPPABLE:
            return walk(k, j + 1)
        return None

    return walk(0, first)


def _expansions(acronym: str, text: str) -> Iterator[tuple[int, int]]:
    """Spans of `text` whose words' initials spell `acronym` (see the module doc)."""
    letters = acronym.lower()
    found = list(_WORD.finditer(text))
    words = [m.group(0) for m in found]
    for i, word in enumerate(words):
        if word.lower() in _SKIPPABLE:
            continue
        end = _spells(letters, words, i, capitals=len(letters) == 2)
        if end is not None and end - i >= 2:
            yield found[i].start(), found[end - 1].end()


def _acronyms(text: str) -> set[str]:
    return {m["letters"] for m in _ACRONYM.finditer(text)}


def expand_abbreviations(answer: str, gold: str) -> str:
    """`answer` with each abbreviation of something `gold` writes out (or writes out
    what `gold` abbreviates) followed by the other form, so both read as the same
    words: an acronym gets the gold's expansion after it, an expansion gets the gold's
    acronym after it, and ``'26`` becomes the gold's year that ends in 26."""
    edits: list[tuple[int, int, str]] = []
    for acronym in sorted(_acronyms(answer)):
        spans = list(_expansions(acronym, gold))
        if spans:
            start, end = spans[0]
            spelled = " " + gold[start:end]
            found = re.finditer(rf"(?<![\w'-]){acronym}s?(?![\w-])", answer)
            edits.extend((m.end(), m.end(), spelled) for m in found)
    for acronym in sorted(_acronyms(gold) - _acronyms(answer)):
        for _, end in _expansions(acronym, answer):
            edits.append((end, end, " " + acronym))
    years = {m.group(0)[2:]: m.group(0) for m in _YEAR.finditer(gold)}
    short = [m for m in _SHORT_YEAR.finditer(answer) if m["yy"] in years]
    edits.extend((m.start(), m.end(), years[m["yy"]]) for m in short)
    for start, end, words in sorted(edits, reverse=True):
        answer = answer[:start] + words + answer[end:]
    return answer
