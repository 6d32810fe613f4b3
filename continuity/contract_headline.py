"""The offline contract's headline: where each probed fact was after each arm's boundary.

The scripted reader declines every value probe, so its accuracy is the same on every
arm and says nothing about the boundaries. What does differ per arm, offline, is where
each fact the probes ask about was when the probe came: still in the reader's context,
retrievable through a tool (the ConversationHistory server), or lost at the boundary
(neither). `continuity.probes.availability` finds that from the stored evidence, with no
model; the aggregate counts it per suite and arm (``Results.availability``). The
headline is those counts (`continuity.report.findings.headline`, which report.html's
key findings read too), here as the contract's last lines and its ``contract.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

from continuity.report.findings import ArmHeadline, SuiteHeadline, headline, share

__all__ = ["ArmHeadline", "SuiteHeadline", "headline", "headline_lines", "headline_markdown"]


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
            f"    {a.arm:<{width + 6}}{a.facts:>6}{share(a.in_context, a.facts):>12}"
            f"{share(a.retrievable, a.facts):>13}{share(a.lost, a.facts):>7}"
            for a in suite.arms
        ]
    return lines


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
