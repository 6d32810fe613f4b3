"""Crossing an arm's boundary in the probe child, over a checkpoint restored at its
original path.

`probe_setup` fixes what the request and the arm decide before anything runs (the
harness config, the reader's model, the system prompt with the lookup soul). `restore`
reopens the checkpoint's session, histories and replay receipt. `cross_boundary` then
applies the arm's boundary operations in order (restart marker, model-change reseed,
pre-turn compaction under the arm's policy), checks them against what the durable
session recorded, opens the retained store for the arms that keep one, and builds the
continuity pack for the pack arm and the committed ledger for the ledger arm.
`MidRunCompaction` compacts between the reader's
requests, the way the live harness would.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from continuity.arms import ARMS, Arm, arm_config, models_patch
from continuity.errors import HarnessError, HistoryError, LedgerError, SessionCorrupt
from continuity.harness.compaction import (
    CompactionEvent,
    compact_conversation,
    context_tokens,
    should_compact,
)
from continuity.harness.config import CompactionPolicy, HarnessConfig
from continuity.harness.loop import SYSTEM_PROMPT
from continuity.harness.reseed import ReseedEvent, reseed
from continuity.harness.session import DurableSession, recorded_operations
from continuity.harness.tool_history import ToolHistory
from continuity.harness.workspace import Workspace
from continuity.lookup.reader import HISTORY_TOOL
from continuity.memory.history import CanonicalHistory
from continuity.memory.ledger import render, render_tokens
from continuity.memory.ledger_store import LedgerStore
from continuity.memory.pack import PackReceipt, build_pack
from continuity.memory.retained import RetainedStore
from continuity.messages import Message, Usage, UserMessage
from continuity.providers.protocol import Provider
from continuity.sampling.receipts import LedgerInjection, ProbeRequest
from continuity.store import utc_now

__all__ = [
    "Crossing",
    "MidRunCompaction",
    "ProbeSetup",
    "ReplayFacts",
    "Restored",
    "cross_boundary",
    "journal_rows",
    "probe_setup",
    "restore",
]


@dataclass(frozen=True)
class ProbeSetup:
    """What the request and its arm fix before anything runs. `started` is on `clock`
    (seconds, monotonic), which times the lookup deadline."""

    request: ProbeRequest
    arm: Arm
    config: HarnessConfig
    reader_provider: str
    reader_model: str
    system: str
    soul_sha256: str
    clock: Callable[[], float]
    started: float

    @property
    def policy(self) -> CompactionPolicy:
        return self.config.runtime.compaction

    @property
    def never_compact(self) -> bool:
        """Lookup's native arm runs on the reader's native session and never compacts."""
        return self.request.lookup is not None and self.arm.boundary == "none"


def probe_setup(
    workspace: Workspace, request: ProbeRequest, clock: Callable[[], float] | None
) -> ProbeSetup:
    """The probe's setup; in lookup mode it installs the bound soul in the workspace."""
    arm = ARMS[request.arm]
    lookup = request.lookup
    models = lookup.models if lookup is not None else request.models
    config = arm_config(arm, models_patch(models))
    now = clock or time.monotonic
    started = now()
    system, soul_sha256 = SYSTEM_PROMPT, ""
    if lookup is not None:
        from continuity.lookup.soul import install_soul

        soul = install_soul(workspace.root, lookup.soul_sha256, lookup.soul_core_sha256)
        system, soul_sha256 = SYSTEM_PROMPT + "\n\n" + soul.core, soul.sha256
    provider, _, model = config.models.reader.partition(":")
    return ProbeSetup(
        request=request,
        arm=arm,
        config=config,
        reader_provider=provider,
        reader_model=model,
        system=system,
        soul_sha256=soul_sha256,
        clock=now,
        started=started,
    )


class ReplayFacts(msgspec.Struct, frozen=True):
    """What the probe child reads of the checkpoint's replay receipt."""

    trace_id: str = ""
    mid_trace_compaction: CompactionEvent | None = None


