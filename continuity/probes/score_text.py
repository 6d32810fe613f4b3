"""The free-text categories' rules: active constraints (recall and task), next
actions and free recall. Each reads the normalised answer and returns a `Score`; see
`continuity.probes.scoring` for the rules in prose."""

from __future__ import annotations

import re
from collections.abc import Sequence

from wordfreq import zipf_frequency

from continuity.probes import abstention, free_recall
from continuity.probes.outcome import ASKED_BACK, Score, unresolved
from continuity.probes.polarity import stances
from continuity.probes.values import Locale, Mention, find_all, find_value, kind_of, states
from continuity.traces.schema import (
    ActiveConstraintExpectation,
    FreeRecallExpectation,
    NextActionExpectation,
)

__all__ = ["constraint", "free_recall_probe", "next_action"]


_OR = re.compile(r"\s*,?\s*(?:or|and/or|/)\s+(?:maybe\s+|perhaps\s+|possibly\s+)?$", re.IGNORECASE)


def _hedged(text: str, value: str, mention: Mention, locale: Locale) -> bool:
    """Whether `mention` of `value` is one of a hedged pair (``4pm or 5pm``)."""
    for other in find_all(text, value, locale):
        if states(value, other, locale):
            continue
        first, second = sorted((mention, other), key=lambda m: m.start)
        if _OR.fullmatch(text[first.end : second.start] + " "):
            return True
    return False


def _asserted_all(text: str, values: Sequence[str], locale: Locale) -> list[str]:
    """The values of `values` that `text` asserts (negation-aware, not hedged between two
    candidates of one kind), in the order given."""
    found = [(m, v) for v in values for m in find_value(text, v, locale)]
    found.sort(key=lambda pair: (pair[0].start, pair[0].end))
    read = stances(text, [(m.start, m.end) for m, _ in found], supersession=False)
    return [
        v
        for v in values
        if any(
            s == "asserted" and not _hedged(text, v, m, locale)
            for (m, w), s in zip(found, read, strict=True)
            if w == v
        )
    ]


# When one word of a multi-word forbidden name ("Fernhill Gallery", "Project Larkspur")
# counts as the name on its own: when it is distinctive, i.e. rare in ordinary English.
# A word naming the kind of thing ("Gallery", "Project", "Trade", "Ltd") is common and
# identifies nothing; a coined or place-like word ("Fernhill", "Larkspur") identifies the
# name. Rarity is the word's Zipf frequency in the `wordfreq` package's English list
# (Speer et al., wordfreq 3.x, shipped with the package and read offline): below 3.0,
# i.e. fewer than about one use per million words. Dictionary words above it ("Orchard",
# 3.6; "Summit", 4.3) never count alone; the full name still does.
_DISTINCTIVE_ZIPF = 3.0


def _distinctive(word: str) -> bool:
    """Whether a capitalised word of a forbidden name identifies it on its own."""
    stripped = word.strip(".,'\"()")
    return (
        stripped[:1].isupper()
        and stripped.isalpha()
        and zipf_frequency(stripped.lower(), "en") < _DISTINCTIVE_ZIPF
    )


def _forbidden_hit(text: str, value: str, locale: Locale) -> bool:
    """A forbidden value in full, or a multi-word name by any of its distinctive words."""
    if find_value(text, value, locale):
        return True
    if kind_of(value) != "phrase" or len(words := value.split()) < 2:
        return False
    return any(find_value(text, word, locale) for word in words if _distinctive(word))


def _contradicted(text: str, values: Sequence[str], locale: Locale) -> list[str]:
    """The typed values of `values` (amounts, dates, times, identifiers, codes: never a
    phrase) in whose place the answer asserts another value of the same kind (``$1,800``
    for ``£1800``, ``Tuesday 20 April`` for ``Monday 19 April``): a sure miss, where a
    missing phrase may only be paraphrased."""
    contradicted = []
    for value in values:
        if kind_of(value) == "phrase":
            continue
        others = [m for m in find_all(text, value, locale) if not states(value, m, locale)]
        read = stances(text, [(m.start, m.end) for m in others], supersession=False)
        if "asserted" in read:
            contradicted.append(value)
    return contradicted


