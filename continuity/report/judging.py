"""Agreement between the deterministic scorer and the independent judge.

Over every valid sample that has a judge verdict, suite by suite (never pooled across
trace families), per category and over the suite: how often the scorer's ``correct`` and
the judge's ``passed`` agree, and every disagreement with its sample, the answer and both
verdicts, so a reader can see which side to doubt. The main tables always use the
scorer; the judge is a check on it, never a replacement.
A verdict the judge's reply did not carry (outcome ``unreadable``) is counted apart and
left out of the agreement figures.
"""

from __future__ import annotations

from collections import defaultdict

from continuity.report.results import Agreement, Disagreement, JudgeResults, SuiteAgreement
from continuity.report.summary import JudgeRow, UnitSummary

__all__ = ["UNREADABLE", "judge_agreement"]

UNREADABLE = "unreadable"  # continuity.probes.judge: a reply that carried no verdict


def _agreement(rows: list[JudgeRow]) -> Agreement:
    agree = sum(1 for r in rows if r.passed == r.scorer_correct)
    return Agreement(
        pairs=len(rows),
        agree=agree,
        agreement=agree / len(rows) if rows else None,
        judge_pass=sum(1 for r in rows if r.passed),
        proxy_pass=sum(1 for r in rows if r.scorer_correct),
    )


def _suite_agreement(summaries: list[UnitSummary], categories: list[str]) -> SuiteAgreement:
    every = [row for s in summaries for row in s.judge]
    rows = [row for row in every if row.judge_outcome != UNREADABLE]
    return SuiteAgreement(
        overall=_agreement(rows),
        unreadable=len(every) - len(rows),
        by_category={
            c: _agreement(judged)
            for c in categories
            if (judged := [r for r in rows if r.category == c])
        },
    )


def _disagreements(summaries: list[UnitSummary]) -> list[Disagreement]:
    """Every readable verdict that differs from the scorer, sorted by unit and probe."""
    return [
        Disagreement(
            unit=f"r{s.repeat}/{s.trace_id}/{s.arm}",
            suite=s.family,
            probe_id=row.probe_id,
            category=row.category,
            answer=row.answer or "",
            scorer_correct=row.scorer_correct,
            scorer_outcome=row.scorer_outcome,
            judge_passed=row.passed,
            judge_outcome=row.judge_outcome,
            reason=row.reason,
        )
        for s in sorted(summaries, key=lambda s: (s.repeat, s.trace_id, s.arm))
        for row in s.judge
        if row.passed != row.scorer_correct and row.judge_outcome != UNREADABLE
    ]


def judge_agreement(
    summaries: list[UnitSummary], categories: list[str], suites: list[str]
) -> JudgeResults:
    """``by_suite`` (suite -> ``overall``, ``unreadable`` and ``by_category``, only
    categories with a verdict; only suites with a verdict), the run's ``pairs`` and
    ``unreadable`` counts (what the judge's spend line counts; no agreement figure pools
    suites) and ``disagreements`` (sorted by unit and probe, each naming its suite)."""
    grouped: dict[str, list[UnitSummary]] = defaultdict(list)
    for summary in summaries:
        grouped[summary.family].append(summary)
    by_suite = {
        suite: _suite_agreement(grouped[suite], categories)
        for suite in suites
        if any(s.judge for s in grouped[suite])
    }
    return JudgeResults(
        pairs=sum(cell.overall.pairs for cell in by_suite.values()),
        unreadable=sum(cell.unreadable for cell in by_suite.values()),
        by_suite=by_suite,
        disagreements=_disagreements(summaries),
    )
