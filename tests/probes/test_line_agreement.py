"""The validity page's answer-line figure: right/wrong agreement over the value answers
that end with an ``ANSWER:`` line, resolved calls only (issue 35's 98 % goal)."""

from __future__ import annotations

from continuity.probes.calibration import CalibrationCase
from continuity.probes.validity_doc import line_agreement
from continuity.traces.schema import (
    ActiveConstraintExpectation,
    Fact,
    ToolIdentifierExpectation,
)

ID = ToolIdentifierExpectation(answer=Fact(value="KX-4410", evidence=("t1",)))
RULE = ActiveConstraintExpectation(mode="recall", required=(Fact(value="cash", evidence=("t2",)),))


def _case(case_id: str, answer: str, verdict: str, *, rule: bool = False) -> CalibrationCase:
    return CalibrationCase(
        id=case_id,
        category="active_constraint" if rule else "tool_identifier",
        case_class="test",
        question="Q?",
        expectation=RULE if rule else ID,
        answer=answer,
        verdict=verdict,  # type: ignore[arg-type]
    )


def test_only_resolved_value_answers_with_a_line_count() -> None:
    cases = [
        _case("agree", "It is KX-4410.\nANSWER: KX-4410", "correct"),
        _case("disagree", "ANSWER: KX-4411", "fabricated"),
        _case("unresolved", "answer: something", "fabricated"),
        _case("no-line", "It is KX-4410.", "correct"),
        _case("free-text", "Cash only.\nANSWER: cash", "correct", rule=True),
        _case("decline", "ANSWER: UNKNOWN", "abstained"),
    ]
    verdicts = {
        "agree": "correct",
        "disagree": "correct",  # the scorer called a wrong answer right
        "unresolved": "unresolved",
        "no-line": "fabricated",  # no line: outside this figure
        "free-text": "fabricated",  # a free-text category: outside this figure
        "decline": "abstained",
    }
    assert line_agreement(cases, verdicts) == (2, 3)
    assert line_agreement([], {}) == (0, 0)
