"""A small real run shared by the report tests: one original trace, three arms, two
repeats, so standard deviations, flips and paired comparisons all have data."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from continuity.runner.units import build_units
from continuity.store import Store


@pytest.fixture(scope="session")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    root = tmp_path_factory.mktemp("report-run")
    store = Store(root / "store")
    build_units(
        store,
        "original",
        arms="native,cold-rebuild,continuity-store",
        repeats=2,
        traces="harbor-market-stall",
        run_dir=root / "out" / "runs" / "base",
    )
    yield root / "store", root / "out" / "runs" / "base"


@pytest.fixture
def run(base_run: tuple[Path, Path], tmp_path: Path) -> tuple[Store, Path]:
    """A private copy of the shared run (tests may edit its unit files)."""
    store_root, run_dir = base_run
    copy = tmp_path / "runs" / "copy"
    shutil.copytree(run_dir / "units", copy / "units")
    return Store(store_root), copy
