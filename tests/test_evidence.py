"""Sample classification: every failure class, forced."""

from __future__ import annotations

import msgspec
import pytest

from continuity.arms import ARMS
from continuity.evidence import classify
from continuity.harness.compaction import CompactionEvent, Reason
from continuity.harness.reseed import ReseedEvent
from continuity.memory.pack import PackReceipt, PackSection
from continuity.memory.retained import RetainedStats
from continuity.messages import Usage
from continuity.sampling.receipts import HistoryCall, LedgerInjection, SampleEvidence

READER = "openai-codex:gpt-6-luna"
ALTERNATE = "openai-codex:gpt-6.1-sol"


def _compaction(tokens: int, reason: Reason = "proactive") -> CompactionEvent:
    return CompactionEvent(
        reason=reason,
        tokens_before=tokens,
        tokens_after=900,
        summarized_messages=300,
        kept_messages=4,
        split_turn=False,
        summary_requests=1,
        usage=Usage(),
        entry_id="e1",
    )


RESEED = ReseedEvent(
    from_model=ALTERNATE,
    to_model=READER,
    text_messages=64,
    projected_records=5,
    dropped_records=70,
    projected_bytes=60_000,
    tool_history_status="ok",
    history_tool_hint=False,
    entry_id="e9",
)
PACK = PackReceipt(
    status="ok",
    budget_tokens=8000,
    total_tokens=7000,
    sections=[PackSection("owner", 3, 0, 900)],
    omitted_credential_results=1,
    uncertain_overlap=0,
)
LEDGER = LedgerInjection(
    generation=2,
    generation_id="c" * 64,
    entries=12,
    tokens=700,
    operations_before=3,
    operations_after=3,
)
STORE = RetainedStats(
    records=170, owner_records=100, tool_records=70, omitted_tool_results=1, retained_bytes=800_000
)


def valid(arm_id: str) -> SampleEvidence:
    arm = ARMS[arm_id]
    operations: list[str] = []
    reseed = compaction = mid = None
    if arm.boundary == "restart_switch_compact":
        operations.append("restart")
    switches = arm.boundary in ("model_change", "restart_switch_compact")
    if switches:
        operations.append("model_change")
        reseed = RESEED
    if arm.boundary in (
        "compaction",
        "compaction_mid_and_probe",
        "ceiling",
        "restart_switch_compact",
    ):
        operations.append("compaction")
        compaction = _compaction(220_000, "ceiling" if arm.boundary == "ceiling" else "proactive")
    if arm.mid_trace_compaction:
        mid = _compaction(110_000, "manual")
    return SampleEvidence(
        arm=arm_id,
        probe_index=0,
        trace_id="gen-grant-101",
        fresh_process=True,
        history_model=ALTERNATE if switches else READER,
        reader_model=READER,
        operations=operations,
        reseed=reseed,
        compaction=compaction,
        mid_trace_compaction=mid,
        mid_run_compactions=[],
        tools_offered=["ConversationHistory"] if arm.history_tool else [],
        history_calls=[HistoryCall("search", "succeeded", 900)] if arm.history_tool else [],
        store=STORE if arm.retained else None,
        store_error=None,
        tool_history_status="ok",
        tool_history_warnings=[],
        pack=PACK if arm.pack else None,
        packs_per_request=[1, 1, 1] if arm.pack else [0],
        requests=3 if arm.history_tool else 1,
        probe_input_tokens=226_000,
        usage=Usage(),
        compaction_usage=Usage(),
        answer="UNKNOWN",
        ledger=LEDGER if arm.ledger else msgspec.UNSET,
        ledgers_per_request=[1, 1, 1] if arm.ledger else msgspec.UNSET,
    )


@pytest.mark.parametrize("arm_id", [a for a in ARMS if ARMS[a].available])
def test_a_well_formed_sample_is_valid(arm_id: str) -> None:
    assert classify(ARMS[arm_id], valid(arm_id), family="hard").status == "valid"


def _replace(evidence: SampleEvidence, **changes: object) -> SampleEvidence:
    return msgspec.structs.replace(evidence, **changes)


