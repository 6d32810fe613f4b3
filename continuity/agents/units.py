"""One outside-agent sample and what it proves (CAP/0 v0).

A sample is one probe asked of a fresh copy: the trace is replayed through the adapter
again (`continuity.agents.drive`), the arm's boundary crossed, the probe asked as the
agent's next owner turn. The copies are proven identical by the replay signature:
every sample of a trace must have the trace's first signature, else it is
``copy_unverified``.

A sample is ``valid`` when its replay has no code but ``steer_degraded`` (a label), its
boundary is ``verified`` and its copy is proven; otherwise it is excluded as
``replay_failed``, ``contradicted``, ``not_crossed`` or ``copy_unverified``
(`sample_status`). What the status rests on is kept with the sample (`AgentEvidence`),
and who the agent is with its unit (`AgentIdentity`): the runner turns samples into
ordinary unit records (`continuity.runner.agent_units`), so the aggregate, the report
and `doit compare` read them like any other. The report opens such a run with a fixed
banner (`BANNER`) saying what a black box cannot show.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec

from continuity.agents.drive import ARMS, AgentRun, Reader, drive_agent
from continuity.agents.manifest import Manifest
from continuity.agents.sandbox import SANDBOX_VERSION
from continuity.errors import ArmError
from continuity.probes.availability import NeedleState, needles_for
from continuity.probes.protocol import probe_turn_text
from continuity.providers.endpoint import CallReceipt
from continuity.servers.model_proxy import RequestFact
from continuity.traces.schema import Probe, Trace

__all__ = [
    "AGENT_EXCLUSIONS",
    "AGENT_PROBE_PROTOCOL",
    "BANNER",
    "NOT_FROM_MODEL",
    "SANDBOXED",
    "UNSANDBOXED",
    "AgentEvidence",
    "AgentIdentity",
    "evidence",
    "from_model",
    "identity",
    "outside_arm",
    "run_sample",
    "sample_status",
    "unit_arm",
]

# The probe reaches an outside agent as its next owner turn, not as the reference
# reader's probe turn: a protocol of its own, so its units never average with, or
# compare against, the reference arms'. v1: the probe text alone. v2: the probe turn of
# the reference reader's protocol (`continuity.probes.protocol.probe_turn_text`, with its
# answer-format instruction), so an agent is asked for the same answer line.
AGENT_PROBE_PROTOCOL = "cap0-owner-turn-v2"
AGENT_EXCLUSIONS = (
    "replay_failed",
    "contradicted",
    "not_crossed",
    "copy_unverified",
    "answer_not_from_model",
)

BANNER = (
    "External agent. {agents} Replay mode scripted: the agent's model never saw the "
    "conversation during replay, so memory written by model decisions could not happen. "
    "Boundary evidence: verified by traffic for {verified} of {total} samples, "
    "contradicted for {contradicted} and not crossed for {not_crossed} (excluded); "
    "{replay_failed} more excluded because their replay failed.{answers} {isolation} Not "
    "verifiable for this agent: memory the agent never sent to a model; the contents of "
    "provider-side compaction{unverifiable}. Fresh-copy isolation: re-replay, signatures "
    "{signatures}."
)
# The banner's sentence for answers the adapter changed (none: no sentence).
NOT_FROM_MODEL = (
    " {not_from_model} more excluded because the adapter's reply was not the model's final "
    "text (answer_not_from_model{declared})."
)
# The banner's isolation sentence: every sample sandboxed, or how many were not.
SANDBOXED = (
    "Sandboxed (bubblewrap): each adapter saw only its own folder, a private workspace "
    "and its interpreter, reached only the model proxy and the MCP server, and no process "
    "outlived its unit."
)
UNSANDBOXED = (
    "UNSANDBOXED (--no-sandbox) for {unsandboxed} of {total} samples: those adapters ran "
    "as this user, could read the checkout, the output directory and the parent's "
    "environment, reach any loopback port and outlive their unit: their scores are no "
    "evidence against an adapter that cheats."
)


class AgentIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """Who a unit's agent is, as its key binds it (`Manifest.fingerprint`)."""

    adapter: str  # the manifest's name
    version: str  # the manifest's version
    manifest: str  # the manifest's digest
    sources: str  # the digest of the agent's files
    env: str  # the digest of its allowlisted variables' values
    # The sandbox it ran in (`continuity.agents.sandbox.SANDBOX_VERSION`), or "none"
    # (--no-sandbox; units from before the sandbox decode as "none").
    sandbox: str = "none"


class AgentEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """What one sample's status rests on, all of it observed (module doc)."""

    reported: str  # the name and version the adapter reported in initialize
    verdict: str  # the boundary: verified, contradicted, not_crossed
    codes: list[str]  # the replay's codes (steer_degraded is a label)
    signature: str
    steers: dict[str, str]  # steer id -> injected | queued | late | none
    # How many adapter processes continuity spawned (their PIDs differ from build to
    # build, so they are kept beside the unit, in its action entry's meta).
    processes: int
    fixture_calls: int
    probe_tool_attempts: int
    # Real mode: the probe's reader calls (the call cache's receipts); none offline.
    calls: list[CallReceipt] = []
    # The needles in the probe request the proxy saw: the facts', then the superseded
    # values' (what the availability rests on; `doit score` grades from them again).
    needle_states: list[NeedleState] = []
    # The probe's main request as the proxy saw it: content-free (role, model, size,
    # tools offered, the normalised messages' digest, its prefix relation).
    probe_request: RequestFact | None = None
    # The model's final text of the probe turn, as the proxy returned it: what the reply
    # was checked against (answer_not_from_model); None when no request was made.
    model_reply: str | None = None


_PREFIX = "agent-"


def unit_arm(arm: str) -> str:
    """The unit arm id of an outside arm (``native`` -> ``agent-native``)."""
    return arm if arm.startswith(_PREFIX) else _PREFIX + arm


def outside_arm(arm: str) -> str:
    """The outside arm a unit arm id or a command-line arm names (refused if none).

    Raises:
        ArmError: ``arm_unknown``.
    """
    name = arm.removeprefix(_PREFIX)
    if name not in ARMS:
        raise ArmError(f"outside agents have the arms {', '.join(ARMS)}", location=arm or "--arms")
    return name


def identity(manifest: Manifest, *, sandboxed: bool = True) -> AgentIdentity:
    """The agent a plan and its units bind: the manifest's name and version, its
    fingerprint under this process's environment (`Manifest.fingerprint`) and the
    sandbox it runs in ("none" when not `sandboxed`)."""
    sandbox = SANDBOX_VERSION if sandboxed else "none"
    return AgentIdentity(
        adapter=manifest.name, version=manifest.version, sandbox=sandbox, **manifest.fingerprint()
    )


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
) -> AgentRun:
    """Drive one fresh copy of `trace` through the adapter and ask `probe` (blocking)."""
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
    )
