"""The offline contract's headline: where each probed fact was after each arm's boundary.

The scripted reader declines every value probe, so its accuracy is the same on every
arm and says nothing about the boundaries. What does differ per arm, offline, is where
each fact the probes ask about was when the probe came: still in the reader's context,
retrievable through a tool (the ConversationHistory server), or lost at the boundary
(neither). `continuity.probes.availability` finds that from the stored evidence, with no
model; the aggregate counts it per suite and arm (``Results.availability``). The
headline is those counts, for the contract's last lines and its ``contract.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

__all__ = ["ArmHeadline", "SuiteHeadline", "headline", "headline_lines", "headline_markdown"]


class ArmHeadline(msgspec.Struct, frozen=True):
    """One arm: of its `facts` probed facts, where each was after the boundary."""

    arm: str
    facts: int
    in_context: int
    retrievable: int
    lost: int


class SuiteHeadline(msgspec.Struct, frozen=True):
    suite: str
    arms: tuple[ArmHeadline, ...]


def headline(
    availability: Mapping[str, Mapping[str, Mapping[str, int]]], arms: Sequence[str]
) -> tuple[SuiteHeadline, ...]:
    """Per suite (in `availability`'s order) and arm (in `arms`' order, those the suite
    ran), the places of the facts its probes asked about. A fact counts once per
    sample that needed it; samples whose answer needs no fact (abstention, redaction,
    task constraints) are left out."""
    suites = []
    for suite, by_arm in availability.items():
        rows = []
        for arm in (a for a in arms if a in by_arm):
            counts = by_arm[arm]
            in_context, retrievable = counts.get("in_context", 0), counts.get("retrievable", 0)
            lost = counts.get("absent", 0)
            rows.append(ArmHeadline(arm, in_context + retrievable + lost, in_context,
                                    retrievable, lost))  # fmt: skip
        suites.append(SuiteHeadline(suite, tuple(rows)))
    return tuple(suites)


def headline_lines(suites: Sequence[SuiteHeadline]) -> list[str]:
    """The headline as aligned text lines: a sentence, then per suite a header and one
    line of numbers per arm (so the contract's output ends with numbers)."""
    lines = [
        "where each probed fact was after the boundary, per arm (from the evidence, no model):"
    ]
    width = max((len(a.arm) for s in suites for a in s.arms), default=3)
    for suite in suites:
        lines.append(
            f"  {suite.suite + ' suite':<{width + 8}}{'facts':>6}{'in context':>12}"
            f"{'retrievable':>13}{'lost':>7}"
        )
        lines += [
            f"    {a.arm:<{width + 6}}{a.facts:>6}{_share(a.in_context, a.facts):>12}"
            f"{_share(a.retrievable, a.facts):>13}{_share(a.lost, a.facts):>7}"
            for a in suite.arms
        ]
    return lines


def _share(count: int, total: int) -> str:
    """A count as a whole percentage of `total` ("-" when nothing was probed)."""
    return f"{round(100 * count / total)}%" if total else "-"


def headline_markdown(suites: Sequence[SuiteHeadline]) -> list[str]:
    """The headline as a Markdown section (``contract.md``), in counts."""
    lines = ["", "## Where each probed fact was after the boundary", ""]
    lines += ["| suite | arm | facts | in context | retrievable | lost |"]
    lines += ["|---|---|---:|---:|---:|---:|"]
    lines += [
        f"| {s.suite} | {a.arm} | {a.facts} | {a.in_context} | {a.retrievable} | {a.lost} |"
        for s in suites
        for a in s.arms
    ]
    return lines
