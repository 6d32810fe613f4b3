"""The ledger arm's offline mechanism proof (`doit ledger_smoke [--fail-upkeep]`).

A scripted fixture (`mechanism_trace`): a fictional refund conversation whose claim
reference sits in the middle of a long email (a buried retained tool identifier) and
whose refund amount is corrected once, followed by enough later turns that a cold
rebuild keeps neither (the email falls out of the newest-records projection, the
correction out of the last-64 window). The smoke replays it with retained records,
prepares it with three real upkeep stages in fresh processes (the scripted extractor
reading its own request: ``salient`` keeps every line with a reference or an amount),
then asks one probe on the ledger arm and on cold-rebuild in fresh probe children, with
every extraction request and every reader request dumped. It proves:

- the buried identifier and the corrected amount reach the actual upkeep input;
- they reach every outgoing cold reader request, inside the injected ledger and
  nowhere else (the cold-rebuild control's requests hold neither);
- every reader request carries the probe's question once, the ledger once and the
  pack once (current input and effects exactly once).

With ``--fail-upkeep`` every extraction answers invalid JSON: the preparation stays
valid (an allowlisted degradation), the committed ledger is the empty generation 0, the
deterministic pack is still injected (the fallback), the coverage shows a content-free
gap of every offered span, and exactly three extraction requests were sent (no repair).
These are scripted local fixtures, not live provider or mailbox tests.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import msgspec

from continuity.arms import ARMS, LEDGER_ARM, replay_config_for
from continuity.digest import value_digest
from continuity.errors import ContinuityError
from continuity.harness.checkpoints import CheckpointResult
from continuity.memory.ledger import LEDGER_HEADER
from continuity.memory.pack import PACK_HEADER
from continuity.outputs import write_json
from continuity.preparation.prepare import prepare_checkpoint
from continuity.preparation.receipts import Fault, LedgerBinding, PreparationReceipt, Script
from continuity.probes.protocol import probe_turn_text
from continuity.runner.ledger_run import ledger_run
from continuity.sampling.receipts import ProbeRequest
from continuity.store import Store
from continuity.traces.schema import (
    AssistantMessage,
    OwnerMessage,
    ReplayTrace,
    Session,
    ToolCall,
    ToolResult,
    Turn,
)

__all__ = [
    "BURIED",
    "CORRECTED",
    "QUESTION",
    "SUPERSEDED",
    "SmokeReport",
    "mechanism_trace",
    "run_smoke",
]

BURIED = "KQ-48213-ZT"
CORRECTED = "92.30"
SUPERSEDED = "84.50"
QUESTION = "What is the claim reference for the kettle refund, and what is the refund now?"
_LATER_ROUNDS = 40  # later turns, each an owner note, a document read and a reply


class SmokeReport(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = "continuity-ledger-smoke-v1"
    mode: str  # mechanism | fail-upkeep
    passed: bool
    checks: dict[str, bool]
    stage_outcomes: list[str]
    extraction_requests: int
    reader_requests: int
    committed_generation: int
    coverage_gap: int


def _filler(seed: int, words: int) -> str:
    pool = ("parcel", "counter", "window", "ledger", "cupboard", "receipt", "hallway", "shelf")
    return " ".join(f"{pool[(seed + i) % len(pool)]}{(seed * 7 + i) % 89}" for i in range(words))


def _call(call_id: str, tool: str, **arguments: str) -> ToolCall:
    return ToolCall(call_id=call_id, tool=tool, arguments=dict(arguments))


def mechanism_trace() -> ReplayTrace:
    """The fictional fixture (see the module doc)."""
    # The reference sits in the email's second span (its head, which projections and
    # packs keep, does not hold it): the oldest-never-offered reservation reaches it at
    # the third boundary, after the owner's first turn and the email's head.
    paragraphs = [_filler(i, 70) for i in range(12)]
    paragraphs.insert(8, f"Your claim reference is {BURIED}; quote it in every reply.")
    turns: list[Turn] = [
        OwnerMessage(turn_id="t1", text="I need the kettle refund sorted out this week."),
        AssistantMessage(
            turn_id="t2",
            tool_calls=(
                ToolCall(call_id="c0", tool="email_search", arguments={"query": "kettle"}),
            ),
        ),
        ToolResult(
            turn_id="t3",
            call_id="c0",
            tool="email_search",
            tool_kind="email",
            output="Subject: Kettle return\n\n" + "\n\n".join(paragraphs),
        ),
        AssistantMessage(turn_id="t4", text="Found the shop's reply about the kettle return."),
        OwnerMessage(turn_id="t5", text=f"They offered a refund of {SUPERSEDED}."),
        AssistantMessage(turn_id="t6", text="Noted the offered refund."),
        OwnerMessage(
            turn_id="t7", text=f"Correction: the refund is {CORRECTED}, not {SUPERSEDED}."
        ),
        AssistantMessage(turn_id="t8", text="Noted the corrected refund."),
    ]
    for index in range(_LATER_ROUNDS):
        call = f"c{index + 1}"
        turns += [
            OwnerMessage(turn_id=f"o{index}", text=f"Next note: {_filler(index, 12)}."),
            AssistantMessage(
                turn_id=f"a{index}",
                tool_calls=(
                    ToolCall(
                        call_id=call, tool="document_open", arguments={"title": f"note {index}"}
                    ),
                ),
            ),
            ToolResult(
                turn_id=f"r{index}",
                call_id=call,
                tool="document_open",
                tool_kind="document",
                output=_filler(100 + index, 400),
            ),
            AssistantMessage(turn_id=f"b{index}", text=f"Read note {index}."),
        ]
    return ReplayTrace(
        schema_version=1,
        trace_id="ledger-mechanism",
        fictional=True,
        family="original",
        scenario="ledger-mechanism",
        title="A buried claim reference and a corrected refund",
        sessions=(Session(session_id="s1", date="2031-05-06", turns=tuple(turns)),),
    )


def _payloads(path: Path) -> list[list[str]]:
    """The message contents of every dumped request (one request a line)."""
    if not path.exists():
        return []
    return [
        [str(m.get("content", "")) for m in json.loads(line)["messages"]]
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def _probe(store: Store, key: str, arm: str, dump: Path) -> None:
    from continuity.harness.checkpoints import fork
    from continuity.runner.samples import run_probe_process

    request = ProbeRequest(
        arm=arm,
        probe_text=QUESTION,
        probe_index=0,
        parent_pid=os.getpid(),
        dump_requests=str(dump),
    )
    with fork(store, key) as root:
        run_probe_process(root, request)


def _request_checks(requests: list[list[str]], *, fail: bool) -> dict[str, bool]:
    """Every ledger-arm reader request: the question, the ledger and the pack once
    each; the buried id inside the ledger and nowhere else (or, failed, an empty ledger)."""
    turn = probe_turn_text(QUESTION, "")  # two values: a free-text question
    ledgers = [[m for m in r if m.startswith(LEDGER_HEADER)] for r in requests]
    others = [[m for m in r if not m.startswith(LEDGER_HEADER)] for r in requests]
    checks = {
        "reader_requests_seen": bool(requests),
        "question_once_per_request": all(r.count(turn) == 1 for r in requests),
        "ledger_once_per_request": all(len(found) == 1 for found in ledgers),
        "pack_once_per_request": all(
            sum(m.startswith(PACK_HEADER) for m in r) == 1 for r in requests
        ),
    }
    if fail:
        checks["empty_ledger_injected"] = all(
            len(found) == 1 and "- (no entries)" in found[0] for found in ledgers
        )
        return checks
    checks["buried_id_in_the_reader_ledger"] = all(
        len(found) == 1 and BURIED in found[0] for found in ledgers
    )
    checks["buried_id_only_in_the_ledger"] = not any(BURIED in m for r in others for m in r)
    checks["corrected_amount_in_the_reader_ledger"] = all(
        len(found) == 1 and CORRECTED in found[0] for found in ledgers
    )
    return checks


class _Observed(msgspec.Struct, frozen=True):
    """What one smoke run saw: the preparation's receipt and every dumped request."""

    receipt: PreparationReceipt
    upkeep: list[list[str]]
    reader: list[list[str]]
    control: list[list[str]]


