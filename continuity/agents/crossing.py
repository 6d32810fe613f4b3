"""Whether an outside agent crossed its arm's boundary: the verdict from observations.

Everything a verdict rests on is observed, never taken from the adapter: the model
proxy's content-free request facts (`continuity.servers.model_proxy.RequestFact`), the
sessions ``session/open`` gave and the PIDs continuity spawned. A verdict is
``verified``, ``contradicted`` (excluded: the observations disagree with what the
adapter declared) or ``not_crossed`` (excluded: no boundary happened):

- native: the probe request extends the last replay request;
- restart: a new process answered and, for an adapter declaring
  ``resume_after_restart``, the probe request carries something besides the system
  prompt and the question (turns, a summary or memory: how much is evidence, not the
  verdict);
- new_session: a new session id, and the new session's request does not carry the old
  session's owner turns as its own turns (two or more; memory the agent injects, even
  as a user message gathering several, is its own continuity);
- compact (the agent's own compaction): a compaction request reached the model (the
  agent asked for its summary), a main request after it no longer extended the one
  before (part of the context was replaced), and the probe request carries fewer of
  the trace's owner turns as turns than the agent was sent (the pre-boundary transcript
  was replaced, the sense the reference compaction arms use; a summary added in front
  of, or after, everything is not a compaction); else ``not_crossed``. An agent
  compacting on its own may do so at any turn of the replay or at the probe's. A
  request that dropped the transcript without carrying the
  summary the agent was given is ``contradicted``;
- switch (a model switch): the replay's requests named the first model, and every main
  request of the probe turn names the one the agent was switched to (else
  ``not_crossed``); how it rebuilt its context (the probe request's prefix relation) is
  evidence, not the verdict;
- continuity-store and continuity-pack-cold (a new session with the reference
  harness's retained evidence): new_session's verdict, and the probe request must offer
  ConversationHistory (store) or carry the injected pack (pack), else ``contradicted``
  (the adapter declared it takes them). Whether the reader then used the store is
  evidence (the meter's calls), not the verdict; but every ConversationHistory call the
  reader asked for must have reached the store's meter (an agent answering them itself
  is ``contradicted``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from continuity.agents.protocol import AgentInfo
from continuity.servers.history import HISTORY_TOOL
from continuity.servers.model_proxy import MAIN, SWITCH, RequestFact
from continuity.servers.proxy_script import map_tool

__all__ = ["Crossing", "Observed", "crossing"]


class Crossing(msgspec.Struct, frozen=True, kw_only=True):
    arm: str
    verdict: Literal["verified", "contradicted", "not_crossed"]
    reasons: list[str]
    pids: list[int]  # every adapter process continuity spawned, in order


class Observed(msgspec.Struct, frozen=True, kw_only=True):
    """What one sample's verdict reads."""

    pids: list[int]
    sessions: tuple[str, str]  # the replay's session and the probe's
    probe: RequestFact | None  # the probe turn's first main request
    last_main: RequestFact | None  # the replay's last main request
    probe_turn: Sequence[RequestFact] = ()  # every main request of the probe turn
    summaries: int = 0  # compaction requests the model answered
    replaced: bool = False  # a main request after a compaction did not extend its previous
    owner_turns: int = 0  # the trace's owner turns the agent was sent
    pack_carried: bool | None = None  # the pack arm: the probe request holds the pack
    history_asked: int = 0  # ConversationHistory calls the reader asked for
    history_served: int = 0  # calls the store's meter received


def _restart(info: AgentInfo, seen: Observed, probe: RequestFact) -> list[str] | None:
    """The restart arm's reasons (None: no new process, not crossed)."""
    if len(seen.pids) < 2 or seen.pids[0] == seen.pids[1]:
        return None
    carried = probe.transcript or probe.messages > 2  # turns, or a summary, or memory
    if info.capabilities.resume_after_restart and not carried:
        return [
            "declared resume_after_restart, yet the probe request carries nothing but the "
            "system prompt and the question"
        ]
    return []


def _compact(seen: Observed, probe: RequestFact) -> list[str] | str:
    """The compact arm's reasons, or why it was not crossed."""
    if not seen.summaries:
        return "no compaction request reached the model: the agent asked for no summary"
    if not seen.replaced:
        return "every request after the compaction extends the one before: it dropped nothing"
    if probe.transcript >= seen.owner_turns:
        return (
            f"the probe request carries all {probe.transcript} of the trace's owner turns "
            "as turns: the compaction replaced none"
        )
    if not probe.summary_carried:
        return [
            "the probe request dropped the pre-boundary transcript but does not carry the "
            "summary the agent was given"
        ]
    return []


def _switch(seen: Observed) -> str | None:
    if seen.last_main is not None and seen.last_main.model != MAIN:
        return f"the replay's requests already named {seen.last_main.model}, not {MAIN}"
    named = sorted({f.model for f in seen.probe_turn if f.model != SWITCH})
    if named:
        return f"the probe turn's requests name {', '.join(named)}, not {SWITCH}"
    return None


def crossing(arm: str, info: AgentInfo, seen: Observed) -> Crossing:
    """The verdict for `arm` (module doc)."""
    probe, pids = seen.probe, seen.pids

    def out(verdict: str, reasons: list[str]) -> Crossing:
        return msgspec.convert(
            {"arm": arm, "verdict": verdict, "reasons": reasons, "pids": pids}, Crossing
        )

    if probe is None or seen.last_main is None:
        return out("not_crossed", ["no probe request"])
    reasons: list[str] = []
    if arm == "native" and probe.prefix != "extends":
        reasons.append(f"the probe request {probe.prefix} the last replay request")
    if arm == "restart":
        restarted = _restart(info, seen, probe)
        if restarted is None:
            return out("not_crossed", ["no new process"])
        reasons += restarted
    if arm in ("new_session", "continuity-store", "continuity-pack-cold"):
        if seen.sessions[0] == seen.sessions[1]:
            return out("not_crossed", ["session/open gave the old session"])
        if probe.transcript >= 2:
            reasons.append(
                f"the new session's request carries {probe.transcript} of the old "
                "session's owner turns as its own turns"
            )
    if arm == "continuity-store" and map_tool(HISTORY_TOOL, probe.tools_offered) is None:
        reasons.append(f"the new session's probe request offers no {HISTORY_TOOL}")
    if arm == "continuity-store" and seen.history_served < seen.history_asked:
        reasons.append(
            f"the reader asked {HISTORY_TOOL} {seen.history_asked} times; the store's meter "
            f"received {seen.history_served} (the agent answered the rest itself)"
        )
    if arm == "continuity-pack-cold" and not seen.pack_carried:
        reasons.append("the new session's probe request does not carry the injected pack")
    if arm == "compact":
        compacted = _compact(seen, probe)
        if isinstance(compacted, str):
            return out("not_crossed", [compacted])
        reasons += compacted
    if arm == "switch" and (missed := _switch(seen)) is not None:
        return out("not_crossed", [missed])
    return out("contradicted" if reasons else "verified", reasons)
