"""Grading a unit's outcomes: each sample classified from its evidence, the valid ones
scored against their probe's expectation, and the judge where the rules run out.

Only ``valid`` samples are scored and analysed for availability; an excluded sample
keeps its class and reasons, never scored, never dropped; a failed child gives a failed
result. With a judge, the samples the scorer left ``unresolved`` go to it, and its
verdict decides them (`decide`, marked ``decided_by="judge"``); next actions, whose
scorer is a keyword proxy, go to it too, and there the judge is a check beside the
scorer. The judge gets the question, the expectation and the answer, never the arm.
`score_result` is also what ``doit score`` re-runs on recorded answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import msgspec

from continuity.errors import ContinuityError
from continuity.evidence import Classification, classify
from continuity.probes.availability import NeedleState, availability, fact_count, loss
from continuity.probes.judge import (
    JUDGE_OUTCOMES,
    Judge,
    JudgeCase,
    JudgeVerdict,
    ProviderJudge,
    ScriptedJudge,
)
from continuity.probes.scoring import DEFAULT_LOCALE, Locale, Outcome, locale_for, score_answer
from continuity.probes.token_f1 import locomo_f1
from continuity.runner.units.record import ProbeResult, RealRun
from continuity.runner.units.store import UnitFrame, failed_result
from continuity.sampling.receipts import SampleEvidence
from continuity.store import Store
from continuity.traces.schema import FreeRecallExpectation, Probe

if TYPE_CHECKING:
    from continuity.sampling.worker import ProbeOutcome

__all__ = [
    "JUDGED_CATEGORIES",
    "Graded",
    "decide",
    "grade",
    "judge_verdicts",
    "judged",
    "score_result",
    "unit_judge",
]


def unit_judge(store: Store, real: RealRun | None, judge: str | None, repeat: int) -> Judge | None:
    """The unit's judge: the judge model behind the call cache in real mode, the scripted
    judge offline when the plan has a judge, else none."""
    if real is not None:
        if real.judge is None:
            return None
        return ProviderJudge(
            real.judge,
            str(store.root),
            repeat=repeat,
            ledger=real.ledger,
            explain_log=real.explain_log,
        )
    return ScriptedJudge() if judge else None


def _sample_result(probe: Probe, evidence: SampleEvidence, verdict: Classification) -> ProbeResult:
    """A probe's result from its sample's evidence and classification, not yet scored."""
    return ProbeResult(
        probe_id=probe.probe_id,
        index=evidence.probe_index,
        category=probe.category,
        design_role=probe.design_role,
        status=verdict.status,
        reasons=verdict.reasons,
        answer=evidence.answer,
        history_calls=len(evidence.history_calls),
        usage=evidence.usage,
        # Real (d): the repeat's mid-trace summary counts in each sample that used it.
        compaction_usage=evidence.compaction_usage,
        compactions=[
            c for c in (evidence.compaction, *evidence.mid_run_compactions) if c is not None
        ],
        evidence=evidence,
    )


@dataclass
class Graded:
    """The unit's probe results, the cases its judge grades, and why it is unfinished."""

    results: list[ProbeResult]
    judged: list[JudgeCase]
    incomplete: list[str]


def grade(frame: UnitFrame, outcomes: Sequence[ProbeOutcome]) -> Graded:
    """Classify every outcome's sample; score the valid ones and queue them for the
    judge. A failed child gives a failed result; an excluded sample keeps its class and
    is never scored."""
    graded = Graded([], [], [])
    eligible = [p for p in frame.probes if p.probe_id not in frame.skipped]
    for probe, outcome in zip(eligible, outcomes, strict=True):
        evidence = outcome.evidence
        if evidence is None:
            graded.incomplete.append(str(outcome.error))
            reason, retrieves = str(outcome.error), frame.arm.history_tool
            graded.results.append(
                failed_result(probe, outcome.index, reason, outcome.witness, retrieves=retrieves)
            )
            continue
        verdict = classify(
            frame.arm, evidence, family=frame.trace.family, committed=frame.committed
        )
        result = _sample_result(probe, evidence, verdict)
        if verdict.status != "valid":
            graded.results.append(result)  # excluded: kept with its class, never scored
            continue
        locale = locale_for(frame.trace.family)
        scored = score_result(result, probe, evidence.needle_states, locale=locale)
        graded.results.append(scored)
        if judged(scored):  # the question, the expectation and the answer: never the arm
            graded.judged.append(
                JudgeCase(probe.probe_id, probe.text, probe.expectation, evidence.answer)
            )
    return graded