def _observe(work: Path, binding: LedgerBinding) -> _Observed:
    """Replay the fixture into a temporary store under `work`, prepare it, probe the
    ledger arm and cold-rebuild, and read back every dumped request.

    Raises:
        ContinuityError: ``ledger_smoke_failed`` when the preparation is invalid.
    """
    from continuity.harness.checkpoints import build_checkpoint

    trace = mechanism_trace()
    digest = value_digest(("continuity-ledger-smoke", trace))
    with tempfile.TemporaryDirectory(dir=work, prefix=".work-") as folder:
        tmp = Path(folder)
        store = Store(tmp / "store")

        def checkpoint(arm: str) -> CheckpointResult:
            config = replay_config_for(ARMS[arm])
            return build_checkpoint(
                store, trace, trace_key=digest, trace_digest=digest, config=config
            )

        prepared = prepare_checkpoint(
            store,
            checkpoint(LEDGER_ARM),
            arm=LEDGER_ARM,
            binding=binding,
            repeat=1,
            enforcement="scripted_cap",
            dump_requests=tmp / "upkeep.jsonl",
        )
        if prepared.checkpoint is None:
            raise ContinuityError(
                f"the preparation is invalid: {prepared.receipt.integrity}",
                code="ledger_smoke_failed",
                location=trace.trace_id,
            )
        _probe(store, prepared.key, LEDGER_ARM, tmp / "ledger.jsonl")
        _probe(store, checkpoint("cold-rebuild").key, "cold-rebuild", tmp / "cold.jsonl")
        return _Observed(
            receipt=prepared.receipt,
            upkeep=_payloads(tmp / "upkeep.jsonl"),
            reader=_payloads(tmp / "ledger.jsonl"),
            control=_payloads(tmp / "cold.jsonl"),
        )


