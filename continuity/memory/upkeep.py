"""One ledger upkeep operation: select, reserve, dispatch, validate, publish, settle.

`run_upkeep` is one pass of the ledger's upkeep at a boundary, in named steps:
eligibility (configuration skips, before anything is written) -> claim (releases rows a
dead stage left reserved; bootstrap or incremental) -> quota -> sources (admitted,
scanned, failing closed) -> selection -> reserve -> dispatch -> outcome -> settle. It
always returns a content-free `UpkeepReceipt`, even when a step after dispatch fails:
the receipt is what accounting reads.

The outcome classes and the receipt are `continuity.memory.upkeep_receipts`.

Failed output is never a successful extraction: nothing of it is published, it is never
repaired, and its offered spans stay offered (a content-free gap in the coverage).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from continuity.errors import (
    ContinuityError,
    HarnessError,
    LedgerError,
    ProviderError,
    ScriptExhausted,
)
from continuity.memory.ledger import (
    LIMITS,
    Generation,
    Ledger,
    merge,
    next_generation,
    parse_delta,
    render_tokens,
)
from continuity.memory.ledger_journal import OpKind, operation_id
from continuity.memory.ledger_prompt import extraction_request, fixed_tokens
from continuity.memory.ledger_sources import admit_sources, scan_sources
from continuity.memory.ledger_store import LedgerStore
from continuity.memory.retained import RetainedStore
from continuity.memory.upkeep_receipts import (
    OK_OUTCOMES,
    Capture,
    CoverageReceipt,
    UpkeepReceipt,
    generation_ref,
    offer_receipt,
    reason_class,
)
from continuity.memory.upkeep_selection import Offer, Span, caps_for, select_offer
from continuity.messages import ModelRequest, Usage
from continuity.providers.endpoint import CallReceipt
from continuity.providers.protocol import Completed, Provider, TextDelta, ToolCallEvent

__all__ = [
    "ENFORCING",
    "QUOTA",
    "SCAN_MAX_SOURCES",
    "UpkeepContext",
    "run_upkeep",
]

# The output-cap enforcement classes ``--require-request-cap`` admits (the extractor's
# request carries a cap its model side enforces; offline, the script is bounded).
ENFORCING = frozenset({"request_cap", "scripted_cap"})
# The confirmed reservations: one bootstrap, two incremental operations.
QUOTA = 3
SCAN_MAX_SOURCES = 65_536


@dataclass
class UpkeepContext:
    """What one stage's upkeep runs with. `admission` (real mode) raises when the
    invocation admits no more work; `observe` feeds it the input a call is charged
    (the larger of the reported and the conservative input)."""

    ledger_path: Path
    retained_path: Path
    session_id: str
    stage: int
    tag: str
    extractor: Provider | None
    extractor_model: str  # provider:model
    enforcement: str
    enabled: bool = True
    require_request_cap: bool = False
    context_window: int | None = None
    admission: Callable[[], None] | None = None
    observe: Callable[[Usage], None] | None = None
    capture: Callable[[Capture], None] | None = None
    calls: Callable[[], list[CallReceipt]] = field(default=lambda: [])


@dataclass
class _Pass:
    """The state one pass builds up; `receipt` turns it into the stage's receipt."""

    context: UpkeepContext
    store: LedgerStore | None = None
    op_id: str | None = None
    kind: OpKind | None = None
    state: Literal["none", "reserved", "dispatched", "settled", "released"] = "none"
    before: Generation | None = None
    after: Generation | None = None
    offer: Offer | None = None
    usage: Usage | None = None
    validation: str | None = None
    overrun: tuple[bool, bool] = (False, False)
    released: list[str] = field(default_factory=list)
    coverage: CoverageReceipt | None = None
    capture_error: str | None = None

    def receipt(self, outcome: str) -> UpkeepReceipt:
        caps = caps_for(self.kind) if self.kind is not None else None
        reserved = caps is not None and self.state != "none"
        return UpkeepReceipt(
            stage=self.context.stage,
            tag=self.context.tag,
            op_id=self.op_id,
            kind=self.kind if self.state != "none" else None,
            state=self.state,
            outcome=outcome,
            outcome_class=reason_class(outcome),
            enforcement=self.context.enforcement,
            input_reservation=caps.input_tokens if reserved and caps else 0,
            output_reservation=caps.output_tokens if reserved and caps else 0,
            offer=offer_receipt(self.offer) if self.offer is not None else None,
            coverage=self.coverage,
            usage=self.usage,
            input_overrun=self.overrun[0],
            output_overrun=self.overrun[1],
            validation=self.validation,
            generation_before=generation_ref(self.before) if self.before else None,
            generation_after=generation_ref(self.after or self.before) if self.before else None,
            released=self.released,
            calls=self.context.calls(),
            capture_error=self.capture_error,
        )


def _eligibility(context: UpkeepContext) -> str | None:
    """A configuration skip, decided before anything is written (no journal row)."""
    if not context.enabled:
        return "disabled"
    if context.extractor is None or not context.extractor_model:
        return "model_unavailable"
    if context.require_request_cap and context.enforcement not in ENFORCING:
        return "request_cap_unsupported"
    if not context.retained_path.is_file():
        return "history_unavailable"
    return None


