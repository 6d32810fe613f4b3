"""Where an answer states a value: a span of the normalised answer and what it reads as.

A `Mention` is a span (``start``, ``end``) and a key: two renderings of one value share a
key, so a reader compares keys, never strings. A span that looks like a value of the
asked kind but cannot be read to one value with confidence (``09/11/2026`` in a trace of
unknown date order, ``1,234`` of a currency with three minor digits, ``Z$50``) has an
`Unreadable` key, which says why; `continuity.probes.values.unreadable` returns those, and
`continuity.probes.values.find_all` never does.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Mention", "Unreadable"]


class Mention(NamedTuple):
    start: int
    end: int
    key: object


class Unreadable(NamedTuple):
    """The key of a span that cannot be read to one value: `reason` says why."""

    reason: str
