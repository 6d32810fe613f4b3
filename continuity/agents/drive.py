"""Drive an outside agent through one trace: replay, boundary, probe (CAP/0 v0).

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
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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
from continuity.agents.protocol import (
    AgentInfo,
    InitParams,
    McpServer,
    ModelEndpoint,
    TurnResult,
)
from continuity.agents.sandbox import WORKSPACE, Confinement
from continuity.errors import AdapterError, ArmError, first_coded
from continuity.probes.availability import (
    Availability,
    ContextText,
    Needles,
    NeedleState,
    availability,
)
from continuity.servers.fixture import FixtureToolServer, frozen_records
from continuity.servers.model_proxy import (
    AUX,
    MAIN,
    SWITCH,
    ModelProxy,
    RequestFact,
    replay_signature,
)
from continuity.servers.proxy_script import WireRequest, proxy_script
from continuity.servers.wire import serve_in_thread
from continuity.traces.schema import OwnerMessage, ReplayTrace, Steer, ToolResult, iter_turns

_STEERED = ("injected", "queued")  # the declared capabilities that are sent turn/steer

__all__ = ["DUMMY_KEY", "AgentRun", "Reader", "drive_agent"]

Reader = Callable[[WireRequest], Awaitable[str]]
DUMMY_KEY = "continuity-dummy-key"


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


class _Steering:
    """The steers of the trace by the record of the call they arrive during; how each
    was delivered; the queued ones still to be sent as an owner turn."""

    def __init__(self, trace: ReplayTrace) -> None:
        turns = [t for _, _, t in iter_turns(trace)]
        by_call = {t.during_call: t for t in turns if isinstance(t, Steer)}
        self.by_record = {
            t.turn_id: by_call[t.call_id]
            for t in turns
            if isinstance(t, ToolResult) and t.call_id in by_call
        }
        self.delivery: dict[str, str] = {}
        self.queued: list[Steer] = []
        self.turn = ""


async def _deliver(
    adapter: AdapterProcess, info: AgentInfo, session: str, turn: str, steer: Steer
) -> str:
    """How `steer` reached the agent: its answer to ``turn/steer``, ``late`` when it gave
    none in time, ``none`` when it declared it takes no steers (never asked)."""
    if info.capabilities.steer not in _STEERED:
        return "none"
    try:
        result = await adapter.steer(session, turn, steer.turn_id, steer.text, timeout=30)
    except AdapterError as error:
        if error.code != "adapter_timeout":
            raise
        return "late"
    return result.delivery


async def _steer_loop(
    adapter: AdapterProcess,
    info: AgentInfo,
    session: str,
    fixture: FixtureToolServer,
    proxy: ModelProxy,
    held: anyio.abc.ObjectReceiveStream[str],
    steering: _Steering,
) -> None:
    """Deliver each held call's steer, tell the proxy how (its script follows), then
    release the call; a queued steer waits for the end of the turn."""
    async for record in held:
        steer = steering.by_record.get(record)
        if steer is not None:
            delivery = await _deliver(adapter, info, session, steering.turn, steer)
            steering.delivery[steer.turn_id] = delivery
            proxy.steer_delivered(steer.text, delivery)
            if delivery == "queued":
                steering.queued.append(steer)
        fixture.release(record)


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


@contextlib.contextmanager
def _socket_dir(sandboxed: bool) -> Iterator[Path | None]:
    """A short private directory for the servers' Unix sockets (a path holds at most
    107 bytes), removed afterwards; None unsandboxed."""
    if not sandboxed:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="cap-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.asynccontextmanager
async def _servers(
    proxy: ModelProxy, fixture: FixtureToolServer, hidden: tuple[Path, ...], sandboxed: bool
) -> AsyncIterator[tuple[str, str, Confinement | None]]:
    """Serve the model proxy and the MCP fixture on loopback (and, sandboxed, on Unix
    sockets too); yield their URLs and the sandboxed adapter's ways out: each server's
    loopback port to its socket (`hidden` protected: the unit's work, the store, the
    credentials)."""
    with _socket_dir(sandboxed) as sockets:
        paths = (None, None) if sockets is None else (sockets / "proxy", sockets / "mcp")
        with serve_in_thread(proxy, unix=paths[0]) as proxy_url:
            async with fixture.running(token=proxy.token, unix=paths[1]) as mcp_url:
                confined = None
                if sockets is not None:
                    ports = (urlsplit(proxy_url).port or 0, urlsplit(mcp_url).port or 0)
                    forwards = ((ports[0], "proxy"), (ports[1], "mcp"))
                    confined = Confinement(sockets=sockets, forwards=forwards, protected=hidden)
                yield proxy_url, mcp_url, confined


def _init_params(workspace: str, proxy: ModelProxy, proxy_url: str, mcp_url: str) -> InitParams:
    """What the adapter is initialized with: its `workspace` as it sees it, the model
    proxy (served at `proxy_url`) as its model endpoint for both roles and the fixture
    (at `mcp_url`) as its one MCP server."""
    model = ModelEndpoint(
        base_url=f"{proxy_url}/{proxy.token}/v1",
        api_key=DUMMY_KEY,
        roles={"main": MAIN, "aux": AUX},
    )
    return InitParams(
        workspace=workspace,
        model=model,
        mcp_servers=[McpServer(name="fixture", url=mcp_url)],
        identity={"user_id": "owner"},
    )


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
    summarizer: Reader | None = None,
) -> AgentRun:
    """One outside-agent sample of `trace` under `arm` (module doc); the adapter runs
    in the sandbox (`continuity.agents.sandbox`) unless not `sandboxed`. The agent's
    own compaction requests go to `summarizer` (default: the reader's ``summarize``).

    Raises:
        AdapterError: the adapter could not be started or broke the protocol, or the
            arm needs a capability it lacks (``adapter_capability_missing:<cap>``).
    """
    if arm not in ARMS:
        raise ArmError(f"outside agents have the arms {', '.join(ARMS)}", location=arm)
    owner = [t for _, _, t in iter_turns(trace) if isinstance(t, OwnerMessage)]
    volatile = (*volatile, *manifest.volatile)  # the manifest's patterns always apply
    proxy = ModelProxy(
        proxy_script(trace),
        reader=reader,
        volatile=volatile,
        markers=[t.text for t in owner],
        summarizer=summarizer or getattr(reader, "summarize", None),
    )
    steering = _Steering(trace)
    send, held = anyio.create_memory_object_stream[str](64)
    fixture = FixtureToolServer(
        frozen_records(trace), holds=frozenset(steering.by_record), on_hold=send.send_nowait
    )
    run = _Run(manifest, work, owner, turn_timeout)
    with first_coded(), send, held:
        hidden = (work, *protected)  # the sandbox's list besides (protected_paths)
        async with _servers(proxy, fixture, hidden, sandboxed) as (proxy_url, mcp_url, confined):
            seen = WORKSPACE if sandboxed else str(work / "agent")
            params = _init_params(seen, proxy, proxy_url, mcp_url)
            async with _adapter(manifest, work, params, run.pids, confined) as (adapter, info):
                check_declared(manifest, info.capabilities)
                require_capabilities(info.capabilities, [arm])
                session = await adapter.open_session("conversation")
                await run.replay(adapter, info, session, (fixture, proxy), held, steering)
                replayed, last_main = len(fixture.call_log), _last_main(proxy.facts)
                codes, details = _replay_codes(proxy, fixture, steering, run.failed)
                probe_session = session
                if arm != "restart":
                    probe_session = await _cross(arm, adapter, info, session, proxy, turn_timeout)
                    reply, probe_fact = await run.probe(adapter, proxy, probe_session, probe)
            if arm == "restart":  # the group above is gone: continuity killed it
                resumed = msgspec.structs.replace(params, resume={"session_id": session})
                async with _adapter(manifest, work, resumed, run.pids, confined) as (adapter, info):
                    reply, probe_fact = await run.probe(adapter, proxy, session, probe)
    if reply.status != "completed":
        codes, details = sorted({*codes, "turn_failed"}), [*details, f"probe: {reply.error}"]
    return AgentRun(
        agent=f"{info.agent.name} {info.agent.version}",
        manifest=manifest.digest,
        signature=replay_signature(proxy.facts),
        codes=codes,
        details=details,
        steers=steering.delivery,
        crossing=crossing(
            arm,
            info,
            Observed(
                pids=run.pids,
                sessions=(session, probe_session),
                probe=probe_fact,
                last_main=last_main,
                probe_turn=run.probe_turn,
                summaries=len(proxy.summaries),
            ),
        ),
        probe_reply=str(reply.reply.get("text", "")),
        probe=probe_fact,
        fixture_calls=replayed,
        probe_tool_attempts=len(fixture.call_log) - replayed,
        facts=proxy.facts,
        model_reply=run.model_reply,
        summaries=proxy.summaries,
        switched_to=SWITCH if arm == "switch" else None,
        **_available(needles, run.context),
    )


async def _cross(
    arm: str,
    adapter: AdapterProcess,
    info: AgentInfo,
    session: str,
    proxy: ModelProxy,
    timeout: float,
) -> str:
    """Cross an in-process arm's boundary (restart is the caller's); the probe's
    session. ``compact``: ``session/compact`` inside a manual compaction window, or (an
    agent compacting on its own) an auto window the probe turn's first main request
    closes; ``switch``: ``session/switch_model`` to `SWITCH`."""
    if arm == "new_session":
        return await adapter.open_session("conversation-2")
    if arm == "compact" and info.capabilities.compaction == "auto":
        proxy.open_compaction("auto")
    elif arm == "compact":
        proxy.open_compaction("manual")
        try:
            await adapter.compact(session, timeout=timeout)
        finally:
            proxy.open_compaction("")
    if arm == "switch":
        await adapter.switch_model(session, SWITCH)
    return session


def _available(needles: Needles | None, request: WireRequest | None) -> dict[str, Any]:
    """The probe's availability in the request the proxy saw, and the needle states it
    rests on (the facts', then the superseded values'): each needle stated in its system
    text, turns or tool results (not in the question itself)."""
    if needles is None or request is None:
        return {}
    text = ContextText([request.system, *(m.text for m in request.messages[:-1])])

    def states(found: list[str]) -> list[NeedleState]:
        return [NeedleState(in_context=text.holds(n), retrievable=None) for n in found]

    facts, superseded = states(needles.fact), states(needles.superseded)
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
        steering: _Steering,
    ) -> None:
        """Every owner turn; after a turn during which steers were queued, their text
        (one owner turn, in the order they came) before the next."""
        fixture, proxy = servers
        async with anyio.create_task_group() as group:
            group.start_soon(_steer_loop, adapter, info, session, fixture, proxy, held, steering)
            for turn in self.owner:
                await self._turn(adapter, session, steering, turn.turn_id, turn.text)
                while steering.queued:
                    queued, steering.queued = steering.queued, []
                    text = "\n\n".join(s.text for s in queued)
                    await self._turn(adapter, session, steering, queued[0].turn_id, text)
            group.cancel_scope.cancel()

    async def _turn(
        self, adapter: AdapterProcess, session: str, steering: _Steering, trace_turn: str, text: str
    ) -> None:
        steering.turn = self.next_turn_id()
        done = await adapter.run_turn(session, steering.turn, text, timeout=self.timeout)
        if done.status != "completed":
            self.failed.append(trace_turn)

    async def probe(
        self, adapter: AdapterProcess, proxy: ModelProxy, session: str, text: str
    ) -> tuple[TurnResult, RequestFact | None]:
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
        return reply, made[0] if made else None


def _replay_codes(
    proxy: ModelProxy, fixture: FixtureToolServer, steering: _Steering, failed: list[str]
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
    problems += _steer_labels(steering, fixture)
    codes = sorted({code for code, _ in problems})
    return codes, [f"{code}: {detail}" for code, detail in problems]


def _steer_labels(steering: _Steering, fixture: FixtureToolServer) -> list[tuple[str, str]]:
    """``steer_degraded`` labels: queued steers (sent as the next owner turn) apart from
    steers that were late, rejected or never taken."""
    queued = [s for s, d in steering.delivery.items() if d == "queued"]
    late = [c.record_id for c in fixture.call_log if c.held == "late"]
    missed = [s for s, d in steering.delivery.items() if d not in ("injected", "queued")] + late
    labels = []
    if queued:
        labels.append(
            ("steer_degraded", f"{len(queued)} steers queued: each sent as the next owner turn")
        )
    if missed:
        labels.append(("steer_degraded", f"{len(missed)} steers not injected in time"))
    return labels
