"""Free recall: an answer against a human-written gold answer (imported corpora).

The gold is read in parts: ``;`` separates alternatives (any one suffices), and ``,``
or a whole-word ``and`` separates the items of a list (every one is needed). An item is
matched when the answer

- asserts every typed value the item holds (a date, an amount, a time, a number or an
  identifier, found by `continuity.probes.values` in the trace's locale, and read for
  polarity: a negated or asked value is not asserted), and
- holds at least half (rounded up) of the item's remaining content words, compared by
  Porter stem (``paintings`` matches ``painted``; articles, pronouns, prepositions and
  auxiliaries are not content), and
- for a yes/no item (``Yes``, ``Likely no``), says the same ``yes`` or ``no`` first
  (the item's other words are its hedge, not content).

So ``Psychology, counseling certification`` is matched by "psychology and counseling",
and ``7 May 2023`` by "on May 7, 2023" but not by "May 2023". The outcome is
``correct`` when every item of some alternative is matched, ``abstained`` when the
answer declines (`continuity.probes.abstention`), and ``fabricated`` otherwise. Known
blind spots (README): an answer that lists extra items beside the gold still scores
correct (LoCoMo's token-F1, reported beside it, falls), and a paraphrase with none of
the gold's content words misses (the judge, in real runs, reads it).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

import snowballstemmer

from continuity.probes.normalise import normalise
from continuity.probes.polarity import stances
from continuity.probes.values import Locale, find_value, specifics

__all__ = ["STOP_WORDS", "gold_alternatives", "score_parts"]

STOP_WORDS = frozenset(
    """a an the and or of to in on at for with by from as into onto over under about
    after before during than then so is are was were be been being am it its this that
    these those he she they them him her his hers their theirs i me my mine we us our
    you your has have had do does did will would could should can may might must s
    some any very just also really up out there here who whom which what when where why
    how""".split()
)
_POLAR = frozenset({"yes", "no"})
_ALTERNATIVE = re.compile(r"\s*;\s*")
_ITEM = re.compile(r"\s*,\s*|\s+and\s+", re.IGNORECASE)
_WORD = re.compile(r"\w+")
_POLAR_WORD = re.compile(r"\b(yes|no)\b")
_STEMMER = snowballstemmer.stemmer("porter")


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def gold_alternatives(gold: str) -> list[list[str]]:
    """The gold's alternatives, each a list of its items (normalised, none empty)."""
    alternatives = []
    for alternative in _ALTERNATIVE.split(normalise(gold).strip()):
        items = [item.strip(" .!?\"'()") for item in _ITEM.split(alternative)]
        items = [item for item in items if item]
        if items:
            alternatives.append(items)
    return alternatives


def _content(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.casefold()) if w not in STOP_WORDS]


def _asserts(text: str, value: str, locale: Locale) -> bool:
    found = find_value(text, value, locale)
    read = stances(text, [(m.start, m.end) for m in found], supersession=False)
    return any(stance == "asserted" for stance in read)


def _item_matched(item: str, text: str, answer_stems: set[str], locale: Locale) -> bool:
    typed = specifics(item, locale)
    if any(not _asserts(text, item[m.start : m.end], locale) for m in typed):
        return False
    rest = item
    for mention in sorted(typed, key=lambda m: m.start, reverse=True):
        rest = rest[: mention.start] + " " + rest[mention.end :]
    words = _content(rest)
    polar = [w for w in words if w in _POLAR]
    if polar:  # "Likely yes": the yes or no decides; the rest is a hedge
        first = _POLAR_WORD.search(text.casefold())
        return first is not None and first.group(1) == polar[0]
    if not words:
        return bool(typed)
    stems = {_stem(w) for w in words}
    held = sum(stem in answer_stems for stem in stems)
    return held >= math.ceil(len(stems) / 2)


def score_parts(text: str, gold: str, locale: Locale) -> tuple[int, int]:
    """(matched, total) items of the gold's best alternative for a normalised answer."""
    answer_stems = {_stem(w) for w in _content(text)}
    best = (0, 1)
    for items in gold_alternatives(gold):
        matched = sum(_item_matched(item, text, answer_stems, locale) for item in items)
        if matched == len(items):
            return matched, len(items)
        if matched / len(items) > best[0] / best[1]:
            best = (matched, len(items))
    return best