@dataclass
class Restored:
    """The checkpoint reopened: its session, histories and replay facts, and the
    retained store once `cross_boundary` opened it. `close` closes them all."""

    session: DurableSession
    history: CanonicalHistory
    tool_history: ToolHistory
    facts: ReplayFacts
    store: RetainedStore | None = None
    store_error: str | None = None

    def close(self) -> None:
        self.session.close()
        self.history.close()
        if self.store is not None:
            self.store.close()


def restore(workspace: Workspace) -> Restored:
    """Reopen the checkpoint at `workspace`.

    Raises:
        SessionCorrupt: when its replay receipt is missing or unreadable.
    """
    # The probe's copy is thrown away after the probe (the next probe gets a new one): its
    # session flushes every line (the evidence is read back from disk) but never fsyncs.
    session, history, tool_history = workspace.open(clock=utc_now, durable=False)
    try:
        facts = msgspec.json.decode(workspace.receipt_path.read_bytes(), type=ReplayFacts)
    except (OSError, msgspec.MsgspecError) as exc:
        session.close()
        history.close()
        raise SessionCorrupt(
            f"no readable replay receipt: {exc}", location=str(workspace.receipt_path)
        ) from None
    return Restored(session, history, tool_history, facts)


@dataclass(frozen=True)
class Crossing:
    """What crossing the boundary did, as the durable session recorded it."""

    history_model: str  # the session's model before the crossing
    history_tool: bool  # ConversationHistory is offered to the reader
    operations: list[str]
    reseed: ReseedEvent | None
    compaction: CompactionEvent | None
    pack: PackReceipt | None
    injected: tuple[Message, ...]
    ledger: LedgerInjection | None = None


async def cross_boundary(
    setup: ProbeSetup, restored: Restored, workspace: Workspace, summarizer: Provider
) -> Crossing:
    """Open the arm's retained store, apply the arm's boundary operations, check them
    against the session file, and build the pack. See the module doc.

    Raises:
        HarnessError: ``boundary_record_mismatch`` when the session file records other
            operations than the ones performed.
    """
    session = restored.session
    history_model = ":".join(session.current_model() or ("?", "?"))
    if setup.arm.retained:
        try:
            restored.store = RetainedStore(workspace.retained_path, readonly=True)
        except HistoryError as exc:
            restored.store_error = exc.code
    allowed = setup.config.tools.allowed_tools
    # Offered only when the arm offers it, the config allows it and a store exists.
    history_tool = (
        setup.arm.history_tool
        and (allowed is None or HISTORY_TOOL in allowed)
        and restored.store is not None
    )
    recorded_from = session.path.stat().st_size  # the checkpoint's own entries end here
    operations, reseed_event, compaction = await _boundary_operations(
        setup, restored, summarizer, history_model, history_tool
    )
    # The evidence is what the durable session recorded, read back from disk.
    session.sync()
    recorded = recorded_operations(session.path, recorded_from)
    if recorded != operations:
        raise HarnessError(
            f"the session file records {recorded}, the probe performed {operations}",
            code="boundary_record_mismatch",
            location=str(session.path),
        )
    pack, injected = _pack(setup, restored, history_tool)
    ledger, message = _ledger(setup, restored, workspace)
    injected += message
    return Crossing(
        history_model=history_model,
        history_tool=history_tool,
        operations=recorded,
        reseed=reseed_event,
        compaction=compaction,
        pack=pack,
        injected=injected,
        ledger=ledger,
    )


def journal_rows(workspace: Workspace) -> int:
    """The upkeep journal's row count (0 without a ledger store)."""
    if not workspace.ledger_path.exists():
        return 0
    with LedgerStore.reading(workspace.ledger_path) as store:
        return len(store.operations())


