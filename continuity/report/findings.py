"""The report's key findings: per suite and arm, accuracy with its coverage and where
the probed facts were after the boundary, the largest paired delta vs the baseline arm,
and one plain-language sentence that reads them.

Where each fact was (in the reader's context, retrievable through a tool, or lost at
the boundary) is the offline headline: the scripted reader declines every value probe,
so its accuracy is the same on every arm, while the places differ per arm.
`continuity.probes.availability` finds them from the stored evidence, the aggregate
counts them per suite and arm (``Results.availability``), and `headline` reads those
counts; the offline contract prints the same numbers (`continuity.contract_headline`).
Everything here is computed from a `Results`, so report.html, summary.md and the
contract agree. Rendering is `continuity.report.findings_render`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec
from msgspec import UNSET

from continuity.report.paired import baseline_arm
from continuity.report.results import Results

__all__ = [
    "ArmFinding",
    "ArmHeadline",
    "Findings",
    "LargestDelta",
    "SuiteFindings",
    "SuiteHeadline",
    "findings",
    "headline",
    "is_real",
    "share",
]


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


def share(count: int, total: int) -> str:
    """A count as a whole percentage of `total` ("-" when nothing was probed)."""
    return f"{round(100 * count / total)}%" if total else "-"


class ArmFinding(msgspec.Struct, frozen=True, kw_only=True):
    """One suite's arm: overall accuracy over its `resolved` samples (of `valid`;
    coverage is resolved ÷ valid) and where its probed facts were."""

    arm: str
    accuracy: float | None
    resolved: int
    valid: int
    coverage: float | None
    places: ArmHeadline


class LargestDelta(msgspec.Struct, frozen=True, kw_only=True):
    """The arm whose paired delta vs the suite's baseline is largest in size."""

    arm: str
    baseline: str
    delta_pp: float
    ci_low: float | None
    ci_high: float | None
    pairs: int

    @property
    def excludes_zero(self) -> bool:
        """Whether the paired 95% interval lies wholly on one side of zero."""
        low, high = self.ci_low, self.ci_high
        return low is not None and high is not None and (low > 0 or high < 0)


class SuiteFindings(msgspec.Struct, frozen=True, kw_only=True):
    suite: str
    arms: tuple[ArmFinding, ...]
    largest: LargestDelta | None  # None without a paired comparison in the suite
    baseline: str | None = None  # the arm the suite's deltas pair with (`baseline_arm`)


class Findings(msgspec.Struct, frozen=True, kw_only=True):
    real: bool
    suites: tuple[SuiteFindings, ...]
    reading: str


def is_real(r: Results) -> bool:
    """Whether any answer came from a model call (else the readers were scripted)."""
    return any(cell.model_calls for cell in r.spend.values())


def _largest(r: Results, suite: str) -> LargestDelta | None:
    """The suite's paired comparison whose delta is largest in size (the first in arm
    order on a tie); None when no arm was paired with the baseline. The baseline is the
    arm the deltas were paired with: `baseline_arm` of the arms the suite ran."""
    paired = r.paired.get(suite, {})
    baseline = baseline_arm(r.accuracy.get(suite, {}))
    if baseline is None:
        return None
    best: LargestDelta | None = None
    for arm in r.arms:
        p = paired.get(arm)
        if p is None or p.delta_pp is None:
            continue
        if best is None or abs(p.delta_pp) > abs(best.delta_pp):
            best = LargestDelta(
                arm=arm,
                baseline=baseline,
                delta_pp=p.delta_pp,
                ci_low=p.ci_low,
                ci_high=p.ci_high,
                pairs=p.pairs,
            )
    return best


def _suite(r: Results, suite: str, places: SuiteHeadline | None) -> SuiteFindings:
    by_arm = {a.arm: a for a in places.arms} if places is not None else {}
    rows = []
    for arm in r.arms:
        cell = r.accuracy.get(suite, {}).get(arm, {}).get("overall")
        if cell is None and arm not in by_arm:
            continue  # the suite did not run this arm
        rows.append(
            ArmFinding(
                arm=arm,
                accuracy=cell.mean if cell is not None else None,
                resolved=cell.n if cell is not None else 0,
                valid=cell.valid if cell is not None else 0,
                coverage=cell.coverage if cell is not None else None,
                places=by_arm.get(arm, ArmHeadline(arm, 0, 0, 0, 0)),
            )
        )
    return SuiteFindings(
        suite=suite,
        arms=tuple(rows),
        largest=_largest(r, suite),
        baseline=baseline_arm(r.accuracy.get(suite, {})),
    )


def findings(r: Results) -> Findings:
    """The key findings of `r`, suites and arms in the report's order."""
    places = {s.suite: s for s in headline(r.availability, r.arms)}
    suites = tuple(_suite(r, suite, places.get(suite)) for suite in r.suites)
    real = is_real(r)
    return Findings(real=real, suites=suites, reading=_reading(r, suites, real))


def _all_unknown(r: Results) -> bool:
    """Whether every valid value-probe reply of every arm ended ``ANSWER: UNKNOWN``."""
    if r.answer_line is UNSET or not r.answer_line:
        return False
    cells = [c for by_arm in r.answer_line.values() for c in by_arm.values()]
    return bool(cells) and all(c.samples and c.unknown == c.samples for c in cells)


