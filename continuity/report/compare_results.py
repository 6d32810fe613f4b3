"""The comparison document of two runs (``compare.json``, schema ``continuity-compare-v2``).

`continuity.report.compare` builds a `Comparison`; `continuity.report.compare_render`
reads one. Both import this module, never each other. Fields are declared in the order
the document writes them (msgspec encodes a struct's fields in declaration order).

Every figure is paired: it counts only the (suite, trace, probe, arm, repeat) slots that
are valid (scorable, not excluded) in both runs. Accuracies and deltas are percentages
and percentage points; a delta is head minus base.
"""

from __future__ import annotations

import msgspec

__all__ = [
    "COMPARE_SCHEMA",
    "SIGNIFICANCE",
    "SIGNIFICANCE_LEVEL",
    "ArmComparison",
    "Comparison",
    "Delta",
    "Flip",
    "RegressedProbe",
    "RunOrigin",
    "RunSide",
    "SlotCounts",
]

# v2: each run names its origin (run.json), and the document says how the scorers were checked
COMPARE_SCHEMA = "continuity-compare-v2"
SIGNIFICANCE_LEVEL = 0.05
# The one definition of "significant" the gates and the colours use. Both tests must
# agree: the bootstrap's percentile interval alone is optimistic on a handful of
# discordant pairs, and the exact McNemar test alone says nothing about the size.
SIGNIFICANCE = (
    "a delta is significant when its paired bootstrap 95% interval excludes zero and its "
    f"exact McNemar p is below {SIGNIFICANCE_LEVEL:g}"
)


class Delta(msgspec.Struct, frozen=True, kw_only=True):
    """Head against base over the pairs of one suite x arm (overall or one category)."""

    pairs: int
    base_correct: int
    head_correct: int
    base_accuracy: float | None  # percent; None without pairs
    head_accuracy: float | None
    delta_pp: float | None  # head minus base, percentage points
    base_only: int  # correct in base, wrong in head (regressions)
    head_only: int  # wrong in base, correct in head (improvements)
    mcnemar_p: float  # exact, two-sided, on the discordant pairs
    ci_low: float | None  # paired bootstrap 95% interval of the delta
    ci_high: float | None
    excludes_zero: bool
    significant: bool  # see SIGNIFICANCE


class ArmComparison(msgspec.Struct, frozen=True, kw_only=True):
    overall: Delta
    by_category: dict[str, Delta]


class Flip(msgspec.Struct, frozen=True, kw_only=True):
    """One paired sample graded differently in the two runs."""

    suite: str
    trace_id: str
    probe_id: str
    category: str
    arm: str
    repeat: int
    direction: str  # "regressed" (correct -> wrong) or "improved" (wrong -> correct)
    base_outcome: str | None
    head_outcome: str | None
    base_answer: str
    head_answer: str


class RegressedProbe(msgspec.Struct, frozen=True, kw_only=True):
    """A probe of one arm correct in fewer paired repeats in head than in base."""

    suite: str
    trace_id: str
    probe_id: str
    category: str
    arm: str
    repeats: int  # paired repeats
    base_correct: int
    head_correct: int


class SlotCounts(msgspec.Struct, frozen=True, kw_only=True):
    """How the (suite, trace, probe, arm, repeat) slots of the two runs paired."""

    paired: int  # resolved in both: the only slots any figure counts
    only_base: int
    only_head: int
    excluded: int  # in both, but excluded (not valid) in at least one
    # Valid in both but unresolved in at least one (neither the scorer nor a judge gave a
    # right/wrong call): dropped from every figure, and said so.
    unresolved: int = 0


class RunOrigin(msgspec.Struct, frozen=True, kw_only=True):
    """Who ran a run and when, from its run manifest (``run.json``): each distinct value
    over the `doit units` invocations that wrote its units."""

    readers: list[str]  # "provider:model (effort e)"
    plan_digests: list[str]
    commits: list[str]
    dirty: bool | None  # True when any invocation ran from a dirty checkout
    started: str  # the first invocation's start (UTC)
    finished: str  # the last invocation's finish (UTC)
    invocations: int
    scorers: list[str]  # the scorer versions recorded ("unknown" before v2 manifests)


class RunSide(msgspec.Struct, frozen=True, kw_only=True):
    """One of the two runs."""

    name: str
    path: str  # the run's directory
    units: int
    grades: str  # which grades were used, and whether the current scorer reproduces them
    origin: RunOrigin | None  # None: the run has no run.json


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    """Two runs, paired sample by sample (see the module doc)."""

    schema: str = COMPARE_SCHEMA
    base: RunSide
    head: RunSide
    scorer: str  # "current" or "original"
    scorer_digest: str | None  # the current scorer's version (None for original grades)
    scorer_check: str  # how the two runs' grades were shown to come from one scorer
    probe_protocol: str
    significance: str
    slots: SlotCounts
    suites: list[str]
    arms: list[str]
    # [suite][arm]: every arm with at least one pair in that suite
    deltas: dict[str, dict[str, ArmComparison]]
    flips: list[Flip]
    regressed_probes: list[RegressedProbe]
