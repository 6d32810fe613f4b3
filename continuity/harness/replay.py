"""Replay a trace through the harness: scripted model, real MCP tools, durable state.

Every owner turn goes through the agent loop. The scripted provider poses as the bound
history model and answers with the trace's assistant messages; their tool calls are
real MCP calls to a loopback fixture server holding the trace's frozen outputs, so the
production path writes the native transcript and the tool-history records. A steer is
offered through live input while its tool call is in flight, bound to the exact steer
text, and the scripted reply after it checks that it reached the request, attributed to
the owner. Scripted turns never compact.

After the last turn the replay proves its own fidelity or fails with
``replay_fidelity_failed``: every scripted step consumed, the server's call log equal to
the trace's tool records in order (one call each), every steer delivered as owner input,
and the session, history and sidecar reloaded from disk equal to what was in memory.

The mid-trace compaction of arm (d) is promptless and scripted offline. In real mode
(`summarizer`) it is a real summarizer call behind the call cache and the invocation's
ledger, made once per repeat (its checkpoint is per repeat); its receipts are in the
replay receipt. The history around it stays scripted, identical to the other arms.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from continuity.digest import value_digest
from continuity.errors import HarnessError, ReplayFidelityError, typed_error
from continuity.harness.compaction import CompactionEvent, compact_conversation
from continuity.harness.config import SMALLEST_TRIGGER, CompactionPolicy
from continuity.harness.keys import ReplayConfig
from continuity.harness.live_input import LiveInput
from continuity.harness.loop import AgentLoop
from continuity.harness.receipt import ReplayReceipt
from continuity.harness.session import DurableSession, Entry
from continuity.harness.tool_history import ToolHistory, ToolRecord
from continuity.harness.toolbox import McpToolbox
from continuity.harness.workspace import Workspace
from continuity.memory.history import CanonicalHistory, HistoryRecord
from continuity.memory.retained import RetainedStats, RetainedStore
from continuity.messages import (
    Message,
    ModelRequest,
    ToolCallRequest,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from continuity.providers.endpoint import CallReceipt
from continuity.providers.scripted import ScriptedProvider, ScriptedStep, ScriptedSummarizer
from continuity.servers.fixture import FixtureToolServer, frozen_records
from continuity.traces.schema import (
    AssistantMessage,
    OwnerMessage,
    ReplayTrace,
    Steer,
    iter_turns,
)

if TYPE_CHECKING:
    from continuity.providers.endpoint import RealBinding

__all__ = [
    "ReplayClock",
    "ReplayConfig",
    "ReplayReceipt",
    "clear_workspace",
    "replay_trace",
    "scripted_steps",
]


class ReplayClock:
    """Deterministic timestamps: each sitting starts at 09:00 on its trace date and every
    entry advances one second, so a replay writes byte-identical files."""

    def __init__(self, date: str) -> None:
        self.start(date)

    def start(self, date: str) -> None:
        self.date = date
        self.tick = 9 * 3600

    def __call__(self) -> str:
        value = self.tick
        self.tick += 1
        hours, rest = divmod(value, 3600)
        return f"{self.date}T{hours:02d}:{rest // 60:02d}:{rest % 60:02d}Z"


def _expect_steers(
    step: ScriptedStep, steers: list[Steer]
) -> Callable[[ModelRequest], ScriptedStep]:
    def reply(request: ModelRequest) -> ScriptedStep:
        last_result = max(
            (i for i, m in enumerate(request.messages) if isinstance(m, ToolResultMessage)),
            default=-1,
        )
        arrived = [
            m
            for m in request.messages[last_result + 1 :]
            if isinstance(m, UserMessage) and m.source == "steer"
        ]
        for steer in steers:
            if not any(m.text == steer.text and m.attribution == "owner" for m in arrived):
                raise ReplayFidelityError(
                    "the steer did not reach the next model request as owner input",
                    location=steer.turn_id,
                )
        return step

    return reply


def scripted_steps(
    trace: ReplayTrace,
) -> list[ScriptedStep | Callable[[ModelRequest], ScriptedStep]]:
    """The trace's assistant messages as scripted replies, in order."""
    steps: list[ScriptedStep | Callable[[ModelRequest], ScriptedStep]] = []
    pending: list[Steer] = []
    for _, _, turn in iter_turns(trace):
        if isinstance(turn, Steer):
            pending.append(turn)
        elif isinstance(turn, AssistantMessage):
            step = ScriptedStep(
                text=turn.text,
                tool_calls=tuple(
                    ToolCallRequest(call_id=c.call_id, name=c.tool, arguments=dict(c.arguments))
                    for c in turn.tool_calls
                ),
            )
            steps.append(_expect_steers(step, pending) if pending else step)
            pending = []
    return steps


