"""One item of a free-recall gold against an answer: matched, doubtful or missing.

An item holds evidence of three kinds, each read in the answer as held, contradicted
(a rival), open, or absent:

- a **typed value** (a date, an amount, a time: `continuity.probes.values.specifics`)
  is held when the answer asserts it (`continuity.probes.polarity`), contradicted when
  the answer denies it or asserts another value of its kind instead (``19 May 2027``
  for ``9 May 2027``; another year for a year). A reference-like value the answer
  neither states nor replaces (``under-12s``) is read as words instead. A relative
  date (``the weekend before 9 March 2028``, `continuity.probes.relative_dates`) is
  held by an asserted day it allows, or by the answer's own relative date when that
  allows no other day; contradicted by asserted dates outside it; and when the answer
  reads as no date at all, its unit word (``weekend``) counts as a word, naming a
  month of its days leaves it open (``the second week of March 2027``), and naming only
  other months or years contradicts it;
- a **frequency** (`continuity.probes.paraphrase.rates`) is held by the same rate in
  any wording, contradicted by a different fixed rate, open against a vague or
  two-way one;
- a **content word** (`continuity.probes.recall_words`) is held when the answer states
  it with the same negation; contradicted when the answer states it the other way round
  (negated where the gold asserts it), or states another member of its closed class
  that the gold does not name (``Sunday`` for ``Saturday``, ``second`` for ``first``,
  ``3`` for ``4``), or puts another name in a gold name's place beside a held part of
  the same name (``Sir Bartholomew Parsnip``); open when a number meets a vague
  quantity (``a couple``) or another word stands in its place (``painting class`` for
  ``pottery class``, ``a festival in Shibuya`` for ``a festival in Tokyo``), since that
  may be a synonym or a narrower name; ``spare`` when it is generic and nothing stands in its place.

The item is **missing** when anything is contradicted, or when nothing is held or open
but generic words (it shares nothing that decides). It is **matched** when everything is
held, or when every typed value and frequency is held, at least two thirds of its
content words are, and each word that is not is spare (``pottery workshop on Saturday``
for ``a pottery workshop on Saturday night``, but not ``small old barn`` for ``big old
barn``). Anything else is **doubtful**: a distinctive word missing or replaced, a typed
value unread, a vague rate. So the rarer word decides: two of three words shared never
match when the third is distinctive. An item of function words only (``That``) is
doubtful when the answer has its words, else missing.

An item offered among guesses (a sentence that joins candidates with ``or`` in an answer
that says it is unsure) is missing, unless guesses count as statements (decoys).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Literal, NamedTuple

from continuity.probes.calendar import Day, dates
from continuity.probes.paraphrase import (
    VAGUE_QUANTITY,
    RateMention,
    compare_rates,
    expand_abbreviations,
    rates,
    spell_numbers,
)
from continuity.probes.polarity import Stance, sentence_bounds, stances
from continuity.probes.recall_words import (
    Said,
    closed_class,
    generic,
    held,
    read,
    slot,
    stated,
    words,
)
from continuity.probes.relative_dates import gold_days, states_one_of
from continuity.probes.values import (
    Locale,
    Mention,
    find_all,
    find_value,
    kind_of,
    specifics,
    value_key,
)

__all__ = ["Evidence", "Reading", "Verdict", "item_verdict", "reading"]

Verdict = Literal["matched", "doubtful", "missing"]
# One piece of an item's evidence in the answer. "spare": a generic word absent with
# nothing in its place.
Evidence = Literal["held", "rival", "open", "absent", "spare"]

_UNSURE = re.compile(
    r"\b(?:not (?:sure|certain)|unsure|could be|might be|may be|maybe|perhaps|possibly|"
    r"either|i think it was one of)\b"
)


# Kinds of typed value that are never read as words: the answer states them or not.
_VALUE_KINDS = ("money", "date", "time")
_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_YEAR = re.compile(r"(?<![\w.,])(?:19|20)\d{2}(?![\w.,]\d|\w)")


class Reading(NamedTuple):
    """An answer read once for one gold: its text with numbers in digits and the gold's
    abbreviations expanded, its content words, and its asserted frequencies."""

    text: str
    said: list[Said]
    stated: set[tuple[str, bool]]
    rates: list[RateMention]
    locale: Locale
    gold_stems: set[str]  # every content word of the whole gold
    gold_classes: set[tuple[str, str]]  # every closed-class value of the whole gold
    classes: set[tuple[str, str]]  # the closed-class values the answer asserts


def reading(text: str, gold: str, locale: Locale) -> Reading:
    """`text` (a normalised answer) read for `gold` (normalised, numbers in digits)."""
    text = expand_abbreviations(spell_numbers(text), gold)
    said = read(text)
    found = rates(text, habits=True)
    kept = stances(text, [(r.start, r.end) for r in found], supersession=False)
    asserted = [r for r, stance in zip(found, kept, strict=True) if stance == "asserted"]
    gold_stems = {w.stem for w in read(gold)}
    gold_classes = {c for w, _, _ in words(gold) if (c := closed_class(w)) is not None}
    return Reading(
        text,
        said,
        stated(said),
        asserted,
        locale,
        gold_stems,
        gold_classes,
        _classes(text, said, locale),
    )


def _classes(text: str, said: list[Said], locale: Locale) -> set[tuple[str, str]]:
    """The closed-class values an answer asserts, but for the numbers and ordinals inside
    its dates, times and amounts (the 21st of ``21st May`` is no ordinal of its own)."""
    inside = [(m.start, m.end) for m in specifics(text, locale)]
    found = set()
    for word in said:
        cls = closed_class(word.word)
        if cls is None or word.negated:
            continue
        if cls[0] in ("number", "ordinal") and any(a <= word.start < b for a, b in inside):
            continue
        found.add(cls)
    return found


def _stance_of(text: str, spans: list[tuple[int, int]]) -> list[Stance]:
    return stances(text, spans, supersession=False)


def _typed(value: str, answer: Reading) -> Evidence:
    """A typed value of the gold in the answer: asserted, denied or replaced."""
    text, locale = answer.text, answer.locale
    found = find_value(text, value, locale)
    said = _stance_of(text, [(m.start, m.end) for m in found])
    if "asserted" in said:
        return "held"
    if "negated" in said:
        return "rival"
    relative = _relative_answer(value, answer)
    if relative is not None:
        return relative
    others = [(m.start, m.end) for m in find_all(text, value, locale) if m not in found]
    if _YEAR.fullmatch(value):  # a year: another year asserted instead replaces it
        others += [m.span() for m in _YEAR.finditer(text) if m.group(0) != value]
    if "asserted" in _stance_of(text, sorted(others)):
        return "rival"
    return "absent"


def _relative_answer(value: str, answer: Reading) -> Evidence | None:
    """A gold date against a relative date the answer asserts (``the Sunday before 16
    May 2027`` for ``9 May 2027``): held when it allows that day only, open when it
    allows it among others, a rival when it does not allow it; None when the answer
    asserts no relative date or the gold is no whole date."""
    key = value_key(value, answer.locale)
    own = gold_days(answer.text, answer.locale)
    if not isinstance(key, Day) or key.year is None or own is None:
        return None
    if "asserted" not in _stance_of(answer.text, [own[0]]):
        return None
    day = dt.date(key.year, key.month, key.day)
    if own[1] == {day}:
        return "held"
    return "open" if day in own[1] else "rival"


def _relative(item: str, answer: Reading) -> tuple[Evidence, str] | None:
    """A relative date's evidence and the item without it; None when it has none. The
    answer holds it by asserting a day it allows, or a relative date of its own that
    allows no other day (``the Saturday before 9 March`` for ``the weekend before 9
    March``); it contradicts it by asserting only days outside it."""
    relative = gold_days(item, answer.locale)
    if relative is None:
        return None
    (start, end), days = relative
    rest = _without(item, [(start, end)])
    text = answer.text
    own = gold_days(text, answer.locale)
    if own is not None and "asserted" in _stance_of(text, [own[0]]):
        if own[1] <= days:
            return "held", rest
        return ("open" if own[1] & days else "rival"), rest
    if "asserted" in _stance_of(text, states_one_of(text, days, answer.locale)):
        return "held", rest
    dated = [(m.start, m.end) for m in dates(text, answer.locale)]
    if "asserted" in _stance_of(text, dated):
        return "rival", rest
    anchor = [m for m in dates(item, answer.locale) if m.end == end]
    if not anchor:
        return "absent", rest
    # No date read: the phrase's words ("weekend") still count as the item's words.
    unit = item[start:end].split()[0].casefold()  # "week", "weekend", "friday"
    return _month_named(text, days, unit), _without(item, [(anchor[0].start, end)])


def _month_named(text: str, days: set[dt.date], unit: str) -> Evidence:
    """A relative date against an answer that reads as no date: open when it names a
    month of the days allowed, or one of their years beside the date's unit (``the
    second week of March 2027``, ``the last week of 2028``), and no other year;
    contradicted when it names only other months or years; else absent (a year alone is
    not the day)."""
    said = {w for w, _, _ in words(text)}
    years = [(m.start(), m.end()) for m in _YEAR.finditer(text)]
    other_years = {text[a:b] for a, b in years} - {str(day.year) for day in days}
    if "asserted" in _stance_of(text, years) and other_years == {text[a:b] for a, b in years}:
        return "rival"
    # "may" and "march" are verbs too: months only when capitalised
    months = said & set(_MONTHS) - {"may", "march"}
    months |= {m.casefold() for m in re.findall(r"\b(?:May|March)\b", text)}
    if months and not months & {_MONTHS[day.month - 1] for day in days}:
        return "rival"
    named = months or (years and unit in said)
    return "open" if named and not other_years else "absent"


def _rate(expected: RateMention, answer: Reading) -> Evidence:
    verdicts = [compare_rates(expected, said) for said in answer.rates]
    if "same" in verdicts:
        return "held"
    if "open" in verdicts:
        return "open"
    return "rival" if verdicts else "absent"


_LIST_BREAK = re.compile(r"(?i)[,;:]|\b(?:and|or|but|with|plus)\b")


def _modifier(answer: Reading, noun: Said, cls: str) -> set[str]:
    """The values of class `cls` that modify `noun` in the answer: a member at most two
    content words before it in its clause, with no list break between (``three rescue
    dogs``, not ``two dogs and a cat``)."""
    found: set[str] = set()
    position = answer.said.index(noun)
    for before in answer.said[max(0, position - 2) : position][::-1]:
        if before.clause != noun.clause or _LIST_BREAK.search(
            answer.text[before.start : noun.start]
        ):
            break
        if (c := closed_class(before.word)) is not None and c[0] == cls:
            found.add(c[1])
    return found


def _bound(gold: list[Said], index: int, answer: Reading) -> Evidence:
    """A held closed-class word that modifies the next gold word (``two cats``, ``red
    kayak``): held when the answer puts it before that word too, a rival when it puts
    only another member of its class there (``two dogs and three cats``), else open."""
    word, noun = gold[index], gold[index + 1]
    cls = closed_class(word.word)
    assert cls is not None
    wanted = {(noun.stem, noun.negated)}
    values = [
        _modifier(answer, said, cls[0])
        for said in answer.said
        if held((said.stem, said.negated), wanted)
    ]
    if any(cls[1] in found for found in values):
        return "held"
    return "rival" if any(values) else "open"


def _word(gold: list[Said], index: int, answer: Reading) -> Evidence:
    word = gold[index]
    if held((word.stem, word.negated), answer.stated):
        if index + 1 < len(gold) and closed_class(word.word) is not None:
            following = gold[index + 1]
            if held((following.stem, following.negated), answer.stated):
                return _bound(gold, index, answer)
        return "held"
    if held((word.stem, not word.negated), answer.stated):
        return "rival"  # stated the other way round: denied, or asserted where denied
    cls = closed_class(word.word)
    if cls is not None and not word.negated:
        if any(c[0] == cls[0] and c not in answer.gold_classes for c in answer.classes):
            return "rival"
        if cls[0] == "number" and VAGUE_QUANTITY.search(answer.text):
            return "open"
    place = slot(gold, index, answer.said, answer.gold_stems)
    if place.kind == "filled":
        assert place.word is not None and place.beside is not None
        # Another name beside a held part of the same name ("Frank Sinatra" for "Frank
        # Ocean"); a name beside an ordinary word may be a narrower place ("a festival
        # in Shibuya" for "a festival in Tokyo"), so that stays open.
        same_name = word.name and place.word.name and place.beside.name
        return "rival" if same_name else "open"
    return "spare" if place.kind == "empty" and generic(word.word) else "absent"


_ACRONYM = re.compile(r"(?<![\w'-])[A-Z]{2,6}(?![\w-])")


def _shortened(gold: list[Said], answer: Reading) -> bool:
    """Whether the answer holds an acronym that begins with the initials of two or more
    consecutive gold names (``USA`` for ``United States``): perhaps the gold abbreviated
    at more length, so the item is not surely missing."""
    initials = "".join(word.word[0] if word.name else " " for word in gold).upper()
    runs = [run for run in initials.split() if len(run) >= 2]
    acronyms = [m.group(0) for m in _ACRONYM.finditer(answer.text)]
    return any(
        acronym.startswith(run[i:j])
        for run in runs
        for acronym in acronyms
        for i in range(len(run))
        for j in range(i + 2, len(run) + 1)
    )


def _guessed(text: str, item_words: list[Said], spans: list[tuple[int, int]]) -> bool:
    """Whether the sentence that holds the item's words or values offers it as one of
    several guesses: candidates joined by ``or`` in an answer that says it is unsure."""
    if not _UNSURE.search(text.casefold()):
        return False
    stems = {w.stem for w in item_words}
    for start, end in sentence_bounds(text):
        sentence = text[start:end].casefold()
        if " or " not in sentence:
            continue
        if any(start <= a < end for a, _ in spans):
            return True
        if any(w.stem in stems for w in read(sentence)):
            return True
    return False


def _without(item: str, spans: list[tuple[int, int]]) -> str:
    """`item` with `spans` blanked out (positions kept)."""
    for start, end in spans:
        item = item[:start] + " " * (end - start) + item[end:]
    return item


def _decide(values: list[Evidence], word_evidence: list[Evidence], gold: list[Said]) -> Verdict:
    """The item's verdict from its evidence (module doc)."""
    everything = values + word_evidence
    if "rival" in everything:
        return "missing"
    if all(e == "held" for e in everything):
        return "matched"
    distinctive = [e for e, w in zip(word_evidence, gold, strict=True) if not generic(w.word)]
    if not any(e in ("held", "open") for e in values + distinctive):
        return "missing"
    needed = math.ceil(2 * len(word_evidence) / 3)
    if (
        all(e == "held" for e in values)
        and all(e in ("held", "spare") for e in word_evidence)
        and word_evidence.count("held") >= needed
    ):
        return "matched"
    return "doubtful"


