"""``--capture-upkeep-output``: owner-only, never overwritten, never inside the checkout,
fictional traces only, never a prompt or a credential."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from continuity.errors import LedgerError
from continuity.memory.ledger import Ledger
from continuity.memory.upkeep_receipts import Capture
from continuity.preparation.capture import capture_folder, capture_paths, write_capture
from tests.conftest import REPO


def test_captures_are_owner_only_and_never_overwritten(tmp_path: Path) -> None:
    folder = capture_folder(str(tmp_path / "diagnostics"), checkout=REPO)
    assert folder == (tmp_path / "diagnostics" / "upkeep-output").resolve()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    paths = capture_paths(folder, repeat=2, trace_id="gen-grant-101", fictional=True)
    assert [p.name for p in paths] == [f"r2-gen-grant-101-p{n}.json" for n in (1, 2, 3)]
    capture = Capture(
        stage=1, outcome="published", completion="{}", validation=None, ledger=Ledger()
    )
    write_capture(paths[0], capture)
    assert stat.S_IMODE(paths[0].stat().st_mode) == 0o600
    document = json.loads(paths[0].read_text())
    assert set(document) == {"schema", "stage", "outcome", "completion", "validation", "ledger"}
    with pytest.raises(LedgerError) as again:
        write_capture(paths[0], capture)
    assert again.value.code == "capture_output_exists"
    with pytest.raises(LedgerError) as planned:
        capture_paths(folder, repeat=2, trace_id="gen-grant-101", fictional=True)
    assert planned.value.code == "capture_output_exists"


@pytest.mark.parametrize(
    ("directory", "code"),
    [
        ("relative/dir", "capture_output_invalid"),
        (str(REPO / "out" / "captures"), "capture_output_inside_checkout"),
        (str(REPO), "capture_output_inside_checkout"),
    ],
)
def test_a_capture_folder_outside_the_rules_is_refused(directory: str, code: str) -> None:
    with pytest.raises(LedgerError) as refused:
        capture_folder(directory, checkout=REPO)
    assert refused.value.code == code


def test_a_symlink_into_the_checkout_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "looks-outside"
    link.symlink_to(REPO / "fixtures")
    with pytest.raises(LedgerError) as refused:
        capture_folder(str(link), checkout=REPO)
    assert refused.value.code == "capture_output_inside_checkout"


def test_a_file_in_place_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(LedgerError) as refused:
        capture_folder(str(tmp_path / "file"), checkout=REPO)
    assert refused.value.code == "capture_output_invalid"


def test_only_fictional_traces_are_captured(tmp_path: Path) -> None:
    with pytest.raises(LedgerError) as refused:
        capture_paths(tmp_path, repeat=1, trace_id="real-mail", fictional=False)
    assert refused.value.code == "capture_output_invalid"
