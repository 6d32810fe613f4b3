"""What an outside-agent unit is, without the machinery that runs one (CAP/0).

The outside arms and their unit ids, the identity a plan and its units bind
(`AgentIdentity`), the evidence a sample's status rests on (`AgentEvidence`), and the
fixed sentences the report's black-box banner is built from. Planning, aggregating and
reporting read these. Only running a sample (`continuity.agents.units`) needs the drive
loop, the MCP fixture server, the adapter client and with them the MCP SDK, whose
import alone costs about two thirds of a second; this module imports none of them (the
model proxy's `RequestFact` record, which it does import, does not pull in the SDK).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from continuity.agents.sandbox import SANDBOX_VERSION
from continuity.errors import ArmError
from continuity.probes.availability import NeedleState
from continuity.providers.endpoint import CallReceipt
from continuity.servers.model_proxy import RequestFact

if TYPE_CHECKING:
    from continuity.agents.manifest import Manifest

__all__ = [
    "AGENT_EXCLUSIONS",
    "AGENT_PROBE_PROTOCOL",
    "ARMS",
    "BANNER",
    "DEFAULT_ARMS",
    "NOT_FROM_MODEL",
    "SANDBOXED",
    "UNSANDBOXED",
    "AgentEvidence",
    "AgentIdentity",
    "identity",
    "outside_arm",
    "unit_arm",
]

# The boundaries an outside agent is measured across: v0's three, then (v1) the agent's
# own compaction, a model switch, and a new session given the reference harness's
# retained store (ConversationHistory) or its continuity pack, which keep the names of
# their reference counterparts. The v1 arms run only when named (`DEFAULT_ARMS`) and
# only for a manifest that declares the capabilities they need.
ARMS = (
    "native",
    "restart",
    "new_session",
    "compact",
    "switch",
    "continuity-store",
    "continuity-pack-cold",
)
DEFAULT_ARMS = ARMS[:3]

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
    # compact: the summary texts the model returned to the agent's own compaction
    # (reader-visible evidence, for the drill-down); switch: the model it switched to.
    summaries: list[str] = []
    switched_to: str | None = None
    # the pack arm: whether the probe request carried the injected pack; the store arm:
    # the ConversationHistory calls and bytes its meter let through in the probe turn
    pack_carried: bool | None = None
    lookup_calls: int = 0
    lookup_bytes: int = 0


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
