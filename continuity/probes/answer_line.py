"""The answer line of probe protocol v3: ``ANSWER: <value>`` or ``ANSWER: UNKNOWN``.

A value probe (identifiers, current values, statuses, abstentions) asks the reader to end
its reply with one line naming its answer, the convention of SimpleQA-style graders. The
scorer reads that line first (`answer_line`), and the free text only when it is missing.

The line is found as the last line of the reply whose first word, once Markdown
emphasis and list or quote markers are stripped, is ``answer`` followed by a colon (any
case; a full-width colon too). Its value is the rest of the line without surrounding
emphasis, quotes or a final full stop. A reply with no such line has none: the
scorer falls back to the whole reply and counts the line as missing.

``UNKNOWN`` (any case, or ``unknown.``) is the protocol's decline; any other value is
read by the probe's kind.
"""

from __future__ import annotations

import re

import msgspec

__all__ = ["AnswerLine", "answer_line"]

_LINE = re.compile(
    r"^[\s>*_`#|-]*(?:\d+[.)]\s*)?[*_`]*answer[*_`]*\s*[:\uff1a][*_`]*\s*(?P<value>.*?)\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_WRAPPING = " \t*_`\"'\u201c\u201d\u2018\u2019\u00ab\u00bb[]()"
_DECLINES = frozenset({"unknown", "unknown."})


class AnswerLine(msgspec.Struct, frozen=True):
    """The reply's answer line: its value, whether it declines (``UNKNOWN``), whether
    it is the reply's last non-empty line, and where its value starts in the reply."""

    value: str
    declines: bool
    last: bool
    start: int


def answer_line(text: str) -> AnswerLine | None:
    """The reply's answer line, or None when it has none (or an empty one)."""
    found = list(_LINE.finditer(text))
    if not found:
        return None
    match = found[-1]
    value = match.group("value").strip(_WRAPPING).rstrip(".").strip(_WRAPPING)
    if not value:
        return None
    last = not text[match.end() :].strip()
    return AnswerLine(
        value=value,
        declines=value.casefold() in _DECLINES,
        last=last,
        start=match.start("value"),
    )
