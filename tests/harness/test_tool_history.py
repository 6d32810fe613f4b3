"""The tool-history sidecar: records, 16 KiB heads, and the pinned artifact root."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from continuity.digest import digest_bytes
from continuity.harness.tool_history import ROOT_MISMATCH, ToolHistory, retained_head


def test_records_keep_size_digest_and_the_first_16_kib(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    history = ToolHistory.create(root / "tool-history", artifact_root=root)
    small = history.record(call_id="c1", tool="email_search", kind="email", output="short")
    big_text = "".join(f"line {i:06d} of a long booking pack\n" for i in range(1200))
    big = history.record(call_id="c2", tool="document_open", kind="document", output=big_text)
    assert (small.bytes, small.truncated, small.retained_bytes) == (5, False, 5)
    assert big.bytes == len(big_text.encode()) > 16384
    assert big.truncated and big.retained_bytes == 16384
    assert big.digest == digest_bytes(big_text.encode())
    assert history.retained(big) == big_text[:16384]
    assert (root / big.path).read_bytes() == big_text.encode()[:16384]
    reopened = ToolHistory.open(root / "tool-history", artifact_root=root)
    assert reopened.status == "ok" and reopened.records() == [small, big]


def test_a_head_never_splits_a_character() -> None:
    text = "a" * 16383 + "é" + "tail"
    head = retained_head(text)
    assert len(head) == 16383 and head.decode() == "a" * 16383
    assert retained_head("é" * 10) == ("é" * 10).encode()


def test_opened_from_another_root_it_degrades_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "original"
    history = ToolHistory.create(root / "tool-history", artifact_root=root)
    history.record(call_id="c1", tool="web_fetch", kind="web", output="page")
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    with caplog.at_level(logging.WARNING, logger="continuity.harness"):
        moved = ToolHistory.open(copy / "tool-history", artifact_root=copy)
    assert moved.status == "degraded"
    assert moved.warnings == [ROOT_MISMATCH]
    assert moved.records() == [] and moved.record_count == 1  # not served, not lost
    assert ROOT_MISMATCH in caplog.text
    back = ToolHistory.open(root / "tool-history", artifact_root=root)
    assert back.status == "ok" and len(back.records()) == 1
