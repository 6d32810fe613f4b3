"""The accuracy gate of ``doit aggregate --fail-under PCT``, read from results.json.

The gate reads the written ``results.json`` (never the units): for every suite and arm,
the overall accuracy (the mean of per-repeat accuracies over valid samples, graded by the
scorer the aggregate used) must be at least `PCT` percent. An arm with no valid sample in
a suite has no accuracy, and fails the gate: a CI gate that passes on no data would hide
a run that answered nothing.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from continuity.errors import AggregateError, GateFailed
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes

__all__ = ["AccuracyFinding", "accuracy_findings", "check_accuracy"]


class _Cell(msgspec.Struct, frozen=True):
    mean: float | None
    n: int


class _Accuracy(msgspec.Struct, frozen=True):
    """The part of `continuity.report.results.Results` the gate reads (suite -> arm ->
    category -> cell); other fields are ignored."""

    accuracy: dict[str, dict[str, dict[str, _Cell]]]


class AccuracyFinding(msgspec.Struct, frozen=True, kw_only=True):
    """One arm's overall accuracy in one suite, in percent (None: no valid sample)."""

    suite: str
    arm: str
    percent: float | None
    samples: int


def accuracy_findings(results_path: Path) -> list[AccuracyFinding]:
    """Every (suite, arm) overall accuracy of a written ``results.json``.

    Raises:
        AggregateError: ``results_unreadable`` when the file is missing or is not a
            results document with per-suite accuracy.
    """
    try:
        data = read_user_bytes(results_path, limit=DOCUMENT_MAX_BYTES, what="results.json")
        document = msgspec.json.decode(data, type=_Accuracy)
    except (OSError, msgspec.MsgspecError) as exc:
        raise AggregateError(
            f"cannot read the accuracy table: {exc}",
            code="results_unreadable",
            location=str(results_path),
        ) from None
    findings = []
    for suite, arms in document.accuracy.items():
        for arm, cells in arms.items():
            overall = cells.get("overall")
            mean = overall.mean if overall is not None else None
            findings.append(
                AccuracyFinding(
                    suite=suite,
                    arm=arm,
                    percent=None if mean is None else 100.0 * mean,
                    samples=overall.n if overall is not None else 0,
                )
            )
    return findings


def check_accuracy(results_path: Path, minimum_percent: float) -> list[AccuracyFinding]:
    """Pass (return every finding) when each suite's every arm is at least
    `minimum_percent`; otherwise raise.

    Raises:
        GateFailed: ``accuracy_below_threshold`` at ``--fail-under``, naming each arm
            and suite below it with its accuracy and sample count.
        AggregateError: ``results_unreadable`` (see `accuracy_findings`), also when
            the results hold no accuracy at all.
    """
    findings = accuracy_findings(results_path)
    if not findings:
        raise AggregateError(
            "the results hold no accuracy to gate on",
            code="results_unreadable",
            location=str(results_path),
        )
    below = [f for f in findings if f.percent is None or f.percent < minimum_percent]
    if below:
        named = "; ".join(
            f"{f.arm} in {f.suite}: "
            + ("no valid sample" if f.percent is None else f"{f.percent:.1f} %")
            + f" (n={f.samples})"
            for f in below
        )
        raise GateFailed(
            f"{len(below)} of {len(findings)} arm-suite accuracies are below "
            f"{minimum_percent:g} %: {named}; results at {results_path}",
            code="accuracy_below_threshold",
            location="--fail-under",
        )
    return findings
