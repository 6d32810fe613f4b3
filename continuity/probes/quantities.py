"""Amounts an answer gives as context rather than as candidates for the asked value.

A single-value answer about an amount often gives other amounts beside it: "the fee is
€2,340, €270 cheaper than their first figure", "€456 back, plus €12 postage", "£2,340 (up
£220 from the first quote)", "they waived the €35 admin charge". A careful reader sees
those amounts are a difference, a total, a balance, a part or another charge, not a
second candidate. `labelled_other` reads the structure around an amount, over normalised
text. An amount is context when

- a relation word introduces it (``plus``, ``up``, ``down``, ``extra``, ``additional``,
  ``minus``, ``off``, ``including``, ``excluding``, ``with``, ``without``, ``on top of``,
  ``besides``, ``apart from``, optionally followed by an article: ``knocked off the``), or
  a label before it names a total, a balance, a saving or a part (``a total (build cost)
  of``, ``out of``, ``leaving``, ``balance of``, ``saving of``, ``of which``);
- a label after it names a comparison, a remainder or a total (``less``, ``more``,
  ``cheaper``, ``off``, ``saving``, ``discount``, ``left``, ``to pay``, ``in total``);
- a noun follows it that names what it is (``€12 postage``, ``€35 admin charge``): any
  word other than a function word, a verb in ``-ed`` (``€456 refunded``) or a word that
  names the amount itself (``figure``, ``amount``, ``price``, ``quote`` ...: the same
  slot);
- its clause names its quantity and another mention's clause names a different one
  (``the refund is €456; postage was €12``): each amount's slot is the noun before the
  ``is``/``was``/``of``/``:`` that introduces it, and two different slot nouns are two
  quantities. A pronoun (``it's``) names no slot.

An amount offered as an alternative (``or``, ``either``, ``/``, ``maybe``, ``perhaps``
between it and the mention before it) is never context, nor is one in the same slot.
The scorer applies this only to an amount that is neither the current nor a superseded
value, so the rule can only stop a context amount from turning a right (or stale)
answer into a candidate list; it does not know which quantity the question asks about.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["labelled_other", "names_another"]

_AFTER = re.compile(
    r"\s*(?:\(\w+\)\s*)?(?:(?:\w+\s+)?(?:less|more|cheaper|dearer|lower|higher|extra|off)\b"
    r"|(?:in\s+)?(?:savings?|discount|difference|reduction|increase|total|overall|altogether)\b"
    r"|(?:left|remaining|outstanding|still\s+(?:owed|due|to\s+pay)|to\s+pay|due\s+on)\b)",
    re.IGNORECASE,
)
_BEFORE = re.compile(
    r"\b(?:(?:sub)?total|balance|remainder|rest|savings?|discount|difference|reduction"
    r"|increase)(?:\s+\w+){0,2}\s+(?:of|is|was|comes\s+to|at|:)\s*$"
    r"|\b(?:out\s+of|of\s+which|leaving|leaves|remaining|outstanding|saving|saves\s+(?:you|us)"
    r"|(?:a|the)\s+(?:sub)?total\s+of)(?:\s+(?:a|an|the|another|just|only|about))?\s*$",
    re.IGNORECASE,
)
# A relation that introduces another quantity: an addition, a change, a deduction.
_RELATION = re.compile(
    r"(?:\b(?:plus|up|down|extra|additional|minus|off|including|incl|excluding|excl|with"
    r"|without|besides)|\bon\s+top\s+of|\bapart\s+from|\+)"
    r"(?:\s+(?:a|an|the|another|its|their|our|your|that|this|by|of|just|only|about))?\s*$",
    re.IGNORECASE,
)
_ALTERNATIVE = re.compile(r"(?:\bor\b|\beither\b|/|\bmaybe\b|\bperhaps\b)", re.IGNORECASE)
# Words after an amount that do not name another quantity: function words, and nouns
# for the amount itself (which keep it in the asked value's slot).
_NOT_A_LABEL = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "for",
        "to",
        "from",
        "in",
        "on",
        "at",
        "by",
        "of",
        "per",
        "each",
        "is",
        "was",
        "are",
        "were",
        "be",
        "been",
        "it",
        "its",
        "which",
        "that",
        "this",
        "so",
        "then",
        "now",
        "only",
        "exactly",
        "roughly",
        "about",
        "around",
        "approx",
        "approximately",
        "inc",
        "incl",
        "including",
        "ex",
        "excl",
        "excluding",
        "vat",
        "all",
        "instead",
        "not",
        "no",
        "as",
        "with",
        "plus",
        "minus",
        "if",
        "figure",
        "amount",
        "sum",
        "price",
        "quote",
        "quoted",
        "estimate",
        "cost",
        "number",
        "value",
        "one",
    ]
)
_NEXT_WORD = re.compile(r"\s+([a-z]+)\b", re.IGNORECASE)
_SLOT = re.compile(
    r"\b([a-z]+)\s+(?:(?:is|was|are|were|came\s+to|comes\s+to|of|at|totals?|costs?)\s+"
    r"(?:(?:now|still|just|only|about|around|a|an|the)\s+)?|:\s*)$",
    re.IGNORECASE,
)
_NO_SLOT = frozenset(
    [
        "it",
        "this",
        "that",
        "which",
        "what",
        "there",
        "here",
        "they",
        "we",
        "i",
        "you",
        "he",
        "she",
        "one",
    ]
)


def _slot(text: str, start: int) -> str | None:
    """The noun naming the quantity an amount at `start` is given as, if its clause has one."""
    window = re.split(r"[.;!?()\n]|,\s", text[max(0, start - 60) : start])[-1]
    match = _SLOT.search(window)
    if not match or match.group(1).lower() in _NO_SLOT:
        return None
    return match.group(1).lower()


def names_another(text: str, end: int) -> bool:
    """Whether a noun naming what the amount is follows it (``€12 postage``, ``12
    invoices``): any word but a function word, a verb in ``-ed`` or a word naming the
    amount itself (``figure``, ``price``)."""
    match = _NEXT_WORD.match(text, end)
    if not match:
        return False
    word = match.group(1).lower()
    return word not in _NOT_A_LABEL and not word.endswith("ed")


def labelled_other(
    text: str,
    start: int,
    end: int,
    previous_end: int,
    anchors: Sequence[tuple[int, int]] = (),
) -> bool:
    """Whether the amount at ``text[start:end]`` is context, not a candidate (module doc).

    `previous_end` is where the mention before it ends (0 when there is none): a label
    is looked for only after it, and an amount joined to it as an alternative (``or``,
    ``either``, ``/``, ``maybe``) is never context. `anchors` are the spans of the
    answer's current and superseded mentions, whose slots the amount's slot is compared
    with."""
    before = text[previous_end:start]
    if previous_end and _ALTERNATIVE.search(before):
        return False
    window = before[-60:]
    if _BEFORE.search(window) or _RELATION.search(window) or _AFTER.match(text, end):
        return True
    if names_another(text, end):
        return True
    own = _slot(text, start)
    return own is not None and any(
        (slot := _slot(text, a)) is not None and slot != own for a, _ in anchors
    )