# The category whose scorer is a keyword proxy: the judge reads every valid answer of it
# beside the scorer, and the report prints their agreement.
JUDGED_CATEGORIES = frozenset({"next_action"})


def judged(result: ProbeResult) -> bool:
    """Whether a scored sample goes (or went) to the judge: the scorer left it
    unresolved (the judge may have decided it since), or its category's scorer is a
    proxy the judge is measured against (`JUDGED_CATEGORIES`)."""
    return (
        result.outcome == "unresolved"
        or result.decided_by == "judge"
        or result.category in JUDGED_CATEGORIES
    )


def decide(results: Sequence[ProbeResult], verdicts: Sequence[JudgeVerdict]) -> list[ProbeResult]:
    """The results with every unresolved sample the judge gave a readable verdict on
    decided by it: its named class (``incorrect`` without one is ``fabricated``), its
    pass, and ``decided_by="judge"``. A sample the judge could not read stays unresolved;
    every other result is the scorer's, unchanged."""
    by_probe = {v.probe_id: v for v in verdicts}
    decided = []
    for result in results:
        verdict = by_probe.get(result.probe_id)
        outcome = _judge_outcome(verdict)
        if result.outcome != "unresolved" or verdict is None or outcome is None:
            decided.append(result)
            continue
        decided.append(
            msgspec.structs.replace(
                result,
                outcome=outcome,
                correct=verdict.passed,
                score_reason=f"judge: {verdict.reason}".strip(),
                decided_by="judge",
            )
        )
    return decided


def _judge_outcome(verdict: JudgeVerdict | None) -> Outcome | None:
    """The outcome a readable verdict names (None for no verdict or an unreadable one)."""
    if verdict is None or verdict.outcome == "unreadable":
        return None
    if verdict.passed:
        return "correct"
    if verdict.outcome in JUDGE_OUTCOMES and verdict.outcome != "correct":
        return cast(Outcome, verdict.outcome)
    return "fabricated"  # "incorrect" or a pass/fail reply that named no class


def judge_verdicts(
    grader: Judge | None, graded: Graded, real: RealRun | None
) -> list[JudgeVerdict]:
    """The judge's verdicts on the valid answers; in real mode a failed judge call
    leaves the unit incomplete (finished verdicts come from the call cache)."""
    if grader is None or not graded.judged:
        return []
    try:
        return grader.verdicts(graded.judged)
    except ContinuityError as error:
        if real is None:
            raise
        graded.incomplete.append(str(error))
        return []


def score_result(
    result: ProbeResult,
    probe: Probe,
    states: Sequence[NeedleState],
    *,
    locale: Locale = DEFAULT_LOCALE,
) -> ProbeResult:
    """A valid probe result scored against its probe's expectation: outcome, the
    scorer's reason, availability from the recorded needle states, and the loss label.
    `locale` is the trace family's numeric-date locale (`locale_for`).
    (`doit score` re-runs exactly this on recorded answers.)"""
    score = score_answer(probe.expectation, result.answer, locale=locale)
    facts = fact_count(probe.expectation)
    available = availability(facts, states[:facts], states[facts:])
    exp = probe.expectation
    return msgspec.structs.replace(
        result,
        outcome=score.outcome,
        correct=score.correct,
        score_reason=score.reason,
        availability=available,
        loss=loss(available, score),
        token_f1=(
            round(locomo_f1(result.answer, exp.answer, exp.source_category), 6)
            if isinstance(exp, FreeRecallExpectation)
            else msgspec.UNSET
        ),
    )
