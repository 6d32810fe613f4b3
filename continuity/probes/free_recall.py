"""Free recall: an answer against a human-written gold answer (imported corpora).

The gold is read in parts. ``;`` separates the answer from a reason or an alternative
(LoCoMo writes ``National park; she likes the outdoors``): matching any one part
suffices. Within a part, ``,`` and a whole-word ``and`` separate the items of a list,
and every item is needed; a comma inside a date (``April 26, 2022``) or an amount
separates nothing. An item is matched when the answer

- asserts every typed value the item holds (a date, an amount, a time, a number or an
  identifier, found by `continuity.probes.values` in the trace's locale), and
- states at least two thirds (rounded up: one of one, two of two, two of three, three
  of four) of the item's remaining content words, compared by Porter stem (``paintings``
  matches ``painted``; a stem of four letters or more that begins the other counts, so
  ``trans`` states ``transgender``; articles, pronouns, prepositions and auxiliaries are
  not content; ``three`` and ``3`` are the same word);

where a typed value must be asserted (`continuity.probes.polarity`), and a content word
after a negation cue in its clause (``not Leeds``) or in a question does not state the
word (a gold word under negation, ``not tough``, needs the same negation).

A part whose first item is a bare yes or no (``Yes``, ``Likely no``,
``Presumably not``) is a polar answer: it is matched by an answer whose first committed
word has the same polarity (``Probably not``, ``I don't think so`` say no), and the rest
of the part is its reason, not required.

An answer that offers the gold among guesses (a sentence that joins candidates with
``or`` and says it is unsure: ``tennis, volleyball or basketball, I'm not certain``) does
not state it. The outcome is ``correct`` when some part is matched, ``abstained`` when
the answer declines (`continuity.probes.abstention`) without offering a guess (``maybe
X``, ``it could be X``), and ``fabricated`` otherwise.
Known blind spots (README): an answer that lists extra items beside the gold still scores
correct (LoCoMo's token-F1, reported beside it, falls), and a paraphrase with none of
the gold's content words misses (the judge, in real runs, reads it).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

import snowballstemmer

from continuity.probes.normalise import normalise
from continuity.probes.polarity import clause_bounds, sentence_bounds, stances
from continuity.probes.values import Locale, find_value, specifics

__all__ = ["STOP_WORDS", "gold_parts", "guesses", "polarity", "score_parts"]


def _words_of(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOP_WORDS = _words_of(
    """a an the and or of to in on at for with by from as into onto over under about
    after before during than then so is are was were be been being am it its this that
    these those he she they them him her his hers their theirs i me my mine we us our
    you your has have had do does did will would could should can may might must s
    some any very just also really up out there here who whom which what when where why
    how"""
)
_NUMBER_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen", "twenty",
)  # fmt: skip
_NUMBERS = {word: str(value) for value, word in enumerate(_NUMBER_WORDS)} | {
    "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
    "eighty": "80", "ninety": "90",
}  # fmt: skip
_HEDGES = _words_of(
    "likely unlikely probably presumably possibly perhaps maybe most definitely certainly surely"
)
_YES = _words_of("yes yeah yep yup absolutely definitely certainly sure indeed")
_NO = _words_of("no nope not never unlikely hardly")
_UNSURE = re.compile(
    r"\b(?:not (?:sure|certain)|unsure|could be|might be|may be|maybe|perhaps|possibly|"
    r"either|i think it was one of|one of)\b"
)
# What offers a guess: a declining answer that says one of these still answers.
_GUESS = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|could (?:have )?be(?:en)?|might (?:have )?be(?:en)?"
    r"|may (?:have )?be(?:en)?|my (?:best )?guess|i'd guess|i guess|i'd say|i think it was)\b"
)
_PART = re.compile(r"\s*;\s*")
_ITEM = re.compile(r"\s*,\s*|\s+and\s+", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_STEMMER = snowballstemmer.stemmer("porter")


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(_NUMBERS.get(word, word)))


def _shield(text: str, locale: Locale) -> str:
    """`text` with the commas inside its typed values (dates, amounts) made spaces, so
    splitting on commas never cuts a value in two."""
    chars = list(text)
    for mention in specifics(text, locale):
        for i in range(mention.start, mention.end):
            if chars[i] == ",":
                chars[i] = " "
    return "".join(chars)


def gold_parts(gold: str, locale: Locale = "day-first") -> list[list[str]]:
    """The gold's parts (any one suffices), each a list of its items (every one is
    needed); normalised, none empty."""
    parts = []
    for part in _PART.split(_shield(normalise(gold), locale).strip()):
        items = [item.strip(" .!?\"'()") for item in _ITEM.split(part)]
        items = [item for item in items if item]
        if items:
            parts.append(items)
    return parts


def _words(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0).casefold(), m.start(), m.end()) for m in _WORD.finditer(text)]


def _content(text: str) -> list[str]:
    return [w for w, _, _ in _words(text) if w not in STOP_WORDS]


def _polar_item(item: str) -> str | None:
    """``yes`` or ``no`` when an item is a bare (perhaps hedged) yes or no."""
    words = [w for w, _, _ in _words(item) if w not in _HEDGES or w == "unlikely"]
    if words in (["yes"], ["no"], ["not"], ["unlikely"]):
        return "yes" if words == ["yes"] else "no"
    return None


def polarity(text: str) -> str | None:
    """The polarity an answer commits to first: ``yes``, ``no`` or None. Hedges are
    skipped (``probably not`` says no); a sentence with only a hedge says yes."""
    for start, end in sentence_bounds(text):
        hedged = False
        for word, _, _ in _words(text[start:end]):
            if word in _NO or word.endswith("n't"):
                return "no"
            if word in _YES:
                return "yes"
            hedged = hedged or word in _HEDGES
        if hedged:
            return "yes"
    return None


_NEGATOR = re.compile(r"\b(?:not|never|no longer|neither|nor|no|nothing|none)\b|n't\b")
# After a cue: an interjection ("No, ...") or a hedge ("not sure") negates nothing.
_NOT_NEGATING = re.compile(r"\s*[,.!?;:]|\s+(?:\w+\s+){0,2}?(?:sure|certain|mistaken)\b")


def _negator(word: str) -> bool:
    return word in _NO or word in ("neither", "nor", "nothing", "none") or word.endswith("n't")


def _read(text: str) -> set[tuple[str, bool]]:
    """(stem, negated) for every content word `text` states: a word after a negation cue
    in its clause is negated; a word in a question is not stated. Number words are
    digits (``three`` is ``3``)."""
    said: set[tuple[str, bool]] = set()
    for sentence_start, sentence_end in sentence_bounds(text):
        if text[sentence_start:sentence_end].rstrip().endswith("?"):
            continue
        for start, end in clause_bounds(text[sentence_start:sentence_end]):
            clause = text[sentence_start + start : sentence_start + end]
            cues = [
                m.end()
                for m in _NEGATOR.finditer(clause.casefold())
                if not _NOT_NEGATING.match(clause, m.end())
            ]
            for word, position, _ in _words(clause):
                if word in STOP_WORDS or _negator(word) or word in _HEDGES:
                    continue
                said.add((_stem(word), any(cue <= position for cue in cues)))
    return said


def _asserts(text: str, value: str, locale: Locale) -> bool:
    found = find_value(text, value, locale)
    read = stances(text, [(m.start, m.end) for m in found], supersession=False)
    return any(stance == "asserted" for stance in read)


def _guessed(text: str, stems: set[str]) -> bool:
    """Whether the sentence that holds the item's words offers it as one of several
    guesses: candidates joined by ``or`` in an answer that says it is unsure."""
    if not _UNSURE.search(text.casefold()):
        return False
    for start, end in sentence_bounds(text):
        sentence = text[start:end].casefold()
        if " or " in sentence and any(_stem(w) in stems for w in _content(sentence)):
            return True
    return False


def _held(word: tuple[str, bool], answer: set[tuple[str, bool]]) -> bool:
    """Whether the answer states a gold word: the same stem and negation, or a stem of at
    least four letters that begins the other (``trans`` for ``transgender``)."""
    if word in answer:
        return True
    stem, negated = word
    return any(
        flag == negated
        and min(len(stem), len(other)) >= 4
        and (stem.startswith(other) or other.startswith(stem))
        for other, flag in answer
    )


def guesses(text: str) -> bool:
    """Whether a (normalised) answer offers a guess (``maybe X``, ``it could be X``)."""
    return _GUESS.search(text.casefold()) is not None


def _item_matched(item: str, text: str, answer: set[tuple[str, bool]], locale: Locale) -> bool:
    typed = specifics(item, locale)
    if any(not _asserts(text, item[m.start : m.end], locale) for m in typed):
        return False
    rest = item
    for mention in sorted(typed, key=lambda m: m.start, reverse=True):
        rest = rest[: mention.start] + " " + rest[mention.end :]
    wanted = _read(rest)
    if not wanted:
        return bool(typed)
    held = sum(_held(word, answer) for word in wanted)
    return held >= math.ceil(2 * len(wanted) / 3) and not _guessed(text, {w for w, _ in wanted})


def score_parts(text: str, gold: str, locale: Locale) -> tuple[int, int]:
    """(matched, total) items of the gold's best part for a normalised answer."""
    answer = _read(text)
    best = (0, 1)
    for items in gold_parts(gold, locale):
        polar = _polar_item(items[0])
        if polar is not None:
            if polarity(text) == polar:
                return 1, 1
            continue
        matched = sum(_item_matched(item, text, answer, locale) for item in items)
        if matched == len(items):
            return matched, len(items)
        if matched / len(items) > best[0] / best[1]:
            best = (matched, len(items))
    return best
