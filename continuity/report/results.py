"""The results document of a run (``results.json``) and the aggregate's refusal.

Aggregation (continuity.report.aggregate) builds a `Results` from the statistics and
tables that compute its parts; rendering (continuity.report.render) reads one. Both
import this module, never each other.

Every part is a struct whose fields are declared in the order ``results.json`` has
always written them (msgspec encodes a struct's fields in declaration order), so the
document's bytes do not depend on how it is built. Tables keyed ``[suite][arm]`` never
mix trace families; the keys of the innermost dicts are names (categories, outcomes,
sample classes, pressure figures) in the report's order.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from continuity.messages import Usage
from continuity.providers.attempts import AttemptSummary
from continuity.runner.manifest import RunManifest
from continuity.sampling.context import ReaderContext

__all__ = [
    "AccuracyCell",
    "AgentBanner",
    "Agreement",
    "AnswerLineUse",
    "CategoryDelta",
    "ChangedOutcome",
    "Disagreement",
    "DuplicateOccurrence",
    "FlipRate",
    "FreeRecallCell",
    "JudgeResults",
    "LookupArm",
    "Paired",
    "PressureCell",
    "Rate",
    "RepeatAccuracy",
    "ReportContext",
    "Results",
    "Sample",
    "ScorerChange",
    "ScorerSection",
    "Spend",
    "SuiteAgreement",
    "ToolUse",
    "ToolUseSplit",
    "UpkeepSpend",
]


# -- samples (continuity.report.samples, continuity.report.paired) ---------------------


class RepeatAccuracy(msgspec.Struct, frozen=True, kw_only=True):
    """One repeat's share of an accuracy cell."""

    repeat: int
    correct: int
    n: int
    accuracy: float | None


class AccuracyCell(msgspec.Struct, frozen=True, kw_only=True):
    """Mean of per-repeat accuracies over resolved samples (valid samples with a
    right/wrong call), its SD and split, and the paired delta vs native over the samples
    both resolved (continuity.report.paired; None and 0 without native in the suite).

    ``n`` counts resolved samples; ``valid`` counts every valid sample, unresolved ones
    too, so ``coverage`` is n ÷ valid (None without a valid sample); ``judge_decided``
    counts the resolved samples whose call is the judge's, not the scorer's."""

    mean: float | None
    sd: float | None
    n: int
    per_repeat: list[RepeatAccuracy]
    delta_pp: float | None = None
    delta_n: int = 0
    valid: int = 0
    coverage: float | None = None
    judge_decided: int = 0


class FlipRate(msgspec.Struct, frozen=True, kw_only=True):
    probes: int  # probes answered validly in two or more repeats
    flips: int
    rate: float | None


class ToolUseSplit(msgspec.Struct, frozen=True, kw_only=True):
    """Call rate and accuracy with and without a ConversationHistory call."""

    samples: int
    with_call: int
    call_rate: float | None
    accuracy_with_call: float | None
    accuracy_without_call: float | None


class ToolUse(ToolUseSplit, frozen=True, kw_only=True):
    by_category: dict[str, ToolUseSplit]


class PressureCell(msgspec.Struct, frozen=True, kw_only=True):
    """The observed range of one figure an arm's pressure rule checks."""

    figure: str
    threshold: int
    min: int | None
    max: int | None
    n: int


class FreeRecallCell(msgspec.Struct, frozen=True, kw_only=True):
    """Free recall (an imported corpus's human-written answers) for one arm: the
    scorer's accuracy over valid samples and LoCoMo's own token-F1 beside it, never in
    place of it (`token_f1`: the mean over the samples that carry one)."""

    n: int
    correct: int
    accuracy: float | None
    token_f1: float | None
    with_f1: int


class AnswerLineUse(msgspec.Struct, frozen=True, kw_only=True):
    """How an arm's valid value-probe replies ended (probe protocol v3 asks each for a
    final ``ANSWER:`` line; `continuity.probes.answer_line`): with a value, with
    ``UNKNOWN``, with lines that disagree, or with none, so the scorer read the free text.
    ``missing_rate`` is missing ÷ samples (None without a sample)."""

    samples: int
    value: int
    unknown: int
    conflict: int
    missing: int
    missing_rate: float | None


class CategoryDelta(msgspec.Struct, frozen=True, kw_only=True):
    pairs: int
    delta_pp: float | None


class Paired(msgspec.Struct, frozen=True, kw_only=True):
    """An arm against native over the samples both answered validly."""

    pairs: int
    both_correct: int
    arm_only: int
    native_only: int
    both_wrong: int
    mcnemar_p: float
    delta_pp: float | None
    ci_low: float | None
    ci_high: float | None
    by_category: dict[str, CategoryDelta]


# -- judge (continuity.report.judging) -------------------------------------------------


class Agreement(msgspec.Struct, frozen=True, kw_only=True):
    pairs: int
    agree: int
    agreement: float | None
    judge_pass: int
    proxy_pass: int


class SuiteAgreement(msgspec.Struct, frozen=True, kw_only=True):
    overall: Agreement
    unreadable: int
    by_category: dict[str, Agreement]