def _typed_values(item: str, answer: Reading) -> tuple[list[Mention], list[Evidence]]:
    """The item's typed values the verdict weighs, and their evidence. A reference-like
    value the answer neither states nor replaces (``under-12s``) is read as words."""
    kept: list[Mention] = []
    evidence: list[Evidence] = []
    for mention in specifics(item, answer.locale):
        value = item[mention.start : mention.end]
        found = _typed(value, answer)
        if found == "absent" and kind_of(value) not in _VALUE_KINDS:
            continue
        kept.append(mention)
        evidence.append(found)
    return kept, evidence


def item_verdict(
    item: str, answer: Reading, *, before: str = "", guesses_state: bool = False
) -> Verdict:
    """One gold item (normalised, numbers in digits) against a `reading` of the answer.
    `before` is the gold's text before the item in its part: the item's words are read
    in it, so a negation cue before the item reaches its words as it does when an
    answer repeats the gold."""
    typed: list[Mention] = []
    relative = _relative(item, answer)
    if relative is not None:
        evidence, item = relative
        values = [evidence]
    else:
        typed, values = _typed_values(item, answer)
        if typed and _reversed(item, answer.text):
            return "missing"
    rest = _without(item, [(m.start, m.end) for m in typed])
    gold_rates = rates(rest)
    values += [_rate(r, answer) for r in gold_rates]
    rest = _without(rest, [(r.start, r.end) for r in gold_rates])
    gold = [w for w in read(before + rest) if w.start >= len(before)]
    if not values and not gold:  # only function words ("that"): read as written
        wanted = {w for w, _, _ in words(item)}
        return "doubtful" if wanted <= {w for w, _, _ in words(answer.text)} else "missing"
    word_evidence = [_word(gold, i, answer) for i in range(len(gold))]
    verdict = _decide(values, word_evidence, gold)
    if verdict == "missing" and "rival" not in values + word_evidence:
        verdict = "doubtful" if _shortened(gold, answer) else verdict
    if verdict == "missing" or guesses_state:
        return verdict
    spans = [
        (m.start, m.end)
        for value in typed
        for m in find_value(answer.text, item[value.start : value.end], answer.locale)
    ]
    return "missing" if _guessed(answer.text, gold, spans) else verdict


def _reversed(item: str, text: str) -> bool:
    """Whether the answer puts a dated gold the other way round: ``after`` where the gold
    says ``before`` (or the reverse) and never the gold's own word."""
    gold = {w for w, _, _ in words(item)}
    said = {w for w, _, _ in words(text)}
    return any(
        word in gold and other in said and word not in said
        for word, other in (("before", "after"), ("after", "before"))
    )
