"""Steers during an outside agent's replay (CAP/0): delivered while their call is held.

`Steering` maps each steer of the trace to the record of the call it arrives during, and
keeps how each was delivered and the queued ones still to send as an owner turn;
`steer_loop` delivers each held call's steer (``turn/steer``), tells the proxy how (its
script follows) and releases the call; `steer_labels` are the ``steer_degraded``
labels a sample carries (`continuity.agents.drive`).
"""

from __future__ import annotations

import anyio
import anyio.abc

from continuity.agents.client import AdapterProcess
from continuity.agents.protocol import AgentInfo
from continuity.errors import AdapterError
from continuity.servers.fixture import FixtureToolServer
from continuity.servers.model_proxy import ModelProxy
from continuity.traces.schema import ReplayTrace, Steer, ToolResult, iter_turns

__all__ = ["Steering", "steer_labels", "steer_loop"]

_STEERED = ("injected", "queued")  # the declared capabilities that are sent turn/steer


class Steering:
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


async def steer_loop(
    adapter: AdapterProcess,
    info: AgentInfo,
    session: str,
    fixture: FixtureToolServer,
    proxy: ModelProxy,
    held: anyio.abc.ObjectReceiveStream[str],
    steering: Steering,
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


def steer_labels(steering: Steering, fixture: FixtureToolServer) -> list[tuple[str, str]]:
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
