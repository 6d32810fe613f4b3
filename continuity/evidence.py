"""Classifying a probe sample from its evidence.

A sample counts toward accuracy only if it is ``valid``. Otherwise it is excluded and
counted by class, never scored as a pass or a failure:

- ``store_degraded``: a store or pack arm without retained records, with a degraded
  tool-history sidecar or history warnings, or whose retrieval was unavailable;
- ``boundary_unverified``: the sample did not cross its arm's boundary (for example no
  compaction, no model-change reseed, the wrong order for restart-switch-compact, a
  missing pack in the pack arm, or any pack in a control arm);
- ``treatment_invalid``: the ledger arm's treatment failed its integrity checks: its
  preparation broke the upkeep protocol (``continuity.preparation.integrity``), the
  committed ledger was missing from a reader request or another generation was
  injected, a request carried more than one ledger, or upkeep ran (or was enabled)
  during the probe;
- ``pressure_unverified``: on a long trace, the boundary was crossed under less
  pressure than the seed's threshold table asks;
- ``failed``: the probe child failed (its code is kept).

Mid-run compactions in store arms are reported but never count as the boundary.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET

from continuity.arms import Arm
from continuity.sampling.receipts import SampleEvidence

__all__ = [
    "EXCLUDED_CLASSES",
    "LONG_FAMILIES",
    "Classification",
    "Status",
    "classify",
]

LONG_FAMILIES = ("hard", "hard-distractors")
EXCLUDED_CLASSES: tuple[str, ...] = (
    "store_degraded",
    "boundary_unverified",
    "treatment_invalid",
    "pressure_unverified",
    "failed",
)
Status = Literal[
    "valid",
    "store_degraded",
    "boundary_unverified",
    "treatment_invalid",
    "pressure_unverified",
    "failed",
]


class Classification(msgspec.Struct, frozen=True):
    status: Status
    reasons: list[str]


def _boundary(arm: Arm, e: SampleEvidence) -> list[str]:
    problems: list[str] = []
    compaction = e.compaction
    if arm.boundary == "none":
        if e.operations:
            problems.append(f"native crossed {e.operations}")
        if e.history_model != e.reader_model:
            problems.append("history was not on the reader's native session")
    if arm.boundary in ("model_change", "restart_switch_compact"):
        if e.reseed is None or e.reseed.to_model != e.reader_model:
            problems.append("no model-change reseed to the reader")
        elif e.reseed.from_model == e.reseed.to_model:
            problems.append("the reseed did not change model")
    if (
        arm.boundary
        in ("compaction", "compaction_mid_and_probe", "ceiling", "restart_switch_compact")
        and compaction is None
    ):
        problems.append("no pre-turn compaction")
    if arm.boundary == "ceiling" and compaction is not None and compaction.reason != "ceiling":
        problems.append(f"compaction was {compaction.reason}, not the ceiling")
    if (
        arm.boundary in ("compaction", "compaction_mid_and_probe", "restart_switch_compact")
        and compaction is not None
        and compaction.reason != "proactive"
    ):
        problems.append(f"compaction was {compaction.reason}, not proactive")
    if arm.boundary == "compaction_mid_and_probe" and e.mid_trace_compaction is None:
        problems.append("no mid-trace compaction in the checkpoint")
    if arm.boundary == "restart_switch_compact":
        if e.operations != ["restart", "model_change", "compaction"]:
            problems.append(f"operations {e.operations}, not restart, reseed, compaction")
        if not e.fresh_process:
            problems.append("the probe did not run in a fresh process")
    if arm.boundary in ("model_change", "none") and compaction is not None:
        problems.append("an unexpected pre-turn compaction")
    if arm.pack:
        sections = e.pack.sections if e.pack else []
        if e.pack is None or e.pack.status == "invalid":
            problems.append("the pack is missing or invalid")
        elif not any(s.included for s in sections):
            problems.append("the pack has no evidence sections")
        if any(count != 1 for count in e.packs_per_request):
            problems.append(f"packs per request {e.packs_per_request}, not exactly one")
    elif any(e.packs_per_request):
        problems.append("a control arm's request carried a pack")
    if not arm.ledger and (any(_ledger_counts(e)) or e.ledger is not UNSET):
        problems.append("a control arm's request carried a ledger")
    if arm.history_tool and e.tools_offered != ["ConversationHistory"]:
        problems.append(f"tools offered {e.tools_offered}, not only ConversationHistory")
    if not arm.history_tool and e.tools_offered:
        problems.append(f"a tool-free arm offered {e.tools_offered}")
    return problems


def _pressure(arm: Arm, e: SampleEvidence) -> list[str]:
    rule = arm.pressure
    if rule is None:
        return []
    problems = []
    if rule.probe_input_tokens is not None and e.probe_input_tokens < rule.probe_input_tokens:
        problems.append(f"probe input {e.probe_input_tokens:,} < {rule.probe_input_tokens:,}")
    if rule.replayed_messages is not None and (
        e.reseed is None or e.reseed.text_messages < rule.replayed_messages
    ):
        problems.append(f"fewer than {rule.replayed_messages} replayed messages")
    if rule.dropped_records is not None and (
        e.reseed is None or e.reseed.dropped_records < rule.dropped_records
    ):
        problems.append(f"fewer than {rule.dropped_records} tool records dropped")
    if rule.compaction_tokens_before is not None and (
        e.compaction is None or e.compaction.tokens_before < rule.compaction_tokens_before
    ):
        problems.append(f"compaction tokensBefore < {rule.compaction_tokens_before:,}")
    if rule.mid_tokens_before is not None and (
        e.mid_trace_compaction is None
        or e.mid_trace_compaction.tokens_before < rule.mid_tokens_before
    ):
        problems.append(f"mid-trace tokensBefore < {rule.mid_tokens_before:,}")
    return problems


def _store(arm: Arm, e: SampleEvidence) -> list[str]:
    # A reseed projects tool records from the sidecar, so a degraded sidecar confounds
    # every reseeding arm (its dropped records would not be the boundary's doing), not
    # only the store arms.
    reseeds = arm.boundary in ("model_change", "restart_switch_compact")
    if not arm.retained and not reseeds:
        return []
    problems = []
    if arm.retained and (e.store is None or e.store.records == 0):
        problems.append(e.store_error or "no retained records")
    if e.tool_history_status != "ok" or e.tool_history_warnings:
        problems.append(f"tool history {e.tool_history_status} {e.tool_history_warnings}")
    if arm.retained and any(c.status == "unavailable" for c in e.history_calls):
        problems.append("a ConversationHistory call was unavailable")
    return problems


def _ledger_counts(e: SampleEvidence) -> list[int]:
    """The ledger messages of each reader request (none recorded: none carried one)."""
    return e.ledgers_per_request if e.ledgers_per_request is not UNSET else []


def _treatment(arm: Arm, e: SampleEvidence, committed: str | None) -> list[str]:
    """The ledger arm: the committed ledger in every request, exactly once, and no
    upkeep during the probe. `committed` is the preparation's final generation."""
    if not arm.ledger:
        return []
    ledger = e.ledger if e.ledger is not UNSET else None
    if ledger is None or ledger.error is not None:
        return [f"no committed ledger was injected ({ledger.error if ledger else 'none'})"]
    problems = []
    if committed is not None and ledger.generation_id != committed:
        problems.append(
            f"generation {ledger.generation_id[:12]} was injected; the preparation "
            f"committed {committed[:12]}"
        )
    counts = _ledger_counts(e)
    if not counts or any(count != 1 for count in counts):
        problems.append(f"ledgers per request {counts}, not exactly one")
    if ledger.operations_after != ledger.operations_before:
        problems.append("upkeep ran during the probe")
    if ledger.upkeep_enabled:
        problems.append("upkeep was enabled in the probe")
    return problems


def classify(
    arm: Arm, evidence: SampleEvidence, *, family: str, committed: str | None = None
) -> Classification:
    """Classify one sample (see the module doc for the order of precedence).
    `committed` (the ledger arm) is the generation its preparation committed."""
    for status, problems in (
        ("store_degraded", _store(arm, evidence)),
        ("boundary_unverified", _boundary(arm, evidence)),
        ("treatment_invalid", _treatment(arm, evidence, committed)),
        ("pressure_unverified", _pressure(arm, evidence) if family in LONG_FAMILIES else []),
    ):
        if problems:
            return Classification(status, problems)  # type: ignore[arg-type]
    return Classification("valid", [])