async def replay_trace(
    trace: ReplayTrace,
    root: Path,
    *,
    config: ReplayConfig | None = None,
    trace_digest: str = "",
    tool_server_url: str | None = None,
    read_timeout: float = 30.0,
    summarizer: RealBinding | None = None,
    replayed: list[str] | None = None,
) -> ReplayReceipt:
    """Replay `trace` into a new workspace at `root` and return its receipt.

    With `tool_server_url`, calls go to that MCP server instead of an in-process
    fixture server (the call log then cannot be checked here). With `summarizer` (real
    mode), the mid-trace compaction calls that endpoint; `replayed`, when given,
    collects the keys of its calls replayed from the call cache (the receipt, sealed in
    the checkpoint, is the same bytes either way).

    Raises:
        ScriptExhausted, ToolError, ReplayFidelityError, HarnessError: typed failures.
            The workspace is left as it was when the failure happened; callers store
            nothing (see `checkpoints`).
    """
    try:
        return await _replay(
            trace,
            root,
            config or ReplayConfig(),
            trace_digest,
            tool_server_url,
            read_timeout,
            summarizer,
            replayed,
        )
    except BaseExceptionGroup as group:  # anyio task groups wrap the typed error
        typed = typed_error(group)
        if typed is None:
            raise
        raise typed from None


async def _mid_trace_compaction(
    session: DurableSession,
    config: ReplayConfig,
    trace: ReplayTrace,
    real: RealBinding | None,
    replayed: list[str] | None = None,
) -> tuple[CompactionEvent, list[CallReceipt]]:
    """The operator's promptless compaction: scripted offline; in real mode one real
    summarizer call (cache, ledger), gated by the ledger's stop rules."""
    receipts: list[CallReceipt] = []
    if real is None:
        event = await compact_conversation(
            session,
            ScriptedSummarizer(name=config.history_provider, model=config.history_model),
            policy=CompactionPolicy(**SMALLEST_TRIGGER),
            reason="manual",
            model=config.history_model,
        )
    else:
        from continuity.providers.cache import CachedProvider
        from continuity.providers.real import make_provider
        from continuity.providers.shared_ledger import open_ledger
        from continuity.store import Store

        ledger = open_ledger(real.ledger) if real.ledger else None
        inner = make_provider(real.endpoint)
        try:
            summarizer = CachedProvider(
                inner,
                real.endpoint,
                Store(real.store_root),
                repeat=real.repeat,
                role="summary",
                ledger=ledger,
                explain_log=real.explain_log,
                gate=True,  # no live turn admits it: it runs only while admission is open
            )
            event = await compact_conversation(
                session,
                summarizer,
                policy=CompactionPolicy(**SMALLEST_TRIGGER),
                reason="manual",
                model=real.endpoint.model,
            )
            receipts = list(summarizer.receipts)
            if replayed is not None:
                replayed.extend(summarizer.replayed)
        finally:
            await inner.aclose()
            if ledger is not None:
                ledger.close()
    if event is None:
        raise ReplayFidelityError(
            "the mid-trace compaction had nothing to summarize", location=trace.trace_id
        )
    return event, receipts


