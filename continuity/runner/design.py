"""Checks that a hard trace's design shows up in the contexts the arms build.

- The early account reference is in the native reader's probe request and not in the
  cold-rebuild one (it sits outside both the last-64 window and the tool projection).
- The identifier at the head of the oversized booking pack survives cold rebuild (its
  record is among the newest projected ones and the head is retained).
- The secret never appears in the retained store, the continuity pack, the extracted
  ledger, or any receipt (replay receipts, sample evidence, pack and preparation
  receipts), not even as an 8-character run.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from continuity.arms import ARMS, LEDGER_ARM, replay_config_for
from continuity.errors import ContinuityError
from continuity.memory.ledger import LEDGER_HEADER
from continuity.memory.pack import PACK_HEADER
from continuity.memory.retained import RetainedStore
from continuity.store import Store
from continuity.traces.schema import RedactionExpectation, ToolIdentifierExpectation, Trace
from continuity.traces.suites import SuiteItem

if TYPE_CHECKING:
    from continuity.zygote import ZygotePool

__all__ = ["DesignReport", "check_design"]


class DesignReport(msgspec.Struct, frozen=True):
    trace_id: str
    account_in_native: bool
    account_in_cold: bool
    head_identifier_in_cold: bool
    secret_runs_found: list[str]


def _role_value(trace: Trace, role: str) -> str:
    for probe in trace.probes:
        if probe.design_role == role and isinstance(probe.expectation, ToolIdentifierExpectation):
            return probe.expectation.answer.value
    raise ContinuityError(f"no {role} probe", code="design_check_failed", location=trace.trace_id)


def _secret(trace: Trace) -> str:
    for probe in trace.probes:
        if isinstance(probe.expectation, RedactionExpectation):
            return probe.expectation.secret.value
    raise ContinuityError("no redaction probe", code="design_check_failed", location=trace.trace_id)


def _injected(payloads: str, header: str) -> list[str]:
    """The injected messages (pack or ledger) of every dumped request."""
    return [
        str(message["content"])
        for line in payloads.splitlines()
        for message in json.loads(line)["messages"]
        if str(message.get("content", "")).startswith(header)
    ]


def _sampled(
    store: Store, trace: Trace, item: SuiteItem, zygotes: ZygotePool | None
) -> tuple[dict[str, str], list[str]]:
    """One valid sample of each design arm, with its requests dumped: the dumps by arm,
    and each sample record as JSON.

    Raises:
        ContinuityError: ``design_check_failed`` for a sample that is not valid.
    """
    from continuity.runner.samples import sample_arm

    payloads: dict[str, str] = {}
    evidence_texts: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for arm_id in ("native", "cold-rebuild", "continuity-pack-cold", LEDGER_ARM):
            dump = Path(tmp) / f"{arm_id}.jsonl"
            record, _ = sample_arm(
                store, trace, item, ARMS[arm_id], dump_requests=dump, zygotes=zygotes
            )
            if record.classification.status != "valid":
                raise ContinuityError(
                    f"{arm_id} sample is {record.classification.status}: "
                    f"{record.classification.reasons}",
                    code="design_check_failed",
                    location=trace.trace_id,
                )
            payloads[arm_id] = dump.read_text(encoding="utf-8")
            evidence_texts.append(msgspec.json.encode(record).decode())
    return payloads, evidence_texts


def _retained_and_receipt(store: Store, trace: Trace, item: SuiteItem) -> tuple[str, str]:
    """The retained store's records and the replay receipt of the store arm's
    checkpoint, as text."""
    from continuity.harness.checkpoints import build_checkpoint, fork
    from continuity.harness.workspace import Workspace

    checkpoint = build_checkpoint(
        store,
        trace,
        trace_key=item.key,
        trace_digest=item.digest,
        config=replay_config_for(ARMS["continuity-store"]),
    )
    with fork(store, checkpoint.key) as root:
        workspace = Workspace(root)
        retained = RetainedStore(workspace.retained_path, readonly=True)
        try:
            retained_text = "\n".join(text for *_, text in retained.records())
        finally:
            retained.close()
        return retained_text, workspace.receipt_path.read_text(encoding="utf-8")


def check_design(
    store: Store, trace: Trace, item: SuiteItem, *, zygotes: ZygotePool | None = None
) -> DesignReport:
    """Run native, cold-rebuild, pack and ledger samples with request dumps and check
    the design. With `zygotes`, each sample's probe child is forked from this thread's
    zygote (`continuity.runner.samples.sample_arm`).

    Raises:
        ContinuityError: ``design_check_failed`` naming what did not hold.
    """
    account = _role_value(trace, "account_reference")
    head = _role_value(trace, "head_identifier")
    secret = _secret(trace)
    runs = {secret[i : i + 8] for i in range(len(secret) - 7)}
    payloads, evidence_texts = _sampled(store, trace, item, zygotes)
    pack_texts = _injected(payloads["continuity-pack-cold"], PACK_HEADER)
    ledger_texts = _injected(payloads[LEDGER_ARM], LEDGER_HEADER)
    retained_text, receipt_text = _retained_and_receipt(store, trace, item)
    places = {
        "retained store": retained_text,
        "pack": "\n".join(pack_texts),
        "ledger": "\n".join(ledger_texts),
        "receipts": "\n".join([receipt_text, *evidence_texts]),
    }
    found = sorted(f"{name}" for name, text in places.items() if any(r in text for r in runs))
    report = DesignReport(
        trace_id=trace.trace_id,
        account_in_native=account in payloads["native"],
        account_in_cold=account in payloads["cold-rebuild"],
        head_identifier_in_cold=head in payloads["cold-rebuild"],
        secret_runs_found=found,
    )
    problems = []
    if not report.account_in_native:
        problems.append("the account reference is missing from the native context")
    if report.account_in_cold:
        problems.append("the account reference survived cold rebuild")
    if not report.head_identifier_in_cold:
        problems.append("the head-of-pack identifier did not survive cold rebuild")
    if found:
        problems.append(f"the secret appears in: {', '.join(found)}")
    if not pack_texts:
        problems.append("no pack reached the pack arm's requests")
    if not ledger_texts:
        problems.append("no ledger reached the ledger arm's requests")
    if problems:
        raise ContinuityError(
            "; ".join(problems), code="design_check_failed", location=trace.trace_id
        )
    return report
