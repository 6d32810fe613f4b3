"""The unit record: its types, its key, its content digest and its file name.

A unit is one record per repeat x trace x arm, holding every probe's answer and score
(`UnitRecord`, one `ProbeResult` per planned probe). It is a store artifact keyed by its
repeat, the arm's definition, the probe ids, the harness, scoring and runner code, and
the checkpoint and trace keys (`unit_key`). Its materialised file
``units/r<repeat>-<trace>-<arm>.json`` (`unit_filename`) carries that key and a content
digest (`content_digest`, `seal`), so the aggregator can refuse a tampered or
mislabelled file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from continuity.agents.identity import AgentEvidence, AgentIdentity
from continuity.arms import Arm
from continuity.digest import KeySpec, code_digest, value_digest
from continuity.harness.compaction import CompactionEvent
from continuity.lookup.receipts import LookupWitness
from continuity.messages import Usage
from continuity.preparation.receipts import PreparationReceipt
from continuity.probes.availability import Availability, Loss
from continuity.probes.judge import JudgeVerdict
from continuity.probes.scoring import Outcome
from continuity.providers.endpoint import CallReceipt, EndpointSpec
from continuity.runner.samples import SAMPLE_CODE
from continuity.sampling.receipts import SampleEvidence

__all__ = [
    "UNIT_CODE",
    "UNIT_SALT",
    "UNIT_SCHEMA",
    "ProbeResult",
    "ProbeStatus",
    "RealRun",
    "UnitRecord",
    "UnitStatus",
    "content_digest",
    "seal",
    "unit_filename",
    "unit_key",
]

UNIT_SALT = "unit-v1"
UNIT_CODE = (
    *SAMPLE_CODE,
    # Not the scorer (scoring, normalise, availability): a unit's grades are its original
    # grades; a corrected scorer writes score artifacts beside it (continuity.report.scores)
    # and never re-keys or rewrites a unit.
    "continuity.probes.protocol",
    "continuity.probes.judge",
    "continuity.runner.units.build",
    "continuity.runner.units.grading",
    "continuity.runner.units.record",
    "continuity.runner.units.plan",
    "continuity.runner.units.selection",
    "continuity.runner.units.store",
    "continuity.runner.units.worker",
    "continuity.runner.lookup_run",
    "continuity.runner.ledger_run",
)
UNIT_SCHEMA = "continuity-unit-v1"

# A probe result's status: its sample's classification (`continuity.evidence`), or
# ``inventory_infeasible`` for a lookup slot that never ran.
ProbeStatus = Literal[
    "valid",
    "store_degraded",
    "boundary_unverified",
    "treatment_invalid",
    "pressure_unverified",
    "failed",
    "inventory_infeasible",
    # An outside agent's sample (continuity.agents.units.sample_status).
    "replay_failed",
    "contradicted",
    "not_crossed",
    "copy_unverified",
    "answer_not_from_model",
]
# What `run_unit` did: built and stored it, reused a stored one, or (real mode) left it
# unfinished (neither stored nor materialised: the next run retries it).
UnitStatus = Literal["built", "cached", "incomplete"]


class ProbeResult(msgspec.Struct, frozen=True, kw_only=True):
    probe_id: str
    index: int
    category: str
    design_role: str | None
    status: ProbeStatus  # the sample's classification: valid or an exclusion class
    reasons: list[str]
    answer: str
    outcome: Outcome | None = None
    correct: bool | None = None
    score_reason: str | None = None
    availability: Availability | None = None
    loss: Loss | None = None
    history_calls: int = 0
    # Lookup mode: a failed child's last witness (its meter state survives the failure).
    witness: LookupWitness | None = None
    usage: Usage = Usage()
    compaction_usage: Usage = Usage()
    compactions: list[CompactionEvent] = msgspec.field(default_factory=list)
    evidence: SampleEvidence | None = None
    # Free recall only (imported corpora): LoCoMo's token-F1 of the answer against the
    # gold, reported beside the outcome (continuity.probes.token_f1); left out otherwise,
    # so every other unit keeps its bytes.
    token_f1: float | UnsetType = UNSET
    # An outside agent's sample: what its status rests on (left out otherwise).
    agent: AgentEvidence | UnsetType = UNSET
    # "judge" when the scorer left the sample unresolved and the judge's verdict decided
    # its outcome (`continuity.runner.units.grading.decide`); left out otherwise.
    decided_by: Literal["judge"] | UnsetType = UNSET


class UnitRecord(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = UNIT_SCHEMA
    key: str
    repeat: int
    family: str
    trace_id: str
    trace_key: str
    arm: str
    checkpoint: str
    probe_ids: list[str]
    probes: list[ProbeResult]
    judge: list[JudgeVerdict]
    # Real mode: the endpoint binding the unit ran on (None offline) and the judge's
    # call receipts.
    binding: dict[str, Any] | None = None
    judge_calls: list[CallReceipt] = msgspec.field(default_factory=list)
    # The probe protocol its reader saw (`continuity.probes.protocol`); "" = a unit made
    # before protocol v2, when the probe turn was the probe text alone.
    probe_protocol: str = ""
    # Coverage (None = a unit made before these were recorded): `complete` is False when
    # any planned slot was skipped (inventory-infeasible); `eligible_terminal` is True
    # when every eligible probe has a terminal result (valid, excluded or failed). A
    # terminal unit is never run again, complete or not.
    complete: bool | None = None
    eligible_terminal: bool | None = None
    # Real mode, arm (d): the receipts of the checkpoint's mid-trace compaction, one real
    # summarizer call per repeat shared by the repeat's probes (its usage is also in every
    # probe's compaction usage, the per-sample convention; list prices count it once).
    mid_trace_calls: list[CallReceipt] = msgspec.field(default_factory=list)
    # The ledger arm: the receipt of the prepared checkpoint its probes forked (three
    # upkeep stages). Its upkeep is counted once, here, never per probe; an invalid
    # preparation's samples are excluded (treatment_invalid) and its upkeep still counts.
    upkeep: PreparationReceipt | UnsetType = UNSET
    # An outside agent's unit (continuity.runner.agent_units): the agent its key binds.
    agent: AgentIdentity | UnsetType = UNSET
    content_digest: str = ""


def unit_key(
    repeat: int,
    trace_key: str,
    arm: Arm,
    checkpoint_key: str,
    probe_ids: Sequence[str],
    binding: dict[str, Any] | None = None,
    protocol: str = "",
) -> str:
    """A unit's key. `protocol` is the probe protocol the unit's reader saw (every new
    unit binds `PROBE_PROTOCOL`; "" recomputes the key of a unit made before v2)."""
    params: dict[str, Any] = {
        "repeat": repeat,
        "arm": msgspec.to_builtins(arm),
        "probes": list(probe_ids),
    }
    if binding is not None:  # real mode; offline keys stay as they were
        params["binding"] = binding
    if protocol:
        params["protocol"] = protocol
    return KeySpec(
        kind="unit",
        salt=UNIT_SALT,
        code=code_digest(UNIT_CODE),
        params=params,
        inputs={"checkpoint": checkpoint_key, "trace": trace_key},
    ).key()


class RealRun(msgspec.Struct, frozen=True, kw_only=True):
    """A real-mode invocation: the reader and judge endpoints and the shared state of
    this invocation (its ledger and, optionally, the call-key explain log)."""

    reader: EndpointSpec
    judge: EndpointSpec | None
    ledger: str
    explain_log: str | None = None
    # An outside agent's switch arm in a real plan: the model it switches to.
    switch: EndpointSpec | None = None

    def binding(self) -> dict[str, Any]:
        """What the unit key binds (never the credentials path or execution knobs)."""

        def part(spec: EndpointSpec | None) -> dict[str, Any] | None:
            if spec is None:
                return None
            return {
                "kind": spec.kind,
                "base_url": spec.base_url,
                "model": spec.model,
                "generation": spec.generation(),
                "ref": spec.catalog_ref,
            }

        bound = {"reader": part(self.reader), "judge": part(self.judge)}
        if self.switch is not None:  # only the switch arm's units bind it (agent_units)
            bound["switch"] = part(self.switch)
        return bound


def content_digest(record: UnitRecord) -> str:
    """The digest of a unit's content, its own digest field left empty."""
    blank = msgspec.structs.replace(record, content_digest="")
    return value_digest(("continuity-unit", msgspec.json.encode(blank)))


def seal(record: UnitRecord) -> UnitRecord:
    """The record with its content digest filled in."""
    return msgspec.structs.replace(record, content_digest=content_digest(record))


def unit_filename(record: UnitRecord) -> str:
    """The unit's file name in a run's ``units/`` folder."""
    return f"r{record.repeat}-{record.trace_id}-{record.arm}.json"