class _Replay:
    """The parts of one replay in progress: the workspace and its durable roots, the
    scripted history model, the fixture server (None with an outside tool server), the
    steers waiting for their calls and the live input that carries them."""

    def __init__(
        self,
        trace: ReplayTrace,
        root: Path,
        config: ReplayConfig,
        trace_digest: str,
        url: str | None,
    ) -> None:
        self.trace, self.config = trace, config
        self.workspace = Workspace(root.absolute())
        if self.workspace.root.exists() and any(self.workspace.root.iterdir()):
            raise HarnessError(
                "replay needs an empty workspace",
                code="workspace_not_empty",
                location=str(self.workspace.root),
            )
        self.clock = ReplayClock(trace.sessions[0].date)
        session_id = value_digest(("continuity-session", trace.trace_id, trace_digest, config))
        self.session, self.history, self.tools = self.workspace.create(
            session_id=session_id[:32], clock=self.clock
        )
        self.steers = {t.during_call: t for _, _, t in iter_turns(trace) if isinstance(t, Steer)}
        self.live = LiveInput()
        self.provider = ScriptedProvider(
            scripted_steps(trace), name=config.history_provider, model=config.history_model
        )
        self.server = FixtureToolServer(frozen_records(trace)) if url is None else None
        self.retained = (
            RetainedStore(self.workspace.retained_path) if config.retained_records else None
        )

    def offer_steer(self, call: ToolCallRequest) -> None:
        steer = self.steers.get(call.call_id)
        if steer is not None:  # owner-authored web live input binds the exact text
            self.live.offer(steer.text, owner_text=steer.text)

    def close(self) -> None:
        self.session.close()
        self.history.close()
        if self.retained is not None:
            self.retained.close()


class _Played(msgspec.Struct, kw_only=True):
    """What driving the sittings produced (besides the durable files)."""

    owner_turns: int = 0
    usage: Usage = msgspec.field(default_factory=Usage)
    mid_event: CompactionEvent | None = None
    mid_calls: list[CallReceipt] = msgspec.field(default_factory=list)


# The durable state compared in memory and reloaded: session entries, the model context,
# the canonical history records and the tool-history records.
_State = tuple[list[Entry], list[Message], list[HistoryRecord], list[ToolRecord]]


def _state(session: DurableSession, history: CanonicalHistory, tools: ToolHistory) -> _State:
    return list(session.entries), session.context(), list(history.records), tools.records()


async def _replay(
    trace: ReplayTrace,
    root: Path,
    config: ReplayConfig,
    trace_digest: str,
    tool_server_url: str | None,
    read_timeout: float,
    summarizer: RealBinding | None = None,
    replayed: list[str] | None = None,
) -> ReplayReceipt:
    replay = _Replay(trace, root, config, trace_digest, tool_server_url)
    try:
        played = await _play(replay, tool_server_url, read_timeout, summarizer, replayed)
        in_memory = _state(replay.session, replay.history, replay.tools)
        retained_stats = replay.retained.stats() if replay.retained is not None else None
    finally:
        replay.close()
    _check_fidelity(replay, in_memory)
    receipt = _receipt(replay, trace_digest, played, in_memory, retained_stats)
    replay.workspace.receipt_path.write_bytes(
        msgspec.json.format(msgspec.json.encode(receipt)) + b"\n"
    )
    return receipt


