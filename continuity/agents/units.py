"""One outside-agent sample and what it proves (CAP/0).

A sample is one probe asked of a fresh copy: the trace is replayed through the adapter
again (`continuity.agents.drive`), the arm's boundary crossed, the probe asked as the
agent's next owner turn. The copies are proven identical by the replay signature:
every sample of a trace must have the trace's first signature, else it is
``copy_unverified``.

A sample is ``valid`` when its replay has no code but ``steer_degraded`` (a label), its
boundary is ``verified`` and its copy is proven; otherwise it is excluded as
``replay_failed``, ``contradicted``, ``not_crossed`` or ``copy_unverified``
(`sample_status`). What the status rests on is kept with the sample, and who the
agent is with its unit (`continuity.agents.identity`: `AgentEvidence`, `AgentIdentity`):
the runner turns samples into ordinary unit records (`continuity.runner.agent_units`),
so the aggregate, the report and `doit compare` read them like any other. The report
opens such a run with a fixed banner (`continuity.agents.identity.BANNER`) saying what
a black box cannot show.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from continuity.agents.drive import AgentRun, Reader, drive_agent
from continuity.agents.identity import AgentEvidence
from continuity.agents.manifest import Manifest
from continuity.agents.retained import RetainedView
from continuity.probes.availability import needles_for
from continuity.probes.protocol import probe_turn_text
from continuity.providers.endpoint import CallReceipt
from continuity.traces.schema import Probe, Trace

__all__ = ["evidence", "from_model", "run_sample", "sample_status"]


def run_sample(
    manifest: Manifest,
    trace: Trace,
    arm: str,
    probe: Probe,
    work: Path,
    reader: Reader,
    *,
    sandboxed: bool = True,
    protected: tuple[Path, ...] = (),
    retained: RetainedView | None = None,
) -> AgentRun:
    """Drive one fresh copy of `trace` through the adapter and ask `probe` (blocking);
    the store and pack arms carry the reference harness's `retained` evidence."""
    needles = needles_for(probe.expectation, trace)

    async def main() -> AgentRun:
        turn = probe_turn_text(probe.text, probe.category)
        return await drive_agent(
            manifest,
            trace,
            work=work,
            arm=arm,
            probe=turn,
            reader=reader,
            needles=needles,
            sandboxed=sandboxed,
            protected=protected,
            retained=retained,
        )

    return anyio.run(main)


def sample_status(
    run: AgentRun, first: str, *, post_processes: bool = False
) -> tuple[str, list[str]]:
    """The sample's status and its reasons; `first` is the trace's first signature,
    `post_processes` what the manifest declares (the reason says so; the label stays)."""
    codes = [c for c in run.codes if c != "steer_degraded"]
    if codes:
        return "replay_failed", run.details
    if run.crossing.verdict != "verified":
        return run.crossing.verdict, run.crossing.reasons
    if run.signature != first:
        return "copy_unverified", ["the replay signature differs from the trace's first copy"]
    if not from_model(run):
        declared = " (the manifest declares post_processes)" if post_processes else ""
        return "answer_not_from_model", [
            "the adapter's reply differs from the final text the model proxy returned in the "
            f"probe turn{declared}"
        ]
    return "valid", [d for d in run.details if d.startswith("steer_degraded")]


def from_model(run: AgentRun) -> bool:
    """Whether the adapter's probe reply is the model's final text of the probe turn
    (the text the proxy returned to its last main request), up to surrounding and
    repeated whitespace: an adapter may not answer for its model."""
    if run.model_reply is None:
        return False
    return " ".join(run.probe_reply.split()) == " ".join(run.model_reply.split())


def evidence(run: AgentRun, calls: list[CallReceipt]) -> AgentEvidence:
    return AgentEvidence(
        calls=calls,
        needle_states=run.needle_states,
        reported=run.agent,
        verdict=run.crossing.verdict,
        codes=run.codes,
        signature=run.signature,
        steers=run.steers,
        processes=len(run.crossing.pids),
        probe_request=run.probe,
        model_reply=run.model_reply,
        fixture_calls=run.fixture_calls,
        probe_tool_attempts=run.probe_tool_attempts,
        summaries=run.summaries,
        switched_to=run.switched_to,
        pack_carried=run.pack_carried,
        lookup_calls=run.lookup_calls,
        lookup_bytes=run.lookup_bytes,
    )