def _writable(path: Path) -> bool:
    """Whether `path` (or, missing, the folder it would be made in) can be written, by
    its mode bits as well as by `os.access` (which says yes to root for any mode)."""
    target = path
    while not target.exists():
        target = target.parent
    mode = target.stat().st_mode
    return bool(mode & stat.S_IWUSR) and os.access(target, os.W_OK)


def _open_store(context: UpkeepContext) -> LedgerStore | str:
    """The stage's ledger store (created by the first stage); a skip reason when it
    cannot be written or belongs to another session."""
    path = context.ledger_path
    if not _writable(path) or (not path.exists() and not _writable(path.parent)):
        return "read_only"
    try:
        if path.exists():
            return LedgerStore.open(path, owner=context.session_id)
        return LedgerStore.create(path, owner=context.session_id)
    except LedgerError as exc:
        if exc.code == "ledger_unowned":
            return "unowned_store"
        raise


async def run_upkeep(context: UpkeepContext) -> UpkeepReceipt:
    """One stage's upkeep pass; see the module doc. Never raises for a failure after a
    journal row exists: the receipt says what happened (a corrupt store or source is
    the receipt's outcome, its code, an integrity failure)."""
    state = _Pass(context)
    skip = _eligibility(context)
    if skip is not None:
        return state.receipt(skip)
    try:
        opened = _open_store(context)
        if isinstance(opened, str):
            return state.receipt(opened)
        state.store = opened
        return state.receipt(await _operate(state))
    except ContinuityError as exc:
        return state.receipt(exc.code)
    finally:
        if state.store is not None:
            state.store.close()


async def _operate(state: _Pass) -> str:
    """Claim, read the sources, then select and dispatch: the outcome. The coverage
    receipt is taken after the pass, so it counts this pass's offer."""
    context, store = state.context, state.store
    assert store is not None
    state.before = store.head()
    kind, state.released = store.claim()
    state.kind = kind
    if sum(1 for op in store.operations() if op.consuming) >= QUOTA:
        return _released(state, "ledger_quota_budget")
    retained = RetainedStore(context.retained_path, readonly=True)
    try:
        oversized = admit_sources(store, retained)
        scan = scan_sources(store, retained, oversized=oversized)
    finally:
        retained.close()
    try:
        return await _select_and_dispatch(state, scan.spans, oversized, len(scan.descriptors))
    finally:
        state.coverage = _coverage(scan.spans, store, oversized)


async def _select_and_dispatch(
    state: _Pass, spans: Sequence[Span], oversized: int, sources: int
) -> str:
    context, store = state.context, state.store
    assert store is not None and state.before is not None and state.kind is not None
    if sources > SCAN_MAX_SOURCES:
        return _released(state, "ledger_scan_capacity")
    caps = caps_for(state.kind)
    if context.context_window is not None and (
        caps.input_tokens + caps.output_tokens > context.context_window
    ):
        return _released(state, "model_headroom")
    offered = store.offered_slots()
    offer = select_offer(spans, offered, caps, fixed_tokens=fixed_tokens(state.before))
    if isinstance(offer, str):
        reason = "source_oversized" if offer == "no_source" and oversized else offer
        return _released(state, reason)
    state.offer = offer
    op_id = _reserve(state, offer)
    if context.admission is not None:
        try:
            context.admission()
        except ContinuityError:
            store.release(op_id, "upkeep_dispatch_rejected")
            state.state = "released"
            return "upkeep_dispatch_rejected"
    return await _dispatch(state, offer)


def _reserve(state: _Pass, offer: Offer | None) -> str:
    """Reserve the stage's journal row: its offer (none for a released proof) and the
    confirmed reservation of its kind; return its op id."""
    store, context = state.store, state.context
    assert store is not None and state.before is not None and state.kind is not None
    caps = caps_for(state.kind)
    digest = offer.digest if offer is not None else ""
    state.op_id = operation_id(context.stage, context.tag, digest, state.before.id)
    store.reserve(
        op_id=state.op_id,
        stage=context.stage,
        tag=context.tag,
        kind=state.kind,
        input_reservation=caps.input_tokens,
        output_reservation=caps.output_tokens,
        offer=offer,
        generation_before=state.before.id,
    )
    state.state = "reserved"
    return state.op_id


def _released(state: _Pass, reason: str) -> str:
    """A proven non-invocation after the claim: one released row, consuming nothing."""
    op_id = _reserve(state, None)
    assert state.store is not None
    state.store.release(op_id, reason)
    state.state = "released"
    return reason


def _coverage(spans: Sequence[Span], store: LedgerStore, oversized: int) -> CoverageReceipt:
    offered = store.offered_slots()
    failed = {
        op.op_id for op in store.operations() if op.consuming and op.outcome not in OK_OUTCOMES
    }
    gap = sum(1 for (op_id,) in store.db.execute("SELECT op_id FROM offers") if op_id in failed)
    return CoverageReceipt(
        spans=len(spans),
        offered=len(offered),
        never_offered=len(spans) - len(offered & {s.slot for s in spans}),
        gap=gap,
        oversized_sources=oversized,
    )


