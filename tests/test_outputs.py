"""`write_output`: atomic, leaves no temp file behind on any failure, sweeps dead ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.outputs import sweep_stale_temp_files, write_output


def dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return int(child.stdout)


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_write_replaces_the_file_and_leaves_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "manifest.json"
    write_output(target, b"one")
    write_output(target, b"two")
    assert target.read_bytes() == b"two" and hidden(target.parent) == []


@pytest.mark.parametrize(
    "failure", [OSError(28, "No space left"), KeyboardInterrupt(), SystemExit(143)]
)
def test_a_failed_or_interrupted_write_removes_its_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    target = tmp_path / "manifest.json"
    target.write_bytes(b"old")
    seen: list[bytes] = []

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        seen.append(Path(src).read_bytes())  # the temp file was written in full
        raise failure

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(type(failure)):
        write_output(target, b"new")
    assert seen == [b"new"]
    assert target.read_bytes() == b"old" and hidden(tmp_path) == []


def test_a_write_interrupted_while_writing_removes_its_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = Path.write_bytes

    def write_half(self: Path, data: bytes) -> int:
        original(self, data[:1])
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_bytes", write_half)
    with pytest.raises(KeyboardInterrupt):
        write_output(tmp_path / "summary.md", b"whole")
    assert list(tmp_path.iterdir()) == []


def test_the_first_write_into_a_folder_sweeps_temp_files_of_dead_processes(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    stale = folder / f".results.json.{dead_pid()}.tmp"
    alive = folder / f".units.json.{os.getppid()}.tmp"  # a live writer's: never touched
    mine = folder / f".x.json.{os.getpid()}.tmp"
    foreign = folder / ".notes.tmp"  # not our naming: not ours to remove
    for path in (stale, alive, mine, foreign):
        path.write_bytes(b"half")
    write_output(folder / "results.json", b"{}")
    assert hidden(folder) == sorted(p.name for p in (alive, mine, foreign))
    stale.write_bytes(b"half")
    assert sweep_stale_temp_files(folder) == [stale]
    assert sweep_stale_temp_files(tmp_path / "missing") == []