async def _play(
    replay: _Replay,
    tool_server_url: str | None,
    read_timeout: float,
    summarizer: RealBinding | None,
    replayed: list[str] | None,
) -> _Played:
    """Every owner turn through the agent loop, sitting by sitting, with the mid-trace
    compaction (when the config asks for it) before the middle owner turn."""
    trace, config, session = replay.trace, replay.config, replay.session
    total_owner_turns = sum(isinstance(t, OwnerMessage) for _, _, t in iter_turns(trace))
    mid_turn = total_owner_turns // 2 if config.mid_trace_compaction else None
    played = _Played()
    session.append_model_change(
        config.history_provider, config.history_model, reason="bound history model"
    )
    async with contextlib.AsyncExitStack() as stack:
        url = tool_server_url
        if replay.server is not None:
            url = await stack.enter_async_context(replay.server.running())
        assert url is not None
        toolbox = await stack.enter_async_context(
            McpToolbox(url, read_timeout=read_timeout, on_call_started=replay.offer_steer)
        )
        loop = AgentLoop(
            session=session,
            history=replay.history,
            tool_history=replay.tools,
            toolbox=toolbox,
            provider=replay.provider,
            model=config.history_model,
            live_input=replay.live,
            retained=replay.retained,
        )
        for sitting in trace.sessions:
            replay.clock.start(sitting.date)
            session.append_custom(
                "sitting", {"session_id": sitting.session_id, "date": sitting.date}
            )
            for turn in sitting.turns:
                if not isinstance(turn, OwnerMessage):
                    continue
                if played.owner_turns == mid_turn:  # the operator's promptless compaction
                    played.mid_event, played.mid_calls = await _mid_trace_compaction(
                        session, config, trace, summarizer, replayed
                    )
                report = await loop.run_turn(turn.text)
                played.usage = played.usage + report.usage
                played.owner_turns += 1
    return played


def _check_fidelity(replay: _Replay, in_memory: _State) -> None:
    """Every scripted reply requested, the fixture server's call log equal to the trace's
    tool records, every steer offered as owner input, and the durable state reloaded from
    disk equal to `in_memory`.

    Raises:
        ReplayFidelityError: every problem found, in one message.
    """
    problems = []
    if replay.provider.remaining:
        problems.append(f"{replay.provider.remaining} scripted replies were never requested")
    server = replay.server
    if server is not None:
        expected = [(r.tool, r.arguments, r.record_id) for r in server.records]
        served = [(c.tool, c.arguments, c.record_id) for c in server.call_log]
        if served != expected or not all(c.matched for c in server.call_log):
            problems.append(
                f"the fixture server saw {len(served)} calls, not the trace's "
                f"{len(expected)} tool records in order"
            )
    steers, log = replay.steers, replay.live.log
    owner_offers = [o for o in log if o.attribution == "owner"]
    if len(owner_offers) != len(steers) or len(log) != len(steers):
        problems.append(f"{len(owner_offers)} of {len(steers)} steers were offered as owner input")
    reloaded_session, reloaded_history, reloaded_tools = replay.workspace.open(clock=replay.clock)
    try:
        reloaded = _state(reloaded_session, reloaded_history, reloaded_tools)
    finally:
        reloaded_session.close()
        reloaded_history.close()
    if reloaded != in_memory:
        problems.append("the durable state reloaded from disk differs from the in-memory state")
    if problems:
        raise ReplayFidelityError("; ".join(problems), location=replay.trace.trace_id)


def _receipt(
    replay: _Replay,
    trace_digest: str,
    played: _Played,
    in_memory: _State,
    retained: RetainedStats | None,
) -> ReplayReceipt:
    entries, context, history, records = in_memory
    return ReplayReceipt(
        trace_id=replay.trace.trace_id,
        trace_digest=trace_digest,
        config=replay.config,
        owner_turns=played.owner_turns,
        requests=len(replay.provider.requests),
        tool_calls=sum(1 for _ in records),
        steers_offered=len(replay.live.log),
        steers_owner=sum(1 for o in replay.live.log if o.attribution == "owner"),
        session_entries=len(entries),
        context_messages=len(context),
        context_digest=value_digest(context),
        history_records=len(history),
        tool_records=len(records),
        truncated_records=sum(r.truncated for r in records),
        retained_bytes=sum(r.retained_bytes for r in records),
        call_log_verified=replay.server is not None,
        usage=played.usage,
        retained=retained,
        mid_trace_compaction=played.mid_event,
        mid_trace_calls=played.mid_calls,
    )


def clear_workspace(root: Path) -> None:
    """Remove a workspace left behind by an interrupted replay."""
    if root.exists():
        shutil.rmtree(root)