class Disagreement(msgspec.Struct, frozen=True, kw_only=True):
    unit: str
    suite: str
    probe_id: str
    category: str
    answer: str
    scorer_correct: bool
    scorer_outcome: str | None
    judge_passed: bool
    judge_outcome: str | None
    reason: str


class JudgeResults(msgspec.Struct, frozen=True, kw_only=True):
    pairs: int
    unreadable: int
    by_suite: dict[str, SuiteAgreement]
    disagreements: list[Disagreement]


# -- spend (continuity.report.spend) ---------------------------------------------------


class Spend(msgspec.Struct, frozen=True, kw_only=True):
    """An arm's spend, or (under the key ``judge``) the judge's. An arm's has the suites
    its samples came from, the compaction subtotal and its live turns; the judge's has
    its verdict count (``calls``). What a row does not have is left out of the document."""

    suites: list[str] | UnsetType = UNSET
    calls: int | UnsetType = UNSET
    input: int
    cache_read: int
    cache_write: int
    output: int
    compaction_input: int | UnsetType = UNSET
    compaction_cache_read: int | UnsetType = UNSET
    compaction_cache_write: int | UnsetType = UNSET
    compaction_output: int | UnsetType = UNSET
    live_turns: int | UnsetType = UNSET
    model_calls: int
    cost_usd: float | None
    cost_known_usd: float
    unpriced_calls: int
    # The ledger arm: its extractions' known tokens, an "of which" of the totals (the
    # conservative charges are in `Results.upkeep`).
    upkeep_input: int | UnsetType = UNSET
    upkeep_cache_read: int | UnsetType = UNSET
    upkeep_output: int | UnsetType = UNSET
    # Distinct calls whose server reported no usage: the token counts leave them out
    # (unknown, not zero). Left out of the document when every call reported.
    unreported_calls: int | UnsetType = UNSET


# -- ledger upkeep (continuity.report.upkeep) ------------------------------------------


class UpkeepSpend(msgspec.Struct, frozen=True, kw_only=True):
    """The ledger arm's preparations: known and conservative charges kept apart (see
    `continuity.report.upkeep`). Costs are None offline (not billed) or when a call's
    price is unknown; `priced` says whether any unit was a real one."""

    units: int
    valid_preparations: int
    invalid_preparations: int
    stages: int
    dispatched: int
    zero_dispatch: int
    released: int
    known_calls: int
    known_input: int
    known_cache_read: int
    known_output: int
    estimated_cost_usd: float | None
    unpriced_known_calls: int
    conservative_calls: int
    conservative_input_tokens: int
    conservative_output_tokens: int
    conservative_cost_usd: float | None
    unpriced_conservative_calls: int
    observed_input_tokens: int
    d6_input_overruns: int
    d6_output_overruns: int
    outcomes: dict[str, int]
    degradations: dict[str, int]
    integrity: dict[str, int]
    priced: bool
    spans: int
    offered_spans: int
    gap_spans: int


# -- lookup (continuity.report.lookup) -------------------------------------------------


class Rate(msgspec.Struct, frozen=True, kw_only=True):
    correct: int
    n: int
    rate: float | None


class DuplicateOccurrence(msgspec.Struct, frozen=True, kw_only=True):
    repeat: int
    trace_id: str
    probe_id: str
    occurrences: int


class LookupArm(msgspec.Struct, frozen=True, kw_only=True):
    """One arm's lookup figures (continuity.report.lookup)."""

    readers: list[str]
    slots_present: int
    unstarted: int
    failed: int
    inventory_infeasible: int
    infeasible_by_class: dict[str, int]
    unknown_provenance: int
    source_availability: dict[str, int]
    reference_feasibility: dict[str, int]
    exact: Rate
    exact_with_failures: Rate
    failed_feasible: int
    witnessed_recovery: int
    calls: int
    bytes: int
    mean_calls: float | None
    mean_bytes: float | None
    mean_latency_s: float | None
    latency_unknown: int
    exhausted: dict[str, int]
    reader_budget_stops: int
    slots_planned: int
    missing: int
    blocked: int
    duplicate: int
    duplicate_occurrences: list[DuplicateOccurrence]


# -- scorer (continuity.report.scores) -------------------------------------------------


class ChangedOutcome(msgspec.Struct, frozen=True, kw_only=True):
    repeat: int
    trace_id: str
    probe_id: str
    original: str | None
    current: str | None


class ScorerChange(msgspec.Struct, frozen=True, kw_only=True):
    """One suite and arm under the original grades and the current scorer."""

    n: int
    original_accuracy: float | None
    current_accuracy: float | None
    changed: list[ChangedOutcome]


class ScorerSection(msgspec.Struct, frozen=True, kw_only=True):
    """Which grades produced the numbers and, for the current scorer, the change
    against the original grades (``changes[suite][arm]``)."""

    scorer: str
    digest: str | None
    description: str
    changes: dict[str, dict[str, ScorerChange]]


# -- the document ----------------------------------------------------------------------


