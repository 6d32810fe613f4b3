"""Amounts an answer labels as another quantity than the one asked about.

A single-value answer about an amount often gives other amounts as context: "the fee
is €2,340, €270 cheaper than their first figure", "the deposit is £2,340 out of a total
of £11,500, leaving £9,160 to pay". Those amounts are not candidates for the asked value: a
careful reader sees they are a difference, a total, a balance or a part. `labelled_other`
finds them by an explicit label next to the amount, read over normalised text:

- after it, a comparison or difference (``less``, ``more``, ``cheaper``, ``lower``,
  ``higher``, ``off``, ``extra``, ``saving``, ``discount``, ``difference``), a remainder
  (``left``, ``remaining``, ``outstanding``, ``to pay``, ``still owed``) or a total
  (``in total``, ``total``, ``overall``, ``altogether``);
- before it, a total, a balance, a saving or a part (``a total (build cost) of``, ``out
  of``, ``leaving``, ``balance of``, ``remaining``, ``saving of``, ``discount of``,
  ``difference of``, ``of which``).

The scorer applies it only to an amount that is neither the current nor a superseded
value; an amount offered as an alternative (``£2,340 or £2,430 in total``) stays a
candidate. The scorer does not know which quantity the question asks about, so a label
is read from its words alone; but the current and superseded values are never set
aside, so the rule can only stop a labelled context amount from turning a right (or
stale) answer into a candidate list.
"""

from __future__ import annotations

import re

__all__ = ["labelled_other"]

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
_ALTERNATIVE = re.compile(r"(?:\bor\b|\beither\b|/|\bmaybe\b|\bperhaps\b)", re.IGNORECASE)


def labelled_other(text: str, start: int, end: int, previous_end: int) -> bool:
    """Whether the amount at ``text[start:end]`` is labelled as another quantity.

    `previous_end` is where the mention before it ends (0 when there is none): a label
    is looked for only after it, and an amount joined to it as an alternative (``or``,
    ``either``, ``/``, ``maybe``) is never set aside."""
    before = text[previous_end:start]
    if previous_end and _ALTERNATIVE.search(before):
        return False
    window = before[-60:]
    return bool(_BEFORE.search(window) or _AFTER.match(text, end))