CASES = [
    (
        "native",
        {"operations": ["compaction"], "compaction": _compaction(250_000)},
        "boundary_unverified",
    ),
    ("native", {"history_model": ALTERNATE}, "boundary_unverified"),
    ("native", {"probe_input_tokens": 149_999}, "pressure_unverified"),
    ("cold-rebuild", {"reseed": None, "operations": []}, "boundary_unverified"),
    (
        "cold-rebuild",
        {"reseed": msgspec.structs.replace(RESEED, dropped_records=31)},
        "pressure_unverified",
    ),
    (
        "cold-rebuild",
        {"reseed": msgspec.structs.replace(RESEED, text_messages=63)},
        "pressure_unverified",
    ),
    ("cold-rebuild", {"packs_per_request": [1]}, "boundary_unverified"),
    ("compaction-1", {"compaction": None, "operations": []}, "boundary_unverified"),
    ("compaction-1", {"compaction": _compaction(149_999)}, "pressure_unverified"),
    ("compaction-2", {"mid_trace_compaction": None}, "boundary_unverified"),
    (
        "compaction-2",
        {"mid_trace_compaction": _compaction(79_999, "manual")},
        "pressure_unverified",
    ),
    ("compaction-2", {"compaction": _compaction(39_999)}, "pressure_unverified"),
    ("ceiling", {"compaction": _compaction(220_000, "proactive")}, "boundary_unverified"),
    ("ceiling", {"compaction": _compaction(199_999, "ceiling")}, "pressure_unverified"),
    (
        "restart-switch-compact",
        {"operations": ["model_change", "restart", "compaction"]},
        "boundary_unverified",
    ),
    ("restart-switch-compact", {"fresh_process": False}, "boundary_unverified"),
    ("continuity-store", {"store": None, "store_error": "history_unavailable"}, "store_degraded"),
    ("continuity-store", {"store": msgspec.structs.replace(STORE, records=0)}, "store_degraded"),
    (
        "continuity-store",
        {
            "tool_history_status": "degraded",
            "tool_history_warnings": ["history_artifact_root_mismatch"],
        },
        "store_degraded",
    ),
    (
        "continuity-store",
        {"history_calls": [HistoryCall("search", "unavailable", 0)]},
        "store_degraded",
    ),
    (
        "continuity-store",
        {"tools_offered": ["ConversationHistory", "web_fetch"]},
        "boundary_unverified",
    ),
    ("continuity-store-compaction", {"compaction": None, "operations": []}, "boundary_unverified"),
    # The smallest-trigger arms compact proactively, never at the ceiling.
    ("compaction-1", {"compaction": _compaction(220_000, "ceiling")}, "boundary_unverified"),
    (
        "continuity-store-compaction",
        {"compaction": _compaction(220_000, "ceiling")},
        "boundary_unverified",
    ),
    (
        "restart-switch-compact",
        {"compaction": _compaction(220_000, "ceiling")},
        "boundary_unverified",
    ),
    # A degraded sidecar confounds every reseed, not only the store arms'.
    *[
        (
            arm_id,
            {"tool_history_status": "degraded", "tool_history_warnings": ["artifact_missing"]},
            "store_degraded",
        )
        for arm_id in ("cold-rebuild", "restart-switch-compact", "continuity-pack-cold")
    ],
    # Pressure failures of the store and pack arms.
    (
        "continuity-store",
        {"reseed": msgspec.structs.replace(RESEED, dropped_records=31)},
        "pressure_unverified",
    ),
    (
        "continuity-store-compaction",
        {"compaction": _compaction(149_999)},
        "pressure_unverified",
    ),
    (
        "continuity-pack-cold",
        {"reseed": msgspec.structs.replace(RESEED, text_messages=63)},
        "pressure_unverified",
    ),
    (
        "restart-switch-compact",
        {"reseed": msgspec.structs.replace(RESEED, dropped_records=31)},
        "pressure_unverified",
    ),
    (
        "continuity-pack-cold",
        {"store": None, "store_error": "history_unavailable"},
        "store_degraded",
    ),
    ("continuity-pack-cold", {"pack": None}, "boundary_unverified"),
    (
        "continuity-pack-cold",
        {"pack": msgspec.structs.replace(PACK, sections=[PackSection("owner", 0, 3, 0)])},
        "boundary_unverified",
    ),
    ("continuity-pack-cold", {"packs_per_request": [1, 2, 1]}, "boundary_unverified"),
    # The ledger arm: its treatment, and no ledger in a control.
    ("continuity-ledger-cold", {"ledger": msgspec.UNSET}, "treatment_invalid"),
    (
        "continuity-ledger-cold",
        {"ledger": LedgerInjection(error="ledger_unowned")},
        "treatment_invalid",
    ),
    ("continuity-ledger-cold", {"ledgers_per_request": [1, 0, 1]}, "treatment_invalid"),
    ("continuity-ledger-cold", {"ledgers_per_request": [1, 2, 1]}, "treatment_invalid"),
    ("continuity-ledger-cold", {"ledgers_per_request": []}, "treatment_invalid"),
    (
        "continuity-ledger-cold",
        {"ledger": msgspec.structs.replace(LEDGER, operations_after=4)},
        "treatment_invalid",
    ),
    (
        "continuity-ledger-cold",
        {"ledger": msgspec.structs.replace(LEDGER, upkeep_enabled=True)},
        "treatment_invalid",
    ),
    ("continuity-ledger-cold", {"packs_per_request": [1, 1, 0]}, "boundary_unverified"),
    ("continuity-pack-cold", {"ledgers_per_request": [1, 1, 1]}, "boundary_unverified"),
    ("cold-rebuild", {"ledger": LEDGER}, "boundary_unverified"),
    (
        "continuity-pack-cold",
        {"pack": msgspec.structs.replace(PACK, status="invalid", reason="headroom")},
        "boundary_unverified",
    ),
]


@pytest.mark.parametrize(("arm_id", "changes", "expected"), CASES)
def test_each_failure_is_classified(arm_id: str, changes: dict[str, object], expected: str) -> None:
    result = classify(ARMS[arm_id], _replace(valid(arm_id), **changes), family="hard")
    assert result.status == expected and result.reasons


def test_pressure_applies_to_long_traces_only() -> None:
    low = _replace(valid("native"), probe_input_tokens=13_000)
    assert classify(ARMS["native"], low, family="original").status == "valid"
    assert classify(ARMS["native"], low, family="hard-distractors").status == (
        "pressure_unverified"
    )


def test_a_pack_overflow_is_recorded_not_invalid() -> None:
    overflow = msgspec.structs.replace(
        PACK, status="overflow", sections=[PackSection("tool", 20, 40, 2800)]
    )
    evidence = _replace(valid("continuity-pack-cold"), pack=overflow)
    assert classify(ARMS["continuity-pack-cold"], evidence, family="hard").status == "valid"


def test_the_ledger_injected_must_be_the_generation_its_preparation_committed() -> None:
    arm = ARMS["continuity-ledger-cold"]
    evidence = valid(arm.id)
    assert classify(arm, evidence, family="hard", committed="c" * 64).status == "valid"
    other = classify(arm, evidence, family="hard", committed="d" * 64)
    assert other.status == "treatment_invalid"
    assert "the preparation committed dddddddddddd" in other.reasons[0]
