"""`doit compare`: two runs paired sample by sample, with the statistics a CI gate reads.

The runs are checked first (continuity.report.compare_runs: the same probe protocol, the
same content behind every shared trace id). Both are then verified and graded by the
aggregate's own path (`load_summaries` with a `Scorer`, duplicate lookup slots taken out
by `without_duplicate_slots`), so a sample is correct here exactly when it is correct in
``doit aggregate`` under the same ``--scorer``.

Samples pair on identical (suite, trace, probe, arm, repeat) slots valid in both runs.
For every suite x arm, overall and per category, a `Delta` gives both accuracies, the
paired delta (head minus base), the discordant counts, the exact McNemar p
(`continuity.report.stats.mcnemar_exact`) and the paired bootstrap interval (the
report's `bootstrap_interval`, deterministic and cached in the store). "Significant" is
defined once, in `continuity.report.compare_results.SIGNIFICANCE`.

Grades: ``current`` grades both runs with this checkout's scorer, so their scorer
versions agree by construction. ``original`` uses each unit file's own grades, given by
the scorer of the day the unit ran. Unit files do not name that scorer; each run
manifest's invocations do (``run.json``, continuity.runner.manifest). When both runs'
manifests name their scorers, any difference, between the runs or within one, is refused
(``compare_scorer_mismatch``). A run without one (no ``run.json``, or one written before
manifests recorded scorers) falls back to a heuristic: the runs are checked against the
current scorer, and when it reproduces every original grade of one run and not of the
other, they were demonstrably graded by different scorers (``compare_scorer_mismatch``);
runs it cannot tell apart pass. The comparison says which check was made
(``scorer_check``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from continuity.arms import ARMS
from continuity.errors import CompareError
from continuity.outputs import write_json, write_output
from continuity.report.aggregate import SUITE_ORDER, probe_protocols
from continuity.report.collect import load_summaries
from continuity.report.compare_render import render_compare_html, render_compare_markdown
from continuity.report.compare_results import (
    SIGNIFICANCE,
    SIGNIFICANCE_LEVEL,
    ArmComparison,
    Comparison,
    Delta,
    Flip,
    RegressedProbe,
    RunSide,
    SlotCounts,
)
from continuity.report.compare_runs import (
    RunUnits,
    check_comparable,
    check_recorded_scorers,
    run_origin,
    scan_run,
)
from continuity.report.duplicates import without_duplicate_slots
from continuity.report.paired import bootstrap_interval
from continuity.report.scores import Scorer
from continuity.report.stats import mcnemar_exact
from continuity.report.summary import ProbeRow, UnitSummary
from continuity.runner.manifest import RunManifest, read_run_manifest
from continuity.store import Store

__all__ = ["Slot", "compare_runs", "paired_delta", "significant_drops"]

Slot = tuple[str, str, str, str, int]  # (suite, trace id, probe id, arm, repeat)


def _graded(store: Store, run_dir: Path, scorer: Scorer, option: str) -> list[UnitSummary]:
    """The run's verified unit summaries under `scorer`, as the aggregate reads them.

    Raises:
        AggregateError: a refused unit, ``run_empty``, ``unit_protocol_mixed``.
    """
    summaries, _ = load_summaries(store, run_dir / "units", scorer)
    probe_protocols(summaries, option)
    return without_duplicate_slots(summaries)


def _samples(summaries: Iterable[UnitSummary]) -> dict[Slot, ProbeRow]:
    return {
        (s.family, s.trace_id, row.probe_id, s.arm, s.repeat): row
        for s in summaries
        for row in s.rows
    }


def _unreproduced(summaries: Iterable[UnitSummary]) -> int:
    """How many original grades (``summary.original``) the current grades differ from."""
    differ = 0
    for summary in summaries:
        current = {r.probe_id: r for r in summary.rows if r.status == "valid"}
        for probe_id, correct, outcome in summary.original:
            row = current.get(probe_id)
            if row is not None and (outcome, bool(correct)) != (row.outcome, bool(row.correct)):
                differ += 1
    return differ


_HEURISTIC = (
    "a run's run.json does not record its scorer (missing, or written before manifests "
    "recorded scorers), so the scorers were checked by re-grading: refused only when the "
    "current scorer reproduces every original grade of one run and not of the other"
)


def _grades(
    store: Store, runs: dict[str, Path], choice: str, manifests: dict[str, RunManifest | None]
) -> tuple[dict[str, str], str]:
    """What each run's grades are, by option, and how their scorers were checked; with
    ``original``, refuse runs graded by different scorers (see the module doc).

    Raises:
        CompareError: ``compare_scorer_mismatch``.
    """
    if choice == "current":
        digest = Scorer(store, runs["--base"], choice).digest or ""
        check = f"both runs graded by this checkout's scorer {digest[:16]}"
        return dict.fromkeys(runs, f"current scorer {digest[:16]}"), check
    recorded = check_recorded_scorers(manifests)
    differ = {
        option: _unreproduced(_graded(store, run, Scorer(store, run, "current"), option))
        for option, run in runs.items()
    }
    if recorded is None and (differ["--base"] == 0) != (differ["--head"] == 0):
        odd = "--base" if differ["--base"] else "--head"
        raise CompareError(
            f"the current scorer reproduces every original grade of one run but "
            f"{differ[odd]} of the {odd.removeprefix('--')} run's: their original grades "
            "come from different scorer versions; compare with --scorer current",
            code="compare_scorer_mismatch",
            location=odd,
        )
    check = (
        _HEURISTIC
        if recorded is None
        else f"both runs' run.json record scorer {recorded[:16]} for every invocation"
    )
    grades = {
        option: "original grades"
        + (f" ({n} differ from the current scorer's)" if n else " (the current scorer's)")
        for option, n in differ.items()
    }
    return grades, check


def paired_delta(store: Store, pairs: list[tuple[bool, bool]]) -> Delta:
    """The paired statistics of (base correct, head correct) pairs."""
    n = len(pairs)
    base_correct = sum(b for b, _ in pairs)
    head_correct = sum(h for _, h in pairs)
    base_only = sum(1 for b, h in pairs if b and not h)
    head_only = sum(1 for b, h in pairs if h and not b)
    p = mcnemar_exact(head_only, base_only)
    interval = bootstrap_interval(store, [h for _, h in pairs], [b for b, _ in pairs])
    low, high = interval if interval else (None, None)
    excludes = low is not None and high is not None and (low > 0 or high < 0)
    return Delta(
        pairs=n,
        base_correct=base_correct,
        head_correct=head_correct,
        base_accuracy=100 * base_correct / n if n else None,
        head_accuracy=100 * head_correct / n if n else None,
        delta_pp=100 * (head_correct - base_correct) / n if n else None,
        base_only=base_only,
        head_only=head_only,
        mcnemar_p=p,
        ci_low=low,
        ci_high=high,
        excludes_zero=excludes,
        significant=excludes and p < SIGNIFICANCE_LEVEL,
    )


def _deltas(
    store: Store, paired: dict[Slot, tuple[ProbeRow, ProbeRow]]
) -> dict[str, dict[str, ArmComparison]]:
    cells: dict[tuple[str, str], dict[str, list[tuple[bool, bool]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for (suite, _, _, arm, _), (base, head) in paired.items():
        pair = (bool(base.correct), bool(head.correct))
        cells[(suite, arm)]["overall"].append(pair)
        cells[(suite, arm)][base.category].append(pair)
    out: dict[str, dict[str, ArmComparison]] = defaultdict(dict)
    rank = {arm_id: i for i, arm_id in enumerate(ARMS)}  # the report's arm order
    for (suite, arm), by_name in sorted(
        cells.items(), key=lambda c: (rank.get(c[0][1], len(rank)), c[0])
    ):
        out[suite][arm] = ArmComparison(
            overall=paired_delta(store, by_name["overall"]),
            by_category={
                name: paired_delta(store, pairs)
                for name, pairs in sorted(by_name.items())
                if name != "overall"
            },
        )
    return dict(out)


def _flips(
    paired: dict[Slot, tuple[ProbeRow, ProbeRow]], base: RunUnits, head: RunUnits
) -> list[Flip]:
    flips = []
    for (suite, trace, probe, arm, repeat), (b, h) in sorted(paired.items()):
        if bool(b.correct) == bool(h.correct):
            continue
        flips.append(
            Flip(
                suite=suite,
                trace_id=trace,
                probe_id=probe,
                category=b.category,
                arm=arm,
                repeat=repeat,
                direction="regressed" if b.correct else "improved",
                base_outcome=b.outcome,
                head_outcome=h.outcome,
                base_answer=base.answers.get((repeat, trace, arm, probe), ""),
                head_answer=head.answers.get((repeat, trace, arm, probe), ""),
            )
        )
    return flips


def _regressed_probes(paired: dict[Slot, tuple[ProbeRow, ProbeRow]]) -> list[RegressedProbe]:
    """Probes (per arm) correct in fewer paired repeats in head than in base."""
    counts: dict[tuple[str, str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    category: dict[tuple[str, str, str, str], str] = {}
    for (suite, trace, probe, arm, _), (b, h) in paired.items():
        key = (suite, trace, probe, arm)
        tally = counts[key]
        tally[0] += 1
        tally[1] += bool(b.correct)
        tally[2] += bool(h.correct)
        category[key] = b.category
    return [
        RegressedProbe(
            suite=suite,
            trace_id=trace,
            probe_id=probe,
            category=category[(suite, trace, probe, arm)],
            arm=arm,
            repeats=n,
            base_correct=base_n,
            head_correct=head_n,
        )
        for (suite, trace, probe, arm), (n, base_n, head_n) in sorted(counts.items())
        if head_n < base_n
    ]


def _order(suites: Iterable[str]) -> list[str]:
    present = set(suites)
    return [s for s in SUITE_ORDER if s in present] + sorted(present - set(SUITE_ORDER))


def _comparison(
    store: Store,
    units: dict[str, RunUnits],
    graded: dict[str, list[UnitSummary]],
    scorer: Scorer,
    grades: dict[str, str],
    check: str,
    manifests: dict[str, RunManifest | None],
) -> Comparison:
    """The comparison of two graded runs (see the module doc).

    Raises:
        CompareError: ``compare_no_pairs`` when no slot is valid in both runs.
    """
    base, head = _samples(graded["--base"]), _samples(graded["--head"])
    common = base.keys() & head.keys()
    valid = [
        slot
        for slot in sorted(common)
        if base[slot].status == "valid" and head[slot].status == "valid"
    ]
    paired = {
        slot: (base[slot], head[slot])
        for slot in valid
        if base[slot].resolved and head[slot].resolved
    }
    if not paired:
        raise CompareError(
            "no (suite, trace, probe, arm, repeat) slot is resolved in both runs: "
            f"{len(common) - len(valid)} in both but excluded in one, "
            f"{len(valid)} valid in both but unresolved in one, {len(base.keys() - common)} "
            f"only in base, {len(head.keys() - common)} only in head",
            code="compare_no_pairs",
            location="--head",
        )
    deltas = _deltas(store, paired)
    sides = {
        option: RunSide(
            name=units[option].path.name,
            path=str(units[option].path),
            units=units[option].units,
            grades=grades[option],
            origin=run_origin(manifests[option]),
        )
        for option in units
    }
    return Comparison(
        base=sides["--base"],
        head=sides["--head"],
        scorer=scorer.choice,
        scorer_digest=scorer.digest,
        scorer_check=check,
        probe_protocol=", ".join(sorted(units["--base"].protocols)),
        significance=SIGNIFICANCE,
        slots=SlotCounts(
            paired=len(paired),
            only_base=len(base.keys() - common),
            only_head=len(head.keys() - common),
            excluded=len(common) - len(valid),
            unresolved=len(valid) - len(paired),
        ),
        suites=_order(deltas),
        arms=list(dict.fromkeys(arm for arms in deltas.values() for arm in arms)),
        deltas={suite: deltas[suite] for suite in _order(deltas)},
        flips=_flips(paired, units["--base"], units["--head"]),
        regressed_probes=_regressed_probes(paired),
    )


def compare_runs(
    store: Store, base_dir: Path, head_dir: Path, out_dir: Path, scorer: str = "current"
) -> tuple[Comparison, dict[str, Path]]:
    """Compare two run directories and write ``compare.json``, ``compare.md`` and
    ``compare.html`` into `out_dir` (each atomically). Nothing is written on a refusal.

    Raises:
        UsageError: ``scorer_unknown`` (``--scorer``).
        CompareError: ``compare_protocol_mismatch``, ``compare_trace_mismatch``,
            ``compare_scorer_mismatch``, ``compare_no_pairs``.
        AggregateError: a unit either run's aggregate would refuse, or
            ``run_manifest_malformed`` for a ``run.json`` that does not read.
    """
    runs = {"--base": base_dir, "--head": head_dir}
    chosen = Scorer(store, base_dir, scorer)  # refuses an unknown choice first
    units = {option: scan_run(run) for option, run in runs.items()}
    check_comparable(units["--base"], units["--head"])
    graded = {
        option: _graded(store, run, Scorer(store, run, scorer), option)
        for option, run in runs.items()
    }
    manifests = {option: read_run_manifest(run) for option, run in runs.items()}
    grades, check = _grades(store, runs, scorer, manifests)
    comparison = _comparison(store, units, graded, chosen, grades, check, manifests)
    paths = {
        "json": out_dir / "compare.json",
        "markdown": out_dir / "compare.md",
        "html": out_dir / "compare.html",
    }
    write_json(paths["json"], comparison)
    write_output(paths["markdown"], render_compare_markdown(comparison).encode("utf-8"))
    write_output(paths["html"], render_compare_html(comparison).encode("utf-8"))
    return comparison, paths


def significant_drops(comparison: Comparison, max_drop: float = 0.0) -> list[str]:
    """Every suite x arm whose overall accuracy dropped by more than `max_drop`
    percentage points, significantly, as ``suite/arm -X.X pp``; ``max_drop`` 0 names
    every significant drop."""
    drops = []
    for suite, arms in comparison.deltas.items():
        for arm, cell in arms.items():
            delta = cell.overall
            if delta.significant and delta.delta_pp is not None and delta.delta_pp < -max_drop:
                drops.append(f"{suite}/{arm} {delta.delta_pp:+.1f} pp")
    return drops
