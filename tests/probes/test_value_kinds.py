"""Values by kind (issue 35, item 3): amounts with any currency and locale separators,
numbers written as words, dates in any unambiguous order. The rule is "right when sure,
silent when not": a reading states the written value or the span is unreadable
(`continuity.probes.values.unreadable`), never a different value. Values and renderings
are generated, so no rule can pass by knowing these strings."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.probes.calendar import Locale
from continuity.probes.cldr import SNAPSHOTS, render
from continuity.probes.normalise import normalise
from continuity.probes.numbers import read_digits, read_words
from continuity.probes.values import (
    Unreadable,
    find_all,
    find_value,
    kind_of,
    unreadable,
    value_key,
)

_PROPERTY = settings(
    derandomize=True,
    deadline=None,
    database=None,
    max_examples=400,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _reading(answer: str, value: str, locale: Locale = "day-first") -> str:
    """``"states"`` when the answer states `value`, ``"unreadable"`` when it holds only
    an unreadable span of its kind, ``"other"`` when it reads a different value, and
    ``"nothing"`` when it holds none. Readings and unreadable spans never overlap."""
    text = normalise(answer)
    found = find_all(text, value, locale)
    unread = unreadable(text, value, locale)
    spans = [(m.start, m.end) for m in found]
    for m in unread:
        assert all(m.end <= start or end <= m.start for start, end in spans), (answer, m)
    stating = find_value(text, value, locale)
    if found and len(stating) == len(found):
        return "states"
    if found:
        return "other"
    return "unreadable" if unread else "nothing"


# ---------------------------------------------------------------- examples: money
@pytest.mark.parametrize(
    ("value", "answer"),
    [
        ("€9,876.50", "The fee is 9.876,50 €."),
        ("€9,876.50", "EUR 9 876,50"),
        ("CHF 3,400", "It is CHF 3'400."),
        ("CHF 3,400", "It is 3\u2019400 CHF."),
        ("45,000 SEK", "It is 45 000 kr."),
        ("45,000 SEK", "It is 45\u202f000 kr"),
        ("45,000 SEK", "It is 45\u00a0000 SEK"),
        ("€1,234", "It is €1.234"),
        ("$1,234.56", "It is $1,234.56"),
        ("₹123,456", "₹1,23,456"),
        ("¥5,000", "5000 yen"),
        ("¥5,000", "JPY 5.000"),
        ("R$1,234.56", "R$ 1.234,56"),
        ("A$50", "It's $50."),
        ("PLN 200", "200 zł"),
        ("$172.50", "usd 172.50"),
        ("£483.00", "483 POUNDS"),
        ("€2,500,000", "€2.5m"),
        ("€2,500,000", "2.5 million euros"),
        ("€2,000,000", "€2M"),
        ("€2,000,000", "€2 Million"),
        ("$1,200,000,000", "$1.2 bn"),
        ("₹500,000", "₹5 lakh"),
        ("£5.50", "£5 and 50p"),
        ("£1,745", "GBP1745"),
        # numbers in words
        ("€240", "two hundred and forty euros"),
        ("€240", "Two Hundred Forty Euros"),
        ("CHF 3,400", "three thousand four hundred francs"),
        ("CHF 3,400", "three thousand four hundred Swiss francs"),
        ("£100", "a hundred pounds"),
        ("$1,200", "twelve hundred dollars"),
        ("€1,001", "a thousand and one euros"),
        ("€42", "forty-two euros"),
        ("€2,500", "two thousand, five hundred euros"),
        ("€245.50", "two hundred and forty-five euros and fifty cents"),
    ],
)
def test_money_renderings_state_the_value(value: str, answer: str) -> None:
    assert kind_of(value) == "money"
    assert _reading(answer, value) == "states", (value, answer)


@pytest.mark.parametrize(
    ("value", "answer"),
    [
        ("£483", "$483"),  # a dollar sign is never pounds
        ("$50", "It's A$50."),  # Australian dollars are not the expected US dollars
        ("€50", "50 kr"),
        ("¥5,000", "₩5,000"),
        ("€240", "two hundred and fifty euros"),
        ("€1,234", "€1.243"),
        ("€17.45", "€1,745"),
        ("€245", "two hundred and forty-five euros and fifty cents"),
        # a range names both its ends, so it is never the one value alone
        ("€450", "€450-500"),
        ("€500", "450-500 euros"),
        ("€5", "€5 millions"),
    ],
)
def test_other_amounts_are_other_values(value: str, answer: str) -> None:
    assert _reading(answer, value) == "other", (value, answer)


@pytest.mark.parametrize(
    ("value", "answer"),
    [
        ("KWD 1,234", "It is 1,234 KWD"),  # three minor digits: 1234 or 1.234
        ("€500", "It's Z$500"),  # a dollar, but which
        ("€500", "It's ₿500"),  # a currency sign of no ISO currency
        ("€500", "It's ¤500"),
        ("€500", "It's XYZ 500.00"),  # three capitals that are no ISO code
        ("€500", "the total is 500 ALL"),  # the lek, or "all"
        ("€123", "€1,23,4"),  # no grouping
        ("€1,234.56", "€1.234.56"),  # a decimal mark that repeats
        ("€240", "twenty twenty euros"),  # two numbers side by side
        ("€500,000", "half a million euros"),
        ("€2,500,000", "two point five million euros"),
        ("€3,000", "a few thousand euros"),
        ("£5.50", "five pounds fifty"),  # 5.50 said the British way, not 5
        ("€5.50", "5 euros 50"),
    ],
)
def test_amounts_that_do_not_read_as_one_value_are_unreadable(value: str, answer: str) -> None:
    assert _reading(answer, value) == "unreadable", (value, answer)
    assert all(isinstance(m.key, Unreadable) for m in unreadable(normalise(answer), value))


@pytest.mark.parametrize(
    ("value", "answer"),
    [
        ("€500", "It's Rs 500"),  # "Rs" is also a word: rupees only where rupees are asked
        ("€12", "We paid 12 invoices."),  # a money verb before a count
        ("€500", "Top 500 list"),
    ],
)
def test_words_beside_numbers_are_no_amount(value: str, answer: str) -> None:
    assert _reading(answer, value) == "nothing", (value, answer)


def test_a_common_word_is_a_currency_only_where_that_currency_is_asked() -> None:
    assert _reading("He won 5 games", "₩5") == "nothing"  # a name never comes first
    assert _reading("The team that scored 5 won", "€5") == "nothing"
    assert _reading("5000 won", "₩5,000") == "states"


def test_a_word_like_unit_reads_as_the_expected_currency() -> None:
    assert _reading("It's Rs 500", "₹500") == "states"
    assert _reading("It's 500 Ft", "HUF 500") == "states"


def test_an_expected_ambiguous_unit_reads_in_its_english_sense() -> None:
    assert value_key("$50") == value_key("USD 50") == value_key("50 US dollars")
    assert value_key("£483") == value_key("483 GBP")
    assert value_key("¥5,000") == value_key("JPY 5000")


# ---------------------------------------------------------------- examples: dates
@pytest.mark.parametrize(
    ("answer", "locale"),
    [
        ("2026-11-09", "unknown"),
        ("2026/11/09", "unknown"),
        ("2026.11.09", "unknown"),
        ("09.11.2026", "day-first"),
        ("11/09/2026", "month-first"),
        ("Monday 09/11/2026", "unknown"),  # only 9 November 2026 is a Monday
        ("Monday, 11/09/2026", "unknown"),
        ("9 November 2026", "unknown"),
        ("9th Nov 2026", "unknown"),
        ("November 9, 2026", "unknown"),
        ("Mon, Nov. 9th, 2026", "unknown"),
        ("9-Nov-2026", "unknown"),
        ("09.NOV.2026", "unknown"),
        ("the ninth of November", "unknown"),
        ("9. November 2026", "unknown"),
        # month names of other languages (CLDR's)
        ("le 9 novembre 2026", "unknown"),
        ("lundi 9 novembre", "unknown"),
        ("el 9 de noviembre de 2026", "unknown"),
        ("am 9. November 2026", "unknown"),
        ("9 ноября 2026", "unknown"),
        ("9 novembro de 2026", "unknown"),
    ],
)
def test_dates_in_any_unambiguous_order_state_the_value(answer: str, locale: Locale) -> None:
    assert _reading(answer, "9 November 2026", locale) == "states", answer


@pytest.mark.parametrize(
    ("answer", "locale"),
    [
        ("09/11/2026", "unknown"),  # 9 November or 11 September
        ("9.11.2026", "unknown"),
        ("Friday 09/11/2026", "day-first"),  # the weekday fits 11 September only
        ("Monday 11/09/2026", "day-first"),  # the locale's reading is not a Monday
        ("9 listopada 2026", "unknown"),  # November in Polish, October in Croatian
    ],
)
def test_numeric_dates_that_read_either_way_are_unreadable(answer: str, locale: Locale) -> None:
    assert _reading(answer, "9 November 2026", locale) == "unreadable", answer


def test_a_day_with_a_dot_reads_only_before_a_year() -> None:
    assert _reading("See page 9. June is busy.", "9 June 2027") == "nothing"
    assert _reading("9. Juni 2027", "9 June 2027") == "states"


def test_a_month_name_that_is_also_an_english_word_reads_only_before_a_year() -> None:
    assert _reading("3 mars 2026", "3 March 2026") == "states"
    assert _reading("We sent 3 mars bars", "3 March 2026") == "nothing"
    assert _reading("9 apples 2026", "9 April 2026") == "nothing"


def test_a_day_above_twelve_fixes_the_order_in_any_locale() -> None:
    for locale in ("unknown", "day-first", "month-first"):
        assert _reading("18/06/2027", "18 June 2027", locale) == "states"
        assert _reading("06/18/2027", "18 June 2027", locale) == "states"


# ---------------------------------------------------------------- numbers
@pytest.mark.parametrize(
    ("token", "minor", "read"),
    [
        ("9.876,50", 2, Decimal("9876.50")),
        ("3'400", 2, Decimal(3400)),
        ("45 000", 2, Decimal(45000)),
        ("1,234.56", 2, Decimal("1234.56")),
        ("1.234", 2, Decimal(1234)),
        ("1.234", 0, Decimal(1234)),
        ("1,23,456", 2, Decimal(123456)),
        ("17,45", 2, Decimal("17.45")),
        ("0,500", 2, Decimal("0.5")),
        ("1234,567", 2, Decimal("1234.567")),
        ("1.234", 3, None),
        ("1,745,00", 2, None),
        ("1.234.56", 2, None),
        ("1'23", 2, None),
        ("1 234.567,8", 2, None),
    ],
)
def test_digits_read_by_their_separators(token: str, minor: int, read: Decimal | None) -> None:
    got = read_digits(token, {minor})
    assert (None if isinstance(got, Unreadable) else got) == read


@pytest.mark.parametrize("file_name", sorted(SNAPSHOTS))
def test_cldr_snapshots_match_the_installed_babel(file_name: str) -> None:
    """The snapshots are what babel's CLDR data gives (after a babel upgrade, rewrite
    them with ``python3 -m continuity.probes.cldr``: a new scorer version)."""
    build, reader = SNAPSHOTS[file_name]
    snapshot = Path(__file__).parents[2] / "continuity" / "probes" / file_name
    assert snapshot.read_text(encoding="utf-8") == render(build(), reader), file_name


# ---------------------------------------------------------------- properties: money
# (code, sign, names, minor digits): signs and names a writer may use for the currency.
_CURRENCIES = [
    ("EUR", ["€"], ["euros"], 2),
    ("GBP", ["£"], ["pounds", "British pounds"], 2),
    ("USD", ["$", "US$"], ["dollars", "US dollars"], 2),
    ("AUD", ["A$", "AU$"], ["Australian dollars"], 2),
    ("JPY", ["¥"], ["yen", "Japanese yen"], 0),
    ("INR", ["₹"], ["rupees", "Indian rupees"], 2),
    ("CHF", ["CHF"], ["Swiss francs", "francs"], 2),
    ("SEK", ["kr"], ["Swedish kronor", "kronor"], 2),
    ("PLN", ["zł"], ["zlotys"], 2),
    ("BRL", ["R$"], ["reals", "Brazilian reals"], 2),
    ("KWD", [], ["Kuwaiti dinars"], 3),
    ("CZK", ["Kč"], ["korunas"], 2),
]
_STYLES = {  # grouping mark, decimal mark
    "en": (",", "."),
    "de": (".", ","),
    "fr": (" ", ","),
    "fr-narrow": ("\u202f", ","),
    "ch": ("'", "."),
    "ch-curly": ("\u2019", "."),
    "plain": ("", "."),
    "plain-comma": ("", ","),
}


def _digits(minor_units: int, minor: int, style: str, *, trim: bool) -> str:
    group, decimal = _STYLES[style]
    whole, fraction = divmod(minor_units, 10**minor)
    written = f"{whole:,}".replace(",", group)
    if minor and not (trim and fraction == 0):
        written += decimal + f"{fraction:0{minor}d}"
    return written


def _english(code: str, minor_units: int, minor: int) -> str:
    return f"{code} {_digits(minor_units, minor, 'en', trim=False)}"


@st.composite
def _money_rendering(draw: st.DrawFn) -> tuple[str, str, str, int, int]:
    code, signs, names, minor = draw(st.sampled_from(_CURRENCIES))
    minor_units = draw(st.integers(min_value=0, max_value=10**10))
    digits = _digits(
        minor_units, minor, draw(st.sampled_from(sorted(_STYLES))), trim=draw(st.booleans())
    )
    unit = draw(st.sampled_from([*signs, code, code.lower(), *names, *(n.upper() for n in names)]))
    space = draw(st.sampled_from(["", " "]))
    if unit in names or unit.lower() in (n.lower() for n in names):
        written = f"{digits} {unit}"
    else:
        written = draw(st.sampled_from([f"{unit}{space}{digits}", f"{digits}{space}{unit}"]))
    return code, written, _english(code, minor_units, minor), minor_units, minor


@_PROPERTY
@given(rendering=_money_rendering(), shift=st.integers(min_value=1, max_value=10**6))
def test_an_amount_reads_as_itself_or_not_at_all(
    rendering: tuple[str, str, str, int, int], shift: int
) -> None:
    code, written, value, minor_units, minor = rendering
    answer = f"The agreed amount is {written}, as confirmed."
    assert _reading(answer, value) in ("states", "unreadable"), (answer, value)
    other = _english(code, minor_units + shift, minor)
    assert _reading(answer, other) in ("other", "unreadable"), (answer, other)


_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
]
_ONES += ["fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _below_thousand(n: int, *, british: bool, hyphen: bool, article: bool) -> list[str]:
    words: list[str] = []
    hundreds, rest = divmod(n, 100)
    if hundreds:
        words += ["a" if article and hundreds == 1 else _ONES[hundreds], "hundred"]
        if rest and british:
            words.append("and")
    if rest >= 20:
        tens, ones = divmod(rest, 10)
        if ones:
            words += [f"{_TENS[tens]}-{_ONES[ones]}"] if hyphen else [_TENS[tens], _ONES[ones]]
        else:
            words.append(_TENS[tens])
    elif rest:
        words.append(_ONES[rest])
    return words


def _in_words(n: int, *, british: bool, hyphen: bool, article: bool, comma: bool = False) -> str:
    if n == 0:
        return "zero"
    words: list[str] = []
    for scale, name in ((10**9, "billion"), (10**6, "million"), (10**3, "thousand"), (1, "")):
        count, n = divmod(n, scale)
        if count:
            words += _below_thousand(count, british=british, hyphen=hyphen, article=article)
            words += [name + ("," if comma and n else "")] if name else []
        if scale == 1000 and 0 < n < 100 and words and british:
            words.append("and")
    return " ".join(words)


@_PROPERTY
@given(
    n=st.integers(min_value=1, max_value=10**12 - 1),
    british=st.booleans(),
    hyphen=st.booleans(),
    article=st.booleans(),
    comma=st.booleans(),
    case=st.sampled_from([str.lower, str.title, str.upper]),
    currency=st.sampled_from(_CURRENCIES[:7]),
)
def test_a_number_in_words_reads_as_itself(
    n: int,
    british: bool,
    hyphen: bool,
    article: bool,
    comma: bool,
    case: Callable[[str], str],
    currency: tuple[str, list[str], list[str], int],
) -> None:
    words = _in_words(n, british=british, hyphen=hyphen, article=article, comma=comma)
    assert read_words(re.split(r"[\s,-]+", words)) == n, words
    code, _signs, names, _minor = currency
    answer = f"It comes to {case(words)} {names[0]}."
    assert _reading(answer, f"{code} {n:,}") == "states", answer
    assert _reading(answer, f"{code} {n + 1:,}") == "other", answer


# ---------------------------------------------------------------- properties: dates
_MONTH_NAMES = [dt.date(2000, m, 1).strftime("%B") for m in range(1, 13)]


@st.composite
def _date_rendering(draw: st.DrawFn) -> tuple[dt.date, str, Locale]:
    day = draw(st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2040, 12, 31)))
    locale: Locale = draw(st.sampled_from(["day-first", "month-first", "unknown"]))
    sep = draw(st.sampled_from(["/", ".", "-"]))
    pad = draw(st.booleans())
    d, m = (f"{day.day:02d}", f"{day.month:02d}") if pad else (str(day.day), str(day.month))
    month = _MONTH_NAMES[day.month - 1]
    month = draw(st.sampled_from([month, month[:3], month.upper(), month.lower()]))
    # A numeric order the writer uses: the locale's, or either in an unknown locale.
    first = {"day-first": True, "month-first": False}.get(locale, draw(st.booleans()))
    numeric = f"{d}{sep}{m}{sep}{day.year}" if first else f"{m}{sep}{d}{sep}{day.year}"
    written = draw(
        st.sampled_from(
            [
                day.isoformat(),
                f"{day.year}/{m}/{d}",
                f"{day.year}.{m}.{d}",
                numeric,
                f"{day.day} {month} {day.year}",
                f"{month} {day.day}, {day.year}",
                f"{day.day}-{month}-{day.year}",
            ]
        )
    )
    if draw(st.booleans()):
        weekday = day.strftime("%A")
        written = f"{draw(st.sampled_from([weekday, weekday[:3]]))}, {written}"
    return day, written, locale


@_PROPERTY
@given(rendering=_date_rendering(), shift=st.integers(min_value=1, max_value=400))
def test_a_date_reads_as_itself_or_not_at_all(
    rendering: tuple[dt.date, str, Locale], shift: int
) -> None:
    day, written, locale = rendering
    answer = f"It is booked for {written}."
    value = f"{day.day} {_MONTH_NAMES[day.month - 1]} {day.year}"
    assert _reading(answer, value, locale) in ("states", "unreadable"), (answer, locale)
    other = day + dt.timedelta(days=shift)
    other_value = f"{other.day} {_MONTH_NAMES[other.month - 1]} {other.year}"
    assert _reading(answer, other_value, locale) in ("other", "unreadable"), (answer, other)
