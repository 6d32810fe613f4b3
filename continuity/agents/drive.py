"""Drive an outside agent through one trace: replay, boundary, probe (CAP/0).

`drive_agent` starts the model proxy (script mode, `continuity.servers.model_proxy`)
and the fixture MCP server (the trace's frozen outputs, the steers' calls held,
`continuity.servers.fixture`) on loopback at unguessable paths, spawns the adapter in
a process group of its own, and then:

1. **replay**: ``initialize``, ``session/open``, one ``turn/run`` per owner turn. When
   the fixture holds a steer's call, the steer is sent with ``turn/steer`` (an adapter
   declaring ``steer: injected`` or ``queued``), the proxy told how it was delivered,
   and the call released. ``injected``: the next request must carry it. ``queued`` (the
   one allowed degradation): the current turn ends (the proxy answers the request with
   the call's result with an empty interlude) and the steer's text is sent as the next
   ``turn/run``, an owner turn with its own opaque id, whose request the step that
   followed the steer in the trace answers; the sample keeps its ``queued`` label. An
   adapter declaring ``steer: none``, or answering ``rejected``, never gets the steer:
   the call is released, and no request is checked for it.
2. **boundary** (the arm): ``native`` none; ``restart`` continuity kills the adapter's
   group and relaunches it with ``initialize {resume}``; ``new_session``
   ``session/open`` with a new key; ``compact`` ``session/compact`` (the agent's own
   compaction, its requests answered by the summarizer), or nothing for an agent that
   compacts on its own (``compaction: auto``: observed in the probe turn); ``switch``
   ``session/switch_model`` to ``cont-switch``.
3. **probe**: the proxy switches to forward mode (`reader`), the probe is one more
   ``turn/run``: the adapter cannot tell it from an owner turn.

Everything the verdict rests on is observed, never taken from the adapter
(`continuity.agents.crossing`): the proxy's content-free request facts (with the count
of the trace's owner texts each request's earlier user messages hold), the fixture's
call log and the PIDs continuity spawned.

`codes` lists what went wrong in the replay: ``replay_fidelity_failed`` (a check on a
request, an unexpected or unmatched tool call, turns left), ``tools_not_offered``,
``replay_unclassified_call``, and the label ``steer_degraded`` (a steer queued, late,
rejected or not taken: `steers` says which; it does not exclude the sample). The calls
of one assistant turn may reach the fixture in any order (an agent declaring
``parallel_tool_calls`` runs them concurrently); calls of different turns keep theirs.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import msgspec

from continuity.agents.client import (
    AdapterProcess,
    check_declared,
    require_capabilities,
    spawn_adapter,
)
from continuity.agents.crossing import Crossing, Observed, crossing
from continuity.agents.identity import ARMS
from continuity.agents.manifest import Manifest
from continuity.agents.protocol import AgentInfo, InitParams, McpServer, TurnResult
from continuity.agents.retained import STORE_ARMS, RetainedView
from continuity.agents.sandbox import WORKSPACE, Confinement
from continuity.agents.served import Served, init_params, serve_sample
from continuity.agents.steering import Steering, steer_labels, steer_loop
from continuity.errors import ArmError, first_coded
from continuity.lookup.meter import MeterState
from continuity.memory.retained import RetainedStore
from continuity.probes.availability import (
    Availability,
    ContextText,
    Needles,
    NeedleState,
    availability,
    reference_lookup,
)
from continuity.servers.fixture import FixtureToolServer, frozen_records
from continuity.servers.history import HISTORY_TOOL
from continuity.servers.model_proxy import (
    SWITCH,
    ModelProxy,
    ReaderReply,
    RequestFact,
    Summarizer,
    replay_signature,
)
from continuity.servers.proxy_script import WireRequest, proxy_script, request_holds
from continuity.traces.schema import OwnerMessage, ReplayTrace, iter_turns

__all__ = ["AgentRun", "Reader", "drive_agent"]

Reader = Callable[[WireRequest], Awaitable[str | ReaderReply]]


class AgentRun(msgspec.Struct, frozen=True, kw_only=True):
    agent: str  # name and version the adapter reported
    manifest: str  # the manifest's digest
    signature: str  # the replay signature
    codes: list[str]
    details: list[str]
    steers: dict[str, str]  # steer id -> injected | queued | late | none
    crossing: Crossing
    probe_reply: str
    probe: RequestFact | None
    fixture_calls: int
    probe_tool_attempts: int  # fixture calls during the probe (the fixture is done)
    facts: list[RequestFact]
    # The text the proxy returned to the probe turn's last main request: the model's
    # final answer, which the adapter's reply must be (None: no such request)
    model_reply: str | None = None
    availability: Availability | None = None  # with needles: in the probe request seen
    needle_states: list[NeedleState] = []  # what it rests on: the facts', then superseded
    # compact: the summary texts the model gave the agent's compaction (reader-visible
    # evidence, for the drill-down); switch: the model the agent was switched to
    summaries: list[str] = []
    switched_to: str | None = None
    # the pack arm: whether the probe request carried the injected pack; the store arm:
    # the ConversationHistory calls and bytes the meter let through in the probe turn
    pack_carried: bool | None = None
    lookup_calls: int = 0
    lookup_bytes: int = 0


@contextlib.asynccontextmanager
async def _adapter(
    manifest: Manifest,
    work: Path,
    params: InitParams,
    pids: list[int],
    confinement: Confinement | None,
) -> AsyncIterator[tuple[AdapterProcess, AgentInfo]]:
    async with spawn_adapter(
        manifest, workspace=work / "agent", log=work / "adapter.log", confinement=confinement
    ) as adapter:
        pids.append(adapter.pid)
        yield adapter, await adapter.initialize(params)


async def drive_agent(
    manifest: Manifest,
    trace: ReplayTrace,
    *,
    work: Path,
    arm: str,
    probe: str,
    reader: Reader,
    volatile: tuple[str, ...] = (),
    turn_timeout: float = 300,
    needles: Needles | None = None,
    sandboxed: bool = True,
    protected: tuple[Path, ...] = (),
    summarizer: Summarizer | None = None,
    retained: RetainedView | None = None,
) -> AgentRun:
    """One outside-agent sample of `trace` under `arm` (module doc); the adapter runs
    in the sandbox (`continuity.agents.sandbox`) unless not `sandboxed`. The agent's
    own compaction requests go to `summarizer` (default: the reader's ``summarize``);
    the store and pack arms need the reference harness's `retained` evidence.

    Raises:
        AdapterError: the adapter could not be started or broke the protocol, or the
            arm needs a capability it lacks (``adapter_capability_missing:<cap>``).
        ArmError: ``arm_unknown``; a store or pack arm without `retained`;
            ``agent_pack_invalid``.
    """
    _check_arm(arm, retained)
    owner = [t for _, _, t in iter_turns(trace) if isinstance(t, OwnerMessage)]
    volatile = (*volatile, *manifest.volatile)  # the manifest's patterns always apply
    proxy = ModelProxy(
        proxy_script(trace),
        reader=reader,
        volatile=volatile,
        markers=[t.text for t in owner],
        summarizer=summarizer or getattr(reader, "summarize", None),
    )
    steering = Steering(trace)
    send, held = anyio.create_memory_object_stream[str](64)
    fixture = FixtureToolServer(
        frozen_records(trace), holds=frozenset(steering.by_record), on_hold=send.send_nowait
    )
    run = _Run(manifest, work, owner, turn_timeout)
    history = Path(retained.retained) if retained is not None and arm == STORE_ARMS[0] else None
    with first_coded(), send, held:
        hidden = (work, *protected)  # the sandbox's list besides (protected_paths)
        async with serve_sample(proxy, fixture, hidden, sandboxed, history) as served:
            seen = WORKSPACE if sandboxed else str(work / "agent")
            params = init_params(seen, proxy, served, manifest.api[0])
            async with _adapter(manifest, work, params, run.pids, served.confined) as (
                adapter,
                info,
            ):
                check_declared(manifest, info.capabilities)
                require_capabilities(info.capabilities, [arm])
                session = await adapter.open_session("conversation")
                if arm == "compact" and info.capabilities.compaction == "auto":
                    proxy.open_compaction("auto")  # its threshold may fire at any turn
                await run.replay(adapter, info, session, (fixture, proxy), held, steering)
                run.replayed, run.last_main = len(fixture.call_log), _last_main(proxy.facts)
                run.sessions = (session, session)
                if arm != "restart":
                    crossed = _Crossed(arm, info, proxy, served, retained)
                    run.sessions = (session, await _cross(crossed, adapter, session, turn_timeout))
                    await run.probe(adapter, proxy, run.sessions[1], probe)
            if arm == "restart":  # the group above is gone: continuity killed it
                resumed = msgspec.structs.replace(params, resume={"session_id": session})
                async with _adapter(manifest, work, resumed, run.pids, served.confined) as (
                    adapter,
                    info,
                ):
                    await run.probe(adapter, proxy, session, probe)
            lookup = served.meter.state() if served.meter is not None else None
    return _agent_run(arm, info, run, (proxy, fixture, steering), needles, retained, lookup)


def _check_arm(arm: str, retained: RetainedView | None) -> None:
    """Refuse an arm outside agents lack, or a store or pack arm without its evidence.

    Raises:
        ArmError: ``arm_unknown``; ``agent_pack_invalid`` (the reference pack is invalid:
            the harness's failure, never the agent's, so nothing runs).
    """
    if arm not in ARMS:
        raise ArmError(f"outside agents have the arms {', '.join(ARMS)}", location=arm)
    if arm in STORE_ARMS and retained is None:
        raise ArmError(f"{arm} needs the reference harness's retained evidence", location=arm)
    if arm == STORE_ARMS[1] and retained is not None and not retained.pack:
        raise ArmError(
            f"the reference pack is {retained.pack_status}: nothing to inject",
            code="agent_pack_invalid",
            location=arm,
        )


def _agent_run(
    arm: str,
    info: AgentInfo,
    run: _Run,
    servers: tuple[ModelProxy, FixtureToolServer, Steering],
    needles: Needles | None,
    retained: RetainedView | None,
    lookup: MeterState | None,
) -> AgentRun:
    """The sample's record: its replay's codes, the verdict and the evidence."""
    proxy, fixture, steering = servers
    codes, details = _replay_codes(proxy, fixture, steering, run.failed)
    reply = run.reply
    if reply is None or reply.status != "completed":
        error = reply.error if reply is not None else "no probe turn"
        codes, details = sorted({*codes, "turn_failed"}), [*details, f"probe: {error}"]
    pack = retained.pack if retained is not None and arm == STORE_ARMS[1] else None
    observed = Observed(
        pids=run.pids,
        sessions=run.sessions,
        probe=run.probe_fact,
        last_main=run.last_main,
        probe_turn=run.probe_turn,
        summaries=len(proxy.summaries),
        replaced=_replaced(proxy.facts),
        owner_turns=len(run.owner),
        pack_carried=None if pack is None else request_holds(run.context, pack),
        history_asked=proxy.asked.count(HISTORY_TOOL),
        history_served=lookup.calls + lookup.refused_calls if lookup is not None else 0,
    )
    # the store arm's needles: retrievable through the store it offered (the pack arm
    # offers none, so its missing facts are absent, not retrievable)
    store = Path(retained.retained) if retained is not None and arm == STORE_ARMS[0] else None
    return AgentRun(
        agent=f"{info.agent.name} {info.agent.version}",
        manifest=run.manifest.digest,
        signature=replay_signature(proxy.facts),
        codes=codes,
        details=details,
        steers=steering.delivery,
        crossing=crossing(arm, info, observed),
        probe_reply=str(reply.reply.get("text", "")) if reply is not None else "",
        probe=run.probe_fact,
        fixture_calls=run.replayed,
        probe_tool_attempts=len(fixture.call_log) - run.replayed,
        facts=proxy.facts,
        model_reply=run.model_reply,
        summaries=proxy.summaries,
        switched_to=(
            run.probe_fact.model if arm == "switch" and run.probe_fact is not None else None
        ),
        pack_carried=observed.pack_carried,
        lookup_calls=lookup.calls if lookup is not None else 0,
        lookup_bytes=lookup.bytes if lookup is not None else 0,
        **_available(needles, run.context, store),
    )


def _replaced(facts: list[RequestFact]) -> bool:
    """Whether a main request after the first compaction request did not extend the
    main request before it (the agent replaced part of its context)."""
    first = next((f.index for f in facts if f.role == "compaction"), None)
    if first is None:
        return False
    return any(f.role == "main" and f.prefix != "extends" for f in facts if f.index > first)


@dataclass(frozen=True)
class _Crossed:
    """What crossing an in-process boundary needs."""

    arm: str
    info: AgentInfo
    proxy: ModelProxy
    served: Served
    retained: RetainedView | None


async def _cross(c: _Crossed, adapter: AdapterProcess, session: str, timeout: float) -> str:
    """Cross an in-process arm's boundary (restart is the caller's); the probe's
    session. ``compact``: ``session/compact`` inside a manual compaction window (an
    agent compacting on its own had its auto window open since the replay began);
    ``switch``: ``session/switch_model`` to `SWITCH`; the store arm: a new
    session offering the metered ConversationHistory; the pack arm: a new session, the
    pack through ``context/inject``."""
    arm, info, proxy = c.arm, c.info, c.proxy
    if arm == "new_session":
        return await adapter.open_session("conversation-2")
    if arm == STORE_ARMS[0] and c.served.history_url is not None:
        history = McpServer(name="history", url=c.served.history_url)
        return await adapter.open_session("conversation-2", mcp_servers=[history])
    if arm == STORE_ARMS[1] and c.retained is not None:
        fresh = await adapter.open_session("conversation-2")
        await adapter.inject(fresh, c.retained.pack)
        return fresh
    if arm == "compact" and info.capabilities.compaction != "auto":
        proxy.open_compaction("manual")
        try:
            await adapter.compact(session, timeout=timeout)
        finally:
            proxy.open_compaction("")
    if arm == "switch":
        await adapter.switch_model(session, SWITCH)
    return session


def _available(
    needles: Needles | None, request: WireRequest | None, retained: Path | None = None
) -> dict[str, Any]:
    """The probe's availability in the request the proxy saw, and the needle states it
    rests on (the facts', then the superseded values'): each needle stated in its system
    text, turns or tool results (not in the question itself); with a `retained` store
    (the store and pack arms), whether the evaluator's reference lookup finds it there
    within the lookup budget, as for the reference arms."""
    if needles is None or request is None:
        return {}
    text = ContextText([request.system, *(m.text for m in request.messages[:-1])])
    store = RetainedStore(retained, readonly=True) if retained is not None else None

    def state(needle: str) -> NeedleState:
        found = reference_lookup(store, needle) if store is not None else None
        return NeedleState(
            in_context=text.holds(needle),
            retrievable=found.retrievable if found is not None else None,
            calls=found.calls if found is not None else 0,
            bytes=found.bytes if found is not None else 0,
        )

    try:
        facts = [state(n) for n in needles.fact]
        superseded = [state(n) for n in needles.superseded]
    finally:
        if store is not None:
            store.close()
    return {
        "availability": availability(len(facts), facts, superseded),
        "needle_states": [*facts, *superseded],
    }


def _last_main(facts: list[RequestFact]) -> RequestFact | None:
    return next((f for f in reversed(facts) if f.role == "main"), None)


class _Run:
    """One sample's turns: opaque turn ids in order (a queued steer's turn and the
    probe's are simply the next ones, so nothing sets them apart), the PIDs spawned and
    the turns the adapter reported failed (the trace's turn ids)."""

    def __init__(
        self, manifest: Manifest, work: Path, owner: list[OwnerMessage], timeout: float
    ) -> None:
        self.manifest, self.work, self.owner, self.timeout = manifest, work, owner, timeout
        self.pids: list[int] = []
        self.failed: list[str] = []
        self.context: WireRequest | None = None
        self.model_reply: str | None = None
        self.probe_turn: list[RequestFact] = []  # the probe turn's main requests
        self.probe_fact: RequestFact | None = None  # its first
        self.reply: TurnResult | None = None  # the adapter's answer to the probe turn
        self.last_main: RequestFact | None = None  # the replay's last main request
        self.replayed = 0  # fixture calls during the replay
        self.sessions = ("", "")  # the replay's session and the probe's
        self.turns = 0

    def next_turn_id(self) -> str:
        self.turns += 1
        return f"t{self.turns:04d}"

    async def replay(
        self,
        adapter: AdapterProcess,
        info: AgentInfo,
        session: str,
        servers: tuple[FixtureToolServer, ModelProxy],
        held: anyio.abc.ObjectReceiveStream[str],
        steering: Steering,
    ) -> None:
        """Every owner turn; after a turn during which steers were queued, their text
        (one owner turn, in the order they came) before the next."""
        fixture, proxy = servers
        async with anyio.create_task_group() as group:
            group.start_soon(steer_loop, adapter, info, session, fixture, proxy, held, steering)
            for turn in self.owner:
                await self._turn(adapter, session, steering, turn.turn_id, turn.text)
                while steering.queued:
                    queued, steering.queued = steering.queued, []
                    text = "\n\n".join(s.text for s in queued)
                    await self._turn(adapter, session, steering, queued[0].turn_id, text)
            group.cancel_scope.cancel()

    async def _turn(
        self, adapter: AdapterProcess, session: str, steering: Steering, trace_turn: str, text: str
    ) -> None:
        steering.turn = self.next_turn_id()
        done = await adapter.run_turn(session, steering.turn, text, timeout=self.timeout)
        if done.status != "completed":
            self.failed.append(trace_turn)

    async def probe(
        self, adapter: AdapterProcess, proxy: ModelProxy, session: str, text: str
    ) -> None:
        """The probe turn, with the proxy forwarding from this turn on; the first main
        request it made (not an aux call, not anything before the switch), whose
        context `self.context` keeps for the availability analysis."""
        start, seen, answered = len(proxy.facts), len(proxy.forwarded), len(proxy.replies)
        proxy.forward()
        reply = await adapter.run_turn(session, self.next_turn_id(), text, timeout=self.timeout)
        made = [f for f in proxy.facts[start:] if f.role == "main" and f.mode == "forward"]
        self.probe_turn = made
        sent = proxy.forwarded[seen:]
        self.context = sent[0] if sent else None
        replies = proxy.replies[answered:]
        self.model_reply = replies[-1] if replies else None
        self.reply, self.probe_fact = reply, made[0] if made else None


def _replay_codes(
    proxy: ModelProxy, fixture: FixtureToolServer, steering: Steering, failed: list[str]
) -> tuple[list[str], list[str]]:
    problems = list(proxy.problems)
    if failed:
        problems.append(("turn_failed", f"the adapter reported {len(failed)} turns failed"))
    if proxy.remaining:
        problems.append(("replay_fidelity_failed", f"{proxy.remaining} turns never requested"))
    unmatched = sum(1 for c in fixture.call_log if not c.matched)
    if unmatched or not fixture.served_all:
        problems.append(
            (
                "replay_fidelity_failed",
                f"{unmatched} tool calls the trace does not make; "
                f"{len(fixture.records) - sum(c.matched for c in fixture.call_log)} "
                "of its calls never made",
            )
        )
    problems += steer_labels(steering, fixture)
    codes = sorted({code for code, _ in problems})
    return codes, [f"{code}: {detail}" for code, detail in problems]
