"""Workload and list-price estimates for a plan, with no build, credential or network.

Every planned model call is listed with its input and output token estimate. The
estimates come from the traces themselves (Pi's ``ceil(chars / 4)``) and the arms'
boundaries; where the real size depends on the model, a labelled assumption is used:

- a reader answer is 300 output tokens; a compaction summary 1,200; a judge verdict 50
  (one per planned probe answer when the plan has a judge);
- a judge call's input is its real request with an answer of the assumed 300 tokens:
  ``ceil(chars / 4)`` of the judge's system prompt plus that of the judge prompt built for
  the probe (its question and the reference written from its expectation, by the
  builder `ProviderJudge` sends), plus the 300 answer tokens;
- a post-compaction context is the keep-recent tail plus a 1,500-token summary;
- every probe of a compacting arm sends its own final summary request; in real plans
  ``compaction-2`` adds one mid-trace summary per repeat and trace (half the trace);
- a ConversationHistory arm plans three reader rounds (search, get, answer), each
  adding 2,048 tokens (one 8 KiB page);
- the pack arm adds the full 8,000-token pack to every reader request;
- the ledger arm adds the pack and a ledger at its full 6,000-token render budget to
  every reader request, and plans three extractions per trace and repeat (never per
  probe), each at its explicit reservation: a 128k-token bootstrap and two 64k
  incremental inputs, each with 4,096 output tokens, on the plan's extraction model.

`completions` counts one completion per answer turn, summary, extraction and verdict
(the seed's count); `answer_calls` also counts every ConversationHistory round.

Two prices are computed from the catalog: an **upper bound** with no prompt cache, and an
**expected** value where the forks of one checkpoint reuse its cached prefix (the first
probe of a unit writes the prefix to the cache, the others read it). A call whose price
is unknown is counted as unpriced, never as free.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from continuity.arms import Arm, arm_config, parse_arms
from continuity.errors import UsageError
from continuity.lookup.policy import LookupPolicy
from continuity.messages import Usage
from continuity.plan.ledger_plan import LedgerPlan
from continuity.plan.plan import LookupPlan, Plan
from continuity.plan.pricing import Catalog, call_cost
from continuity.probes.judge import JUDGE_SYSTEM, judge_prompt
from continuity.probes.protocol import probe_turn_text
from continuity.traces.bounds import (
    RESEED_TEXT_MESSAGES,
    SUMMARY_RESULT_CHARS,
    is_text_message,
    projection_indexes,
    retained_bytes,
    turn_tokens,
)
from continuity.traces.schema import Probe, ToolResult, Trace, iter_turns

if TYPE_CHECKING:
    from continuity.lookup.sizing import Sizing
    from continuity.plan.holdout_plan import HoldoutChoice
    from continuity.store import Store

    # A holdout plan's traces: the store they are in and the verified choice.
    HoldoutTraces = tuple[Store, HoldoutChoice]

__all__ = [
    "ASSUMPTIONS",
    "HISTOGRAM_BINS",
    "LookupSizing",
    "PlannedCall",
    "Price",
    "Workload",
    "histogram",
    "judge_input_tokens",
    "load_plan_traces",
    "lookup_sizing",
    "price_calls",
    "trace_shape",
    "workload",
]

ASSUMPTIONS = {
    "answer_output_tokens": 300,
    "summary_output_tokens": 1_200,
    "judge_output_tokens": 50,
    "summary_tokens": 1_500,
    "history_rounds": 3,
    "tokens_per_history_round": 2_048,
    "pack_tokens": 8_000,
    "ledger_tokens": 6_000,
    "system_tokens": 60,
}
HISTOGRAM_BINS = (8_000, 32_000, 64_000, 128_000, 200_000, 272_000)


class PlannedCall(msgspec.Struct, frozen=True):
    role: Literal["answer", "summary", "judge", "upkeep"]
    model: str
    input_tokens: int
    cached_tokens: int  # the part a warm prefix cache would serve (expected case)
    cache_write_tokens: int  # the part this call writes to the cache (expected case)
    output_tokens: int


class Workload(msgspec.Struct, frozen=True, kw_only=True):
    units: int
    live_turns: int
    answer_calls: int
    compaction_calls: int
    judge_calls: int
    planned_input_tokens: int
    calls: list[PlannedCall]
    extraction_calls: int = 0
    completions: int = 0


class Price(msgspec.Struct, frozen=True):
    known: float
    unpriced_calls: int

    @property
    def complete(self) -> bool:
        return self.unpriced_calls == 0


def load_plan_traces(
    plan: Plan, fixtures: Path | None = None, *, holdout: HoldoutTraces | None = None
) -> list[Trace]:
    """The plan's traces, generated or read from fixtures (validated, never stored); a
    holdout plan's selected traces from the store (`holdout`: the store and the verified
    choice of `continuity.plan.holdout_plan.holdout_choice`).

    Raises:
        UsageError: ``plan_invalid`` for a holdout plan without its choice.
    """
    from continuity.traces.generator import generate_trace
    from continuity.traces.keys import suite_specs
    from continuity.traces.validate import load_trace, validate_trace

    if plan.holdout is not None:
        if holdout is None:
            raise UsageError(
                "a holdout plan's traces come from its frozen source",
                code="plan_invalid",
                location="--suite",
            )
        store, choice = holdout
        return [load_trace(store.get_blob(t.digest), source=t.trace_id) for t in choice.traces]
    traces = []
    for spec in suite_specs(plan.suite, plan.seeds, fixtures=fixtures):
        if spec.source is not None:
            traces.append(load_trace(Path(spec.source).read_bytes(), source=spec.source))
        else:
            assert spec.seed is not None
            trace = generate_trace(spec.seed, distractors=plan.suite == "hard-distractors")
            validate_trace(trace, source=trace.trace_id)
            traces.append(trace)
    return traces


def trace_shape(trace: Trace) -> dict[str, int]:
    turns = [t for _, _, t in iter_turns(trace)]
    records = [t for t in turns if isinstance(t, ToolResult)]
    texts = [t for t in turns if is_text_message(t)]
    kept = projection_indexes([retained_bytes(r) for r in records])
    serialized = sum(
        -(-min(len(t.output), SUMMARY_RESULT_CHARS) // 4)
        if isinstance(t, ToolResult)
        else turn_tokens(t)
        for t in turns
    )
    return {
        "full": sum(turn_tokens(t) for t in turns),
        "reseed": sum(turn_tokens(t) for t in texts[-RESEED_TEXT_MESSAGES:])
        + sum(-(-retained_bytes(records[i]) // 4) for i in kept)
        + 100,
        "summary_input": serialized + 300,
    }


def _mid_trace_call(shape: dict[str, int], reader: str) -> PlannedCall:
    """(d)'s mid-trace summary request: about half the trace, serialized for the summary
    (tool results cut to their heads and tails), with nothing cached."""
    summary_input = shape["summary_input"] // 2 + 300
    return PlannedCall("summary", reader, summary_input, 0, 0, ASSUMPTIONS["summary_output_tokens"])


def _arm_calls(
    arm: Arm, shape: dict[str, int], probe_tokens: int, reader: str, first: bool
) -> list[PlannedCall]:
    a = ASSUMPTIONS
    policy = arm_config(arm).runtime.compaction
    system = a["system_tokens"]
    calls: list[PlannedCall] = []
    switched = arm.boundary in ("model_change", "restart_switch_compact")
    context = shape["reseed"] if switched else shape["full"]
    compacts = arm.boundary in (
        "compaction",
        "compaction_mid_and_probe",
        "ceiling",
        "restart_switch_compact",
    )
    if arm.boundary == "compaction_mid_and_probe":
        context = a["summary_tokens"] + shape["full"] // 2
    if compacts:
        summary_input = (
            shape["summary_input"] if arm.boundary != "restart_switch_compact" else context + 300
        )
        if arm.boundary == "compaction_mid_and_probe":
            summary_input = context + 300
        # Every probe compacts its own copy of the same context (one summary per probe,
        # the confound control): a provider's prompt cache still serves the repeated prefix.
        calls.append(
            PlannedCall(
                "summary",
                reader,
                summary_input,
                0 if first else summary_input,
                summary_input if first else 0,
                a["summary_output_tokens"],
            )
        )
        context = policy.keep_recent_tokens + a["summary_tokens"]
    if arm.pack:
        context += a["pack_tokens"]
    if arm.ledger:
        context += a["ledger_tokens"]
    prefix = system + context
    rounds = a["history_rounds"] if arm.history_tool else 1
    previous = 0
    for round_index in range(rounds):
        total = prefix + probe_tokens + round_index * a["tokens_per_history_round"]
        if round_index == 0:
            cached = 0 if first else prefix
            written = prefix if first else 0
        else:
            cached, written = previous, total - previous
        calls.append(
            PlannedCall("answer", reader, total, cached, written, a["answer_output_tokens"])
        )
        previous = total
    return calls


def judge_input_tokens(probe: Probe) -> int:
    """A judge call's input estimate for `probe`: its system prompt and the judge prompt
    built for the probe's question and expectation (each ``ceil(chars / 4)``), plus an
    answer of the assumed reader-answer size. Never below the real request's
    ``ceil(chars / 4)`` when the answer is at most that size."""
    prompt = judge_prompt(probe.text, probe.expectation, "")
    return -(-len(JUDGE_SYSTEM) // 4) + -(-len(prompt) // 4) + ASSUMPTIONS["answer_output_tokens"]


def _judge_call(probe: Probe, judge: str) -> PlannedCall:
    return PlannedCall(
        "judge", judge, judge_input_tokens(probe), 0, 0, ASSUMPTIONS["judge_output_tokens"]
    )


def _agent_calls(plan: Plan, traces: Sequence[Trace]) -> list[PlannedCall]:
    """An outside agent's plan: its forwarded probe calls per sample (its replay is
    scripted, never billed). A black box's context is unknown, so each call is
    estimated as the whole conversation, an agent system prompt of the assumed size and
    the probe, nothing cached: an upper-end estimate for an agent that keeps everything
    (the ledger's planned live turns still cap the calls a sample may make).

    - ``switch``: its probe call goes to the model the agent switches to
      (``plan.switch_model``; offline the reader).
    - ``continuity-store``: the reader looks records up first, so its probe turn is the
      reference store arm's expected rounds (``history_rounds``, each
      ``tokens_per_history_round`` longer than the one before). It is not the bound: a
      reader may send up to the lookup policy's call budget plus two requests a sample
      (`continuity.agents.readers`), and the cost cap holds what those spend.
    - ``compact`` adds the agent's own summary request per sample: the whole
      conversation as the probe's call sees it (an agent may send its full history, tool
      results uncut) plus a summary prompt, nothing cached."""
    a = ASSUMPTIONS
    calls = []
    for trace in traces:
        shape = trace_shape(trace)
        context = a["system_tokens"] + shape["full"]  # once per trace
        summary = PlannedCall(
            "summary", plan.reader, context + 300, 0, 0, a["summary_output_tokens"]
        )
        for probe in trace.probes[: plan.probe_limit] if plan.probe_limit else trace.probes:
            total = context + -(-len(probe.text) // 4)
            for arm in plan.arms:
                model = plan.switch_model if arm == "agent-switch" and plan.switch_model else None
                rounds = a["history_rounds"] if arm == "agent-continuity-store" else 1
                sample = [
                    PlannedCall(
                        "answer",
                        model or plan.reader,
                        total + r * a["tokens_per_history_round"],
                        0,
                        0,
                        a["answer_output_tokens"],
                    )
                    for r in range(rounds)
                ]
                sample += [summary] if arm == "agent-compact" else []
                calls += sample * plan.repeats
    return calls


def workload(plan: Plan, traces: Sequence[Trace] | None = None) -> Workload:
    """Every call the plan makes, estimated. Deterministic; no I/O beyond the traces."""
    traces = list(traces) if traces is not None else load_plan_traces(plan)
    if plan.agent is not None:
        agent = _agent_calls(plan, traces)
        answers = sum(c.role == "answer" for c in agent)
        samples = sum(
            len(t.probes[: plan.probe_limit] if plan.probe_limit else t.probes) for t in traces
        )
        return Workload(
            units=len(traces) * len(plan.arms) * plan.repeats,
            live_turns=samples * len(plan.arms) * plan.repeats,
            answer_calls=answers,
            compaction_calls=len(agent) - answers,
            judge_calls=0,
            planned_input_tokens=sum(c.input_tokens for c in agent),
            calls=agent,
            extraction_calls=0,
            completions=len(agent),
        )
    calls: list[PlannedCall] = []
    units = live = 0
    for trace in traces:
        shape = trace_shape(trace)
        probes = list(trace.probes[: plan.probe_limit] if plan.probe_limit else trace.probes)
        for arm in parse_arms(",".join(plan.arms), family=trace.family, probe_mode=plan.probe_mode):
            for _ in range(plan.repeats):
                units += 1
                if arm.ledger and plan.ledger is not None:
                    calls += _extraction_calls(plan.ledger)
                if plan.mode == "real" and arm.boundary == "compaction_mid_and_probe":
                    # (d)'s promptless mid-trace compaction: one real summary per repeat,
                    # shared by that repeat's probes (built into its checkpoint).
                    calls.append(_mid_trace_call(shape, plan.reader))
                for index, probe in enumerate(probes):
                    live += 1
                    calls += _arm_calls(
                        arm,
                        shape,
                        -(
                            -len(probe_turn_text(probe.text, probe.category)) // 4
                        ),  # the turn the reader gets
                        plan.reader,
                        first=index == 0,
                    )
                    if plan.judge:  # the judge grades every answer
                        calls.append(_judge_call(probe, plan.judge))
    roles = Counter(c.role for c in calls)
    return Workload(
        units=units,
        live_turns=live,
        answer_calls=roles["answer"],
        compaction_calls=roles["summary"],
        judge_calls=roles["judge"],
        planned_input_tokens=sum(c.input_tokens for c in calls),
        calls=calls,
        extraction_calls=roles["upkeep"],
        completions=live + roles["summary"] + roles["upkeep"] + roles["judge"],
    )


def _extraction_calls(ledger: LedgerPlan) -> list[PlannedCall]:
    """The ledger arm's three extractions of one trace and repeat, each at its explicit
    reservation (nothing cached: every extraction sends a new selection)."""
    return [
        PlannedCall("upkeep", ledger.extraction_model, r.input_tokens, 0, 0, r.output_tokens)
        for r in ledger.reservations
    ]


def price_calls(
    catalog: Catalog,
    calls: Iterable[PlannedCall],
    *,
    cache: bool,
    model: str | None = None,
    cache_fraction: float | None = None,
) -> Price:
    """Total list price. ``cache=False``: every input token at the input rate (upper
    bound). ``cache=True``: the planned prefix reuse (expected), or, with
    `cache_fraction`, that share of every call's input read from cache (sensitivity).
    `model` replaces the reader and judge model (profiles)."""
    known = 0.0
    unpriced = 0
    for call in calls:
        name = model or call.model
        if not cache:
            usage = Usage(input=call.input_tokens, output=call.output_tokens)
        elif cache_fraction is not None:
            cached = int(call.input_tokens * cache_fraction)
            usage = Usage(
                input=call.input_tokens - cached, cache_read=cached, output=call.output_tokens
            )
        else:
            usage = Usage(
                input=call.input_tokens - call.cached_tokens,
                cache_read=call.cached_tokens,
                cache_write=call.cache_write_tokens,
                output=call.output_tokens,
            )
        cost = call_cost(catalog, name, usage)
        if cost is None:
            unpriced += 1
        else:
            known += cost
    return Price(known, unpriced)


def histogram(calls: Iterable[PlannedCall]) -> dict[str, int]:
    """Planned calls by input size."""
    labels = [f"<= {b // 1000}k" for b in HISTOGRAM_BINS] + [f"> {HISTOGRAM_BINS[-1] // 1000}k"]
    counts = dict.fromkeys(labels, 0)
    for call in calls:
        index = next(
            (i for i, b in enumerate(HISTOGRAM_BINS) if call.input_tokens <= b), len(HISTOGRAM_BINS)
        )
        counts[labels[index]] += 1
    return counts


class LookupSizing(msgspec.Struct, frozen=True, kw_only=True):
    """What a lookup-allowed-v1 plan will run: offline mechanics, never billed."""

    binding: str
    reader: str  # the binding's provider:model (scripted; never called)
    call_budget: int
    byte_budget: int
    max_rounds: int  # the probe turn's ceiling: call budget + 2
    slots: dict[str, int]  # planned slots by disposition
    runnable: int  # feasible and unannotated slots (each one probe child)


def lookup_sizing(
    plan: LookupPlan, policy: LookupPolicy | Sizing, traces: Sequence[Trace] | None = None
) -> LookupSizing:
    """Every planned slot (repeat x trace x arm x probe) dispositioned by `policy`, as a
    lookup run will before anything runs."""
    from continuity.lookup.reader import binding_models
    from continuity.lookup.sources import sources_for

    traces = list(traces) if traces is not None else load_plan_traces(plan)
    slots: Counter[str] = Counter()
    for trace in traces:
        probes = list(trace.probes[: plan.probe_limit] if plan.probe_limit else trace.probes)
        for arm in parse_arms(",".join(plan.arms), family=trace.family, probe_mode=plan.probe_mode):
            for probe in probes:
                annotated = bool(sources_for(trace, probe))
                disposition = policy.disposition(trace.trace_id, arm.id, probe.probe_id, annotated)
                slots[disposition] += plan.repeats
    return LookupSizing(
        binding=plan.reader_binding,
        reader=binding_models(plan.reader_binding)[0],
        call_budget=plan.call_budget,
        byte_budget=plan.byte_budget,
        max_rounds=plan.call_budget + 2,
        slots=dict(sorted(slots.items())),
        runnable=slots["feasible"] + slots["unannotated"],
    )