def _ledger(
    setup: ProbeSetup, restored: Restored, workspace: Workspace
) -> tuple[LedgerInjection | None, tuple[Message, ...]]:
    """The ledger arm's committed ledger, rendered for every reader request; the
    probe's own upkeep stays off (the arm pins it), and the journal's row count is
    taken so the evidence can show no upkeep ran during the probe."""
    continuity = setup.config.runtime.session.continuity
    if not (setup.arm.ledger and continuity.ledger_enabled):
        return None, ()
    owner = restored.session.header.session_id
    try:
        with LedgerStore.reading(workspace.ledger_path, owner=owner) as store:
            head = store.head()
            rows = len(store.operations())
    except LedgerError as exc:
        return LedgerInjection(error=exc.code, upkeep_enabled=continuity.upkeep_enabled), ()
    injection = LedgerInjection(
        generation=head.number,
        generation_id=head.id,
        entries=len(head.ledger.entries),
        tokens=render_tokens(head),
        operations_before=rows,
        operations_after=rows,
        upkeep_enabled=continuity.upkeep_enabled,
    )
    message = UserMessage(text=render(head), attribution="host", source="ledger")
    return injection, (message,)


async def _boundary_operations(
    setup: ProbeSetup,
    restored: Restored,
    summarizer: Provider,
    history_model: str,
    history_tool: bool,
) -> tuple[list[str], ReseedEvent | None, CompactionEvent | None]:
    """Restart marker, model-change reseed and pre-turn compaction, as the arm says."""
    arm, session, operations = setup.arm, restored.session, []
    if arm.boundary == "restart_switch_compact":
        session.append_boundary(
            "restart", {"parent_pid": setup.request.parent_pid, "child_pid": os.getpid()}
        )
        operations.append("restart")
    reseed_event: ReseedEvent | None = None
    switches = arm.boundary in ("model_change", "restart_switch_compact")
    if switches and history_model != setup.config.models.reader:
        reseed_event = reseed(
            session,
            restored.history,
            restored.tool_history,
            provider=setup.reader_provider,
            model=setup.reader_model,
            history_tool=history_tool,
        )
        operations.append("model_change")
    compaction: CompactionEvent | None = None
    reason = None if setup.never_compact else should_compact(session, setup.policy)
    if reason is not None:
        compaction = await compact_conversation(
            session, summarizer, policy=setup.policy, reason=reason, model=setup.reader_model
        )
        if compaction is not None:
            operations.append("compaction")
    return operations, reseed_event, compaction


def _pack(
    setup: ProbeSetup, restored: Restored, history_tool: bool
) -> tuple[PackReceipt | None, tuple[Message, ...]]:
    """The continuity pack for the pack arm (when the config enables it), and the
    message it injects (none when the pack is invalid). In lookup mode with
    ConversationHistory offered the renderer may add its retrieval guidance."""
    if not (setup.arm.pack and setup.config.runtime.session.continuity.pack_enabled):
        return None, ()
    context = restored.session.context()
    pack = build_pack(
        restored.store,
        restored.history,
        context=context,
        window_tokens=setup.policy.window,
        context_tokens=context_tokens(context),
        lookup_history=history_tool and setup.request.lookup is not None,
    )
    return pack.receipt, ((pack.message(),) if pack.receipt.status != "invalid" else ())


@dataclass
class MidRunCompaction:
    """Compaction between the reader's requests (``mid_run``), under the arm's policy;
    never on lookup's native arm. `events` are the compactions it made."""

    setup: ProbeSetup
    session: DurableSession
    summarizer: Provider
    events: list[CompactionEvent] = field(default_factory=list)

    async def __call__(self) -> None:
        if self.setup.never_compact or should_compact(self.session, self.setup.policy) is None:
            return
        event = await compact_conversation(
            self.session,
            self.summarizer,
            policy=self.setup.policy,
            reason="mid_run",
            model=self.setup.reader_model,
        )
        if event is not None:
            self.events.append(event)

    def usage(self, before: CompactionEvent | None) -> Usage:
        """The summarizer's usage: the pre-turn compaction's, then every mid-run one's."""
        total = Usage()
        for event in (before, *self.events):
            if event is not None:
                total = total + event.usage
        return total
