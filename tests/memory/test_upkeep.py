"""One upkeep operation through the real journal: every outcome class, with the
scripted extractor standing in for the model only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import AdmissionStopped
from continuity.memory.ledger_prompt import EXTRACTION_SYSTEM
from continuity.memory.ledger_store import LedgerStore
from continuity.memory.retained import RetainedStore
from continuity.memory.upkeep import UpkeepContext, run_upkeep
from continuity.memory.upkeep_receipts import Capture, reason_class
from continuity.messages import Usage
from continuity.preparation.extractor import ScriptedExtractor
from continuity.preparation.receipts import Fault

pytestmark = pytest.mark.anyio


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    retained = tmp_path / "continuity" / "retained.sqlite3"
    store = RetainedStore(retained)
    for index in range(8):
        store.retain_owner(
            f"Owner rule {index}: keep it short.", source="owner", entry_ref=f"o{index}"
        )
        store.retain_tool_result(
            f"Reference RX-{index:03d}\n\n" + "body " * 300,
            tool="doc_read",
            tool_kind="document",
            entry_ref=f"t{index}",
        )
    store.close()
    return retained, tmp_path / "continuity" / "ledger.sqlite3"


def _context(
    roots: tuple[Path, Path], stage: int = 1, fault: Fault | None = None, **change: Any
) -> UpkeepContext:
    retained, ledger = roots
    fields: dict[str, Any] = {
        "ledger_path": ledger,
        "retained_path": retained,
        "session_id": "session-1",
        "stage": stage,
        "tag": f"p{stage}",
        "extractor": ScriptedExtractor(
            stage, fault=fault, name="openai-codex", model="gpt-6-luna", reservation=128_000
        ),
        "extractor_model": "openai-codex:gpt-6-luna",
        "enforcement": "scripted_cap",
    }
    return UpkeepContext(**{**fields, **change})


async def test_a_first_pass_publishes_and_the_second_scripted_pass_is_analysis_only(
    roots: tuple[Path, Path],
) -> None:
    first = await run_upkeep(_context(roots, 1))
    assert (first.state, first.kind, first.outcome, first.outcome_class) == (
        "settled",
        "bootstrap",
        "published",
        "ok",
    )
    assert first.generation_after is not None and first.generation_after.entries > 0
    assert (first.input_reservation, first.output_reservation) == (128_000, 4_096)
    assert first.usage is not None and first.usage.total_input < 128_000
    second = await run_upkeep(_context(roots, 2))
    assert (second.kind, second.outcome) == ("incremental", "analysis_only")
    assert second.generation_after == second.generation_before == first.generation_after
    assert second.offer is not None and second.offer.spans > 0  # it was offered something
    store = LedgerStore.open(roots[1], owner="session-1")
    assert [op.state for op in store.operations()] == ["settled", "settled"]


@pytest.mark.parametrize(
    ("fault", "outcome", "reported", "overrun"),
    [
        ("invalid_json", "validation_or_publication", True, (False, False)),
        ("empty_output", "empty_output", True, (False, False)),
        ("output_overrun", "output_overrun", True, (False, True)),
        ("input_overrun", "input_overrun", True, (True, False)),
        ("stream_overrun", "output_aborted", False, (False, False)),
        ("unavailable", "unavailable", False, (False, False)),
    ],
)
async def test_a_failed_extraction_is_a_degradation_never_a_generation(
    roots: tuple[Path, Path], fault: Fault, outcome: str, reported: bool, overrun: tuple[bool, bool]
) -> None:
    observed: list[Usage] = []
    receipt = await run_upkeep(_context(roots, 1, fault, observe=observed.append))
    assert (receipt.state, receipt.outcome, receipt.outcome_class) == (
        "settled",
        outcome,
        "provider",
    )
    assert (receipt.usage is not None) == reported
    assert (receipt.input_overrun, receipt.output_overrun) == overrun
    assert receipt.generation_after == receipt.generation_before  # nothing published
    assert receipt.coverage is not None and receipt.coverage.gap == receipt.offer.spans  # type: ignore[union-attr]
    if not reported:  # no usage: the whole input reservation is charged to admission
        assert observed == [Usage(input=128_000)]
    if fault == "invalid_json":
        assert receipt.validation == "not_json" or receipt.validation == "schema"


async def test_a_refused_dispatch_is_released_and_consumes_nothing(
    roots: tuple[Path, Path],
) -> None:
    def stopped() -> None:
        raise AdmissionStopped("no new call", location="ledger")

    receipt = await run_upkeep(_context(roots, 1, admission=stopped))
    assert (receipt.state, receipt.outcome, receipt.outcome_class) == (
        "released",
        "upkeep_dispatch_rejected",
        "capacity",
    )
    again = await run_upkeep(_context(roots, 2))
    assert again.kind == "bootstrap"  # a released row consumes neither bootstrap nor offers


async def test_a_fourth_operation_is_over_quota(roots: tuple[Path, Path]) -> None:
    for stage in (1, 2, 3):
        assert (await run_upkeep(_context(roots, stage))).outcome_class == "ok"
    fourth = await run_upkeep(_context(roots, 4))
    assert (fourth.state, fourth.outcome) == ("released", "ledger_quota_budget")


async def test_a_small_model_window_is_model_headroom(roots: tuple[Path, Path]) -> None:
    receipt = await run_upkeep(_context(roots, 1, context_window=100_000))
    assert (receipt.state, receipt.outcome) == ("released", "model_headroom")


async def test_every_span_offered_is_already_covered(tmp_path: Path) -> None:
    retained = tmp_path / "continuity" / "retained.sqlite3"
    store = RetainedStore(retained)
    store.retain_owner("Just one thing.", source="owner", entry_ref="o1")
    store.close()
    context = (retained, tmp_path / "continuity" / "ledger.sqlite3")
    assert (await run_upkeep(_context(context, 1))).outcome == "published"
    assert (await run_upkeep(_context(context, 2))).outcome == "already_covered"


async def test_an_empty_retained_store_is_no_source(tmp_path: Path) -> None:
    retained = tmp_path / "continuity" / "retained.sqlite3"
    RetainedStore(retained).close()
    receipt = await run_upkeep(_context((retained, tmp_path / "continuity" / "l.sqlite3"), 1))
    assert (receipt.state, receipt.outcome) == ("released", "no_source")


@pytest.mark.parametrize(
    ("change", "outcome"),
    [
        ({"enabled": False}, "disabled"),
        ({"extractor": None}, "model_unavailable"),
        ({"require_request_cap": True, "enforcement": "advisory_cap"}, "request_cap_unsupported"),
    ],
)
async def test_a_configuration_skip_writes_no_row(
    roots: tuple[Path, Path], change: dict[str, Any], outcome: str
) -> None:
    receipt = await run_upkeep(_context(roots, 1, **change))
    assert (receipt.state, receipt.outcome, receipt.outcome_class) == ("none", outcome, "config")
    assert not roots[1].exists()


async def test_a_missing_retained_store_is_history_unavailable(tmp_path: Path) -> None:
    missing = (tmp_path / "none.sqlite3", tmp_path / "ledger.sqlite3")
    assert (await run_upkeep(_context(missing, 1))).outcome == "history_unavailable"


async def test_a_read_only_ledger_folder_is_read_only(roots: tuple[Path, Path]) -> None:
    folder = roots[1].parent
    folder.chmod(0o555)
    try:
        assert (await run_upkeep(_context(roots, 1))).outcome == "read_only"
    finally:
        folder.chmod(0o755)


async def test_another_sessions_store_is_unowned(roots: tuple[Path, Path]) -> None:
    LedgerStore.create(roots[1], owner="another").close()
    assert (await run_upkeep(_context(roots, 1))).outcome == "unowned_store"


async def test_a_corrupt_store_is_an_unknown_outcome(roots: tuple[Path, Path]) -> None:
    roots[1].write_bytes(b"garbage")
    receipt = await run_upkeep(_context(roots, 1))
    assert (receipt.outcome, receipt.outcome_class) == ("ledger_store_corrupt", "unknown")


async def test_capture_keeps_the_completion_and_ledger_never_the_prompt(
    roots: tuple[Path, Path],
) -> None:
    captured: list[Capture] = []
    await run_upkeep(_context(roots, 1, capture=captured.append))
    [capture] = captured
    data = msgspec.json.encode(capture).decode()
    assert capture.completion and capture.ledger is not None and capture.validation is None
    assert EXTRACTION_SYSTEM[:60] not in data
    assert "prompt" not in msgspec.to_builtins(capture)


def test_reason_classes_follow_the_seed_lists() -> None:
    assert reason_class("published") == reason_class("analysis_only") == "ok"
    assert reason_class("output_aborted") == "provider"
    assert reason_class("no_source") == "capacity"
    assert reason_class("read_only") == "config"
    assert reason_class("uncertain") == "uncertain"
    assert reason_class("something_new") == "unknown"


async def test_receipts_are_content_free(roots: tuple[Path, Path]) -> None:
    """A real receipt holds no record text, no completion and no prompt."""
    receipt = await run_upkeep(_context(roots, 1))
    assert receipt.outcome == "published"
    text = msgspec.json.encode(receipt).decode()
    assert "Owner rule" not in text and "Reference RX-" not in text
    assert EXTRACTION_SYSTEM[:40] not in text and "key_identifier" not in text
