"""A small real run shared by the report tests: one original trace, three arms, two
repeats, so standard deviations, flips and paired comparisons all have data."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from continuity.runner.units.build import build_units
from continuity.runner.units.execution import Execution
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
        # the scripted judge grades every answer
        execution=Execution(judge="openai-codex:gpt-6.1-sol"),
    )
    yield root / "store", root / "out" / "runs" / "base"


@pytest.fixture
def run(base_run: tuple[Path, Path], tmp_path: Path) -> tuple[Store, Path]:
    """A private copy of the shared run (tests may edit its unit files)."""
    store_root, run_dir = base_run
    copy = tmp_path / "runs" / "copy"
    shutil.copytree(run_dir / "units", copy / "units")
    return Store(store_root), copy


@pytest.fixture
def private_run(base_run: tuple[Path, Path], tmp_path: Path) -> tuple[Store, Path]:
    """A private copy of the shared run and of its store: for tests that re-record a
    unit under its own key (an edited answer, re-sealed), which would make every other
    test's copy of that unit read as tampered in the shared store."""
    store_root, run_dir = base_run
    copy = tmp_path / "runs" / "copy"
    shutil.copytree(run_dir / "units", copy / "units")
    shutil.copytree(store_root, tmp_path / "store", symlinks=True)
    return Store(tmp_path / "store"), copy


@pytest.fixture(scope="session")
def mixed_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """Two suites in one run directory, as a chunked plan leaves them: one original
    trace (native, cold-rebuild, continuity-store) and one hard trace (native, ceiling).
    `ceiling` runs on long traces only, so a pooled native baseline would compare
    different trace sets."""
    root = tmp_path_factory.mktemp("mixed-run")
    store = Store(root / "store")
    run_dir = root / "out" / "runs" / "mixed"
    build_units(
        store,
        "original",
        arms="native,cold-rebuild,continuity-store",
        repeats=2,
        traces="harbor-market-stall",
        run_dir=run_dir,
        # opted in: every valid answer gets a verdict
        execution=Execution(judge="scripted-judge"),
    )
    build_units(
        store,
        "hard",
        arms="native,ceiling",
        repeats=2,
        traces="gen-rowing-103",
        probe_limit=6,
        run_dir=run_dir,
        execution=Execution(judge="scripted-judge"),
    )
    yield root / "store", run_dir


@pytest.fixture
def mixed(mixed_base: tuple[Path, Path], tmp_path: Path) -> tuple[Store, Path]:
    """A private copy of the two-suite run and of its store (tests re-seal units)."""
    store_root, run_dir = mixed_base
    copy = tmp_path / "runs" / "mixed"
    shutil.copytree(run_dir / "units", copy / "units")
    return Store(shutil.copytree(store_root, tmp_path / "store")), copy