def _provider_reason(error: HarnessError) -> str:
    if error.code == "provider_unavailable":
        return "unavailable"
    if error.code == "provider_stream_interrupted":
        return "aborted"
    if error.code == "provider_output_aborted":
        return "output_aborted"
    return "provider_output"


async def _dispatch(state: _Pass, offer: Offer) -> str:
    context, store = state.context, state.store
    assert store is not None and state.before is not None and state.op_id is not None
    assert context.extractor is not None and state.kind is not None
    caps = caps_for(state.kind)
    provider, _, model = context.extractor_model.partition(":")
    request = extraction_request(
        state.before,
        offer.spans,
        session_id=f"{context.session_id}:upkeep",
        provider=provider,
        model=model,
    )
    store.dispatch(state.op_id)
    state.state = "dispatched"
    try:
        done = await _complete_capped(context.extractor, request, caps.output_tokens)
    except (ProviderError, ScriptExhausted) as error:
        if context.observe is not None:  # unknown: charged its whole input reservation
            context.observe(Usage(input=caps.input_tokens))
        return _settle(state, _provider_reason(error), None, None)
    if done is None:  # the stream disagreed with its completed message: never trusted
        return _settle(state, "provider_output", None, None)
    completion = done.message.text
    if done.usage_reported:
        state.usage = done.usage
        state.overrun = (
            done.usage.total_input > caps.input_tokens,
            done.usage.output > caps.output_tokens,
        )
    elif context.observe is not None:
        # Unknown usage: charged its whole input reservation, never the part reported
        # on top of it (the call cache already observed that part: the larger wins).
        context.observe(Usage(input=max(0, caps.input_tokens - done.usage.total_input)))
    return _settle(state, *_outcome(state, completion, offer))


def _outcome(state: _Pass, completion: str, offer: Offer) -> tuple[str, str, Ledger | None]:
    """A completed extraction's outcome, its completion and the ledger it publishes."""
    input_over, output_over = state.overrun
    if output_over:
        return "output_overrun", completion, None
    if input_over:
        return "input_overrun", completion, None
    if not completion.strip():
        return "empty_output", completion, None
    if len(completion.encode("utf-8")) > LIMITS.payload_bytes:
        return "ledger_payload_budget", completion, None
    outcome, merged = _validate(state, completion, offer)
    return outcome, completion, merged


# Streamed output past the cap (four characters a token, with this much slack) is
# aborted client-side: a stream abort, which cannot stop remote work already billed.
_ABORT_SLACK_CHARS = 1_024


async def _complete_capped(provider: Provider, request: ModelRequest, cap: int) -> Completed | None:
    """The extractor's completed message, its stream aborted once its text runs past
    the output cap; None for a stream whose deltas disagree with its completed message
    (or that ended without one).

    Raises:
        ProviderError: what the provider raised; ``provider_output_aborted`` for an
            aborted stream.
    """
    text: list[str] = []
    calls = []
    done: Completed | None = None
    size = 0
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            text.append(event.text)
            size += len(event.text)
            if size > cap * 4 + _ABORT_SLACK_CHARS:
                raise ProviderError(
                    f"the extraction streamed past its {cap:,}-token output cap",
                    code="provider_output_aborted",
                    location=provider.name,
                )
        elif isinstance(event, ToolCallEvent):
            calls.append(event.call)
        else:
            done = event
    if (
        done is None
        or "".join(text) != done.message.text
        or tuple(calls) != done.message.tool_calls
    ):
        return None
    return done


def _validate(state: _Pass, completion: str, offer: Offer) -> tuple[str, Ledger | None]:
    """The delta's outcome and the merged ledger it would publish (None: nothing)."""
    assert state.before is not None
    try:
        delta = parse_delta(completion, {s.ordinal for s in offer.spans}, state.before.ledger)
    except LedgerError as exc:
        state.validation = exc.location
        return "validation_or_publication", None
    if not delta.entries:
        return "analysis_only", None
    merged = merge(state.before.ledger, delta)
    candidate = next_generation(state.before, merged, state.op_id or "")
    if len(merged.entries) > LIMITS.entries:
        return "ledger_aggregate_capacity", None
    if render_tokens(candidate) > LIMITS.render_tokens:
        return "ledger_render_budget", None
    if candidate.number >= LIMITS.generations:
        return "ledger_lineage_budget", None
    return "published", merged


def _settle(state: _Pass, outcome: str, completion: str | None, merged: Ledger | None) -> str:
    store, context = state.store, state.context
    assert store is not None and state.op_id is not None
    state.after = store.settle(state.op_id, outcome=outcome, usage=state.usage, publish=merged)
    state.state = "settled"
    if context.capture is not None:
        capture = Capture(
            stage=context.stage,
            outcome=outcome,
            completion=completion,
            validation=state.validation,
            ledger=state.after.ledger if outcome in OK_OUTCOMES else None,
        )
        try:
            context.capture(capture)
        except LedgerError as exc:  # a diagnostic that failed never changes the outcome
            state.capture_error = exc.code
    return outcome