class AgentBanner(msgspec.Struct, frozen=True, kw_only=True):
    """A run of outside agents: who they are and what their boundaries showed (the
    report's fixed banner, continuity.agents.identity.BANNER)."""

    agents: list[str]
    total: int
    verified: int
    contradicted: int
    not_crossed: int
    copies_unverified: int
    replay_failed: int = 0
    unsandboxed: int = 0  # samples whose adapter ran without the sandbox
    not_from_model: int = 0  # answer_not_from_model samples (excluded)
    declared: int = 0  # of those, by adapters that declare post_processes


class Results(msgspec.Struct, frozen=True, kw_only=True):
    """The run's results. Tables keyed ``[suite][arm]`` never mix trace families; spend
    (accounting, not a comparison) and the lookup report are per arm."""

    schema: str = "continuity-results-v2"
    run: str
    units: int
    arms: list[str]
    suites: list[str]
    repeats: list[int]
    categories: list[str]
    probe_protocols: list[str]
    protocol_note: str | None
    accuracy: dict[str, dict[str, dict[str, AccuracyCell]]]
    flip_rate: dict[str, dict[str, FlipRate]]
    outcomes: dict[str, dict[str, dict[str, int]]]
    tool_use: dict[str, dict[str, ToolUse]]
    excluded: dict[str, dict[str, dict[str, int]]]
    availability: dict[str, dict[str, dict[str, int]]]
    pressure: dict[str, dict[str, dict[str, PressureCell]]]
    judge: JudgeResults
    spend: dict[str, Spend]
    paired: dict[str, dict[str, Paired]]
    lookup: dict[str, LookupArm] = {}
    # Which grades produced the numbers (continuity.report.scores.scorer_section); None
    # until the aggregate has chosen them.
    scorer: ScorerSection | None = None
    # The ledger arm's upkeep, by arm (continuity.report.upkeep); left out without it.
    upkeep: dict[str, UpkeepSpend] | UnsetType = UNSET
    # Free recall ``[suite][arm]`` with LoCoMo's token-F1 beside the scorer's accuracy;
    # left out of runs without free-recall samples.
    free_recall: dict[str, dict[str, FreeRecallCell]] | UnsetType = UNSET
    # Outside agents' units (continuity.runner.agent_units); left out of other runs.
    agent: AgentBanner | UnsetType = UNSET
    # ``[suite][arm]``: how value-probe replies ended (answer line or not); left out of
    # runs without a valid value-probe sample.
    answer_line: dict[str, dict[str, AnswerLineUse]] | UnsetType = UNSET
    # A real run's HTTP sends, from its attempt log (continuity.providers.attempts).
    sends: AttemptSummary | UnsetType = UNSET
    # A real run whose reader no price list knows, on a server on this machine: its
    # reader and base URL (the report says what such a run shows, and what it does not).
    local_model: str | UnsetType = UNSET


# -- the report's context (continuity.report.drilldown): never in results.json ---------


class Sample(msgspec.Struct, frozen=True, kw_only=True):
    """One probe sample as the report's drill-down shows it, graded by the report's
    scorer. ``anchor`` is its id in report.html; ``path`` its unit file, relative to
    the run directory. Strings come from traces and answers: the renderer escapes them."""

    anchor: str
    suite: str
    arm: str
    trace_id: str
    repeat: int
    probe_id: str
    category: str
    question: str
    expected: str
    answer: str
    status: str
    reasons: list[str]
    outcome: str | None
    correct: bool | None
    score_reason: str | None
    fact: str | None
    superseded_present: bool | None
    loss: str | None
    boundary: str
    judge: str | None
    path: str
    # "judge" when the judge decided a sample the scorer left unresolved.
    decided_by: str | None = None
    # An outside agent's compaction: the summary texts its model wrote (reader-visible).
    agent_summaries: list[str] = msgspec.field(default_factory=list)
    # The model that answered (from the sample's evidence; None without evidence), the
    # tokens its probe's calls used, those of the compaction it made, and how many
    # ConversationHistory calls it made (exports show them; report.html does not yet).
    reader_model: str | None = None
    usage: Usage = Usage()
    compaction_usage: Usage = Usage()
    history_calls: int = 0
    # A real sample's model calls (not the judge's), as the catalog model its reader
    # bills as ("" offline): what the spend table prices, per sample.
    billed_as: str = ""
    billed_calls: list[Usage] = msgspec.field(default_factory=list)
    # What the reader saw at the probe (None: the unit kept none, or the store no longer
    # holds it, `seen_note` says which) and the values the drill-down highlights in it:
    # the expected value(s) and any superseded ones (evaluator-side, never the reader's).
    seen: ReaderContext | None = None
    seen_note: str = ""
    # The digest of the stored reader-context tree `seen` was read from (None when the
    # unit kept none): what exports name it by.
    context_digest: str | None = None
    needles: list[str] = msgspec.field(default_factory=list)
    superseded: list[str] = msgspec.field(default_factory=list)


class ReportContext(msgspec.Struct, frozen=True, kw_only=True):
    """What report.html shows beside `Results`: the run manifest (None for a run
    without one), the models the units' evidence names, and every sample."""

    manifest: RunManifest | None
    reader_models: list[str]
    history_models: list[str]
    samples: list[Sample]