def _checks(seen: _Observed, *, fail: bool) -> dict[str, bool]:
    receipt = seen.receipt
    coverage = receipt.stages[-1].upkeep.coverage
    checks = {
        "preparation_valid": receipt.valid,
        "three_extractions_no_repair": len(seen.upkeep) == 3,
        **_request_checks(seen.reader, fail=fail),
    }
    if fail:
        checks["every_extraction_refused"] = all(
            s.upkeep.outcome == "validation_or_publication" for s in receipt.stages
        )
        checks["content_free_gap"] = coverage is not None and coverage.gap == coverage.offered > 0
        return checks
    checks["buried_id_in_the_upkeep_input"] = any(BURIED in m for r in seen.upkeep for m in r)
    checks["corrected_amount_in_the_upkeep_input"] = any(
        CORRECTED in m for r in seen.upkeep for m in r
    )
    checks["control_lacks_the_buried_id"] = bool(seen.control) and not any(
        BURIED in m for r in seen.control for m in r
    )
    return checks


def run_smoke(
    out_dir: Path, *, fail_upkeep: bool, script: Script = "salient"
) -> tuple[SmokeReport, Path]:
    """Run the mechanism proof in a fresh temporary store under ``<out>/ledger-smoke/``
    (every stage and probe runs, whatever a store already holds; it is removed after);
    write ``<out>/ledger-smoke/<mode>.json``. `script` is the scripted extractor's
    answer (``excerpt`` never reaches the buried id: the checks then fail).

    Raises:
        ContinuityError: ``ledger_smoke_failed`` naming the checks that did not hold (the
            report is written first).
    """
    faults: dict[int, Fault] = dict.fromkeys((1, 2, 3), "invalid_json") if fail_upkeep else {}
    binding = msgspec.structs.replace(ledger_run(faults=faults).binding, script=script)
    work = out_dir / "ledger-smoke"
    work.mkdir(parents=True, exist_ok=True)
    seen = _observe(work, binding)
    checks = _checks(seen, fail=fail_upkeep)
    receipt = seen.receipt
    coverage = receipt.stages[-1].upkeep.coverage
    report = SmokeReport(
        mode="fail-upkeep" if fail_upkeep else "mechanism",
        passed=all(checks.values()),
        checks=checks,
        stage_outcomes=[s.upkeep.outcome for s in receipt.stages],
        extraction_requests=len(seen.upkeep),
        reader_requests=len(seen.reader),
        committed_generation=receipt.final.number if receipt.final else -1,
        coverage_gap=coverage.gap if coverage else 0,
    )
    path = work / f"{report.mode}.json"
    write_json(path, report)
    if not report.passed:
        failed = [name for name, held in checks.items() if not held]
        raise ContinuityError(
            f"{len(failed)} checks did not hold: {', '.join(failed)}",
            code="ledger_smoke_failed",
            location=str(path),
        )
    return report, path
