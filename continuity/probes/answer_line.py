"""The structured answer line: ``ANSWER: <value>``, or ``ANSWER: UNKNOWN``.

A value probe's reply may end with one line that states its answer alone (the
convention of SimpleQA-style graders and "Answer: X" extraction). When a reply has one,
the scorer reads the value on it before the free text, so a chatty reply, a reasoning
trail that names other candidates, or a decline in unusual words no longer decides the
grade: the line does.

What counts as the line (`read`), on the raw reply's lines, each normalised
(`continuity.probes.normalise` folds line breaks, so the lines are split first):

- a line whose first word, after optional Markdown emphasis, quoting or a list marker,
  is ``answer`` in any case, followed by a colon (``ANSWER: X``, ``**Answer:** X``,
  ``> answer : X``, ``- ANSWER: X``), with the value after the colon on the same line,
  its surrounding emphasis, quotes and a final full stop removed;
- the reply's last such line wins when every such line gives the same value; when two
  lines give different values the reply contradicts itself, and `read` says so
  (``conflict``), which the scorer grades as no single answer;
- ``UNKNOWN`` (any case, optionally ``N/A`` or ``none``, the declines the format invites)
  is the structured decline (``unknown``).

A line whose value is empty, or is the instruction's ``<value>`` placeholder echoed
back, is no answer line. A reply without any line is read from
its free text, as before (`AnswerLine.kind` ``missing``).
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from continuity.probes.normalise import normalise

__all__ = ["AnswerLine", "LineKind", "prose", "read"]

LineKind = Literal["value", "unknown", "conflict", "missing"]


class AnswerLine(NamedTuple):
    """What a reply's answer line says: its kind and, for ``value``, the value text (for
    ``conflict``, every distinct value, joined by ``; ``)."""

    kind: LineKind
    value: str = ""


_LINE = re.compile(
    r"(?:[-*>+] )?[*_`]*\s*answer\s*[*_`]*\s*:\s*[*_`]*\s*(?P<value>.*?)\s*",
    re.IGNORECASE,
)
_EDGES = "*_`\"' \t"  # normalise folded curly quotes and full-width colons already
_UNKNOWN = re.compile(r"(?:unknown|n/?a|none)[.!]?", re.IGNORECASE)


def _clean(value: str) -> str:
    value = value.strip(_EDGES)
    if value.endswith(".") and not re.search(r"\d\.$|\b[a-z]\.$", value, re.IGNORECASE):
        value = value[:-1].rstrip(_EDGES)
    return value


def _value(line: str) -> str | None:
    """The cleaned value of an answer line; None for any other line, an empty value, or
    the instruction's own ``<value>`` placeholder echoed back."""
    m = _LINE.fullmatch(normalise(line))
    value = _clean(m.group("value")) if m else ""
    return value if value and value.lower() != "<value>" else None


def prose(reply: str) -> str:
    """The reply without its answer lines: what it says around them."""
    return "\n".join(line for line in reply.splitlines() if _value(line) is None)


def read(reply: str) -> AnswerLine:
    """The answer line of a raw reply (its value normalised); ``missing`` when it has
    none."""
    values = [v for line in reply.splitlines() if (v := _value(line)) is not None]
    if not values:
        return AnswerLine("missing")
    distinct = list(dict.fromkeys(v.casefold() for v in values))
    if len(distinct) > 1:
        unique = list(dict.fromkeys(values))
        return AnswerLine("conflict", "; ".join(unique))
    if _UNKNOWN.fullmatch(values[-1]):
        return AnswerLine("unknown")
    return AnswerLine("value", values[-1])