def constraint(text: str, exp: ActiveConstraintExpectation, locale: Locale) -> Score:
    if exp.mode == "task":
        hit = [f.value for f in exp.forbidden if _forbidden_hit(text, f.value, locale)]
        if hit:
            return Score("violation", False, f"{len(hit)} forbidden pattern(s)")
        if abstention.only_declines(text):
            # A refusal violates nothing, but it does not do the task either: it shows no
            # rule kept (a reader that always declines would otherwise score every task).
            return Score("abstained", False, "declined the task")
        # Doing the task without the item, not doing it, or naming the item in other
        # words: the scorer cannot tell these apart.
        return unresolved("no forbidden pattern found")
    # Recalled rules are negative by nature ("never mention X"): terms count in any polarity.
    missing = [f.value for f in exp.required if not find_value(text, f.value, locale)]
    if not missing:
        return Score("correct", True, "every required term")
    if len(missing) == len(exp.required) and abstention.abstains(text):
        return Score("abstained", False, "abstained although the rules were stated")
    if free_recall.only_asks(text):
        return ASKED_BACK
    if wrong := _contradicted(text, missing, locale):
        return Score(
            "fabricated",
            False,
            f"{len(missing)} of {len(exp.required)} terms missing "
            f"({len(wrong)} stated as another value)",
        )
    # A rule restated in other words (a synonym, another language) misses its term
    # without being wrong: the scorer cannot tell a paraphrase from an omission.
    return unresolved(f"{len(missing)} of {len(exp.required)} terms not found")


# "either ... or ...", "whether ... or ...": a reply that names its answer as one of two.
_ALTERNATIVES = re.compile(r"\b(?:either|whether)\b[^.?!\n]*\bor\b", re.IGNORECASE)


def next_action(text: str, exp: NextActionExpectation, locale: Locale) -> Score:
    keywords = [f.value for f in exp.keywords]
    asserted = _asserted_all(text, keywords, locale)
    missing = [k for k in keywords if k not in asserted]
    if not missing:
        if _ALTERNATIVES.search(text):  # "either book X or chase Y": no one action
            return unresolved("every keyword, but offered among alternatives")
        return Score("correct", True, "every keyword")
    if len(missing) == len(keywords) and abstention.abstains(text):
        return Score("abstained", False, "abstained although the task was stated")
    negated = [k for k in missing if find_value(text, k, locale)]
    if negated:
        return Score(
            "fabricated", False, f"{len(missing)} keyword(s) missing ({len(negated)} negated)"
        )
    if free_recall.only_asks(text):
        return ASKED_BACK
    if wrong := _contradicted(text, missing, locale):
        return Score(
            "fabricated",
            False,
            f"{len(missing)} keyword(s) missing ({len(wrong)} stated as another value)",
        )
    return unresolved(f"{len(missing)} keyword(s) not found")


def free_recall_probe(text: str, exp: FreeRecallExpectation, locale: Locale) -> Score:
    matched, total, doubtful = free_recall.score_parts(text, exp.answer, locale)
    if matched == total and not doubtful:
        return Score("correct", True, "every part of the gold answer")
    if doubtful and matched + doubtful >= total:  # nothing surely missing, something unsure
        return unresolved(f"{doubtful} gold item(s) neither surely stated nor surely missed")
    declined = (
        abstention.abstains(text) or free_recall.only_asks(text) or free_recall.noncommittal(text)
    )
    answered = free_recall.guesses(text) or free_recall.denies(text, exp.answer, locale)
    if not matched and declined and not answered:
        return Score("abstained", False, "abstained although the answer was in the conversation")
    return Score("fabricated", False, f"{total - matched} of {total} gold item(s) not stated")