def _flat(suites: Sequence[SuiteFindings]) -> bool:
    """Whether every arm of each suite has the same accuracy (at one decimal)."""
    return all(
        len({round(100 * a.accuracy, 1) for a in s.arms if a.accuracy is not None}) <= 1
        for s in suites
    )


# Probe categories whose right answer is UNKNOWN (the scripted reader's only answer),
# with what their probes ask about, for the reading.
_UNKNOWN_RIGHT = {
    "abstention": "facts that never came up",
    "redaction": "secrets to withhold",
}


def _unknown_categories(r: Results) -> tuple[list[str], bool]:
    """The categories every arm answered right wherever it resolved a sample (mean 1.0),
    in `Results.categories` order, and whether every category was all right or all wrong
    (so UNKNOWN is right on those categories only)."""
    means: dict[str, set[float]] = {}
    for by_arm in r.accuracy.values():
        for cells in by_arm.values():
            for category, cell in cells.items():
                if category != "overall" and cell.n and cell.mean is not None:
                    means.setdefault(category, set()).add(cell.mean)
    order = {c: i for i, c in enumerate(r.categories)}
    right = sorted(
        (c for c, m in means.items() if m == {1.0}), key=lambda c: (order.get(c, len(order)), c)
    )
    return right, all(m in ({0.0}, {1.0}) for m in means.values())


def _figures(suites: Sequence[SuiteFindings]) -> str:
    """Each suite's accuracy (flat across its arms): ``15.4% on original, 14.3% on
    hard``, or the one figure of a single suite."""
    parts = []
    for s in suites:
        values = [a.accuracy for a in s.arms if a.accuracy is not None]
        if values:
            where = f" on {s.suite}" if len(suites) > 1 else ""
            parts.append(f"{100 * values[0]:.1f}%{where}")
    return ", ".join(parts)


def _unknown_lead(r: Results, suites: Sequence[SuiteFindings]) -> str:
    """The offline reading's start when every arm answered UNKNOWN: which probes that
    answer is right on (so accuracy is not zero), and that accuracy is flat."""
    right, only = _unknown_categories(r)
    lead = "On the scripted reader every arm answers UNKNOWN"
    if right:
        probes = " and ".join(
            f"the {c} probes" + (f" ({_UNKNOWN_RIGHT[c]})" if c in _UNKNOWN_RIGHT else "")
            for c in right
        )
        lead += f", which is right {'only ' if only else ''}on {probes}"
    figures = _figures(suites)
    if _flat(suites):
        return f"{lead}, so accuracy is flat across arms" + (f" ({figures})" if figures else "")
    return f"{lead}, so an arm's accuracy is only the share of such probes among its samples"


def _places_clause(suites: Sequence[SuiteFindings]) -> str:
    """Which arm lost the largest share of its facts, and which kept the largest share
    retrievable (ties: the first suite, then the first arm)."""
    rows = [(s.suite, a.places) for s in suites for a in s.arms if a.places.facts]
    if not rows:
        return "no probe asked for a fact, so no arm's boundary shows in the places"
    suite, worst = max(rows, key=lambda row: row[1].lost / row[1].facts)
    if not worst.lost:
        return "every probed fact was still in context or retrievable on every arm"
    many = len(suites) > 1
    where = f" on {suite}" if many else ""
    clause = f"{worst.arm} lost {share(worst.lost, worst.facts)} of its facts{where}"
    suite, kept = max(rows, key=lambda row: row[1].retrievable / row[1].facts)
    if kept.retrievable:
        where = f" on {suite}" if many else ""
        clause += f", {kept.arm} kept {share(kept.retrievable, kept.facts)} retrievable{where}"
    return clause


def _delta_clause(suites: Sequence[SuiteFindings]) -> str:
    """The largest paired delta of the run, and whether its interval excludes zero."""
    deltas = [(s.suite, s.largest) for s in suites if s.largest is not None]
    if not deltas:
        return "no arm was paired with a baseline"
    suite, d = max(deltas, key=lambda row: abs(row[1].delta_pp))
    if d.delta_pp == 0:
        return f"no arm's accuracy differs from {d.baseline} on the same probes"
    where = f" on {suite}" if len(suites) > 1 else ""
    verdict = "excludes" if d.excludes_zero else "includes"
    return (
        f"the largest paired delta is {d.arm} vs {d.baseline}{where}, "
        f"{d.delta_pp:+.1f} pp (its 95% interval {verdict} 0)"
    )


def _reading(r: Results, suites: Sequence[SuiteFindings], real: bool) -> str:
    """One sentence a reader can take away, built from the numbers."""
    places = _places_clause(suites)
    if real:
        return f"On the model's answers, {_delta_clause(suites)}; after the boundary, {places}."
    if _all_unknown(r):
        lead = _unknown_lead(r, suites)
    elif _flat(suites):
        lead = "On the scripted reader accuracy is the same on every arm"
    else:
        lead = "On the scripted reader accuracy checks the pipeline, not the boundary"
    return f"{lead}; the boundary shows in where the facts were: {places}."
