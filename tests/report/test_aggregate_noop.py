"""`doit aggregate` through doit: up to date when nothing changed (location line, nothing
rewritten), run again when something did, and the ``--fail-under`` accuracy gate."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from continuity.errors import EXIT_GATE
from continuity.plan.pricing import default_catalog_path
from tests.graph.test_dodo import doit

OUTPUTS = ("report.html", "results.json", "summary.md")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A small run made by `doit units` (one trace, two arms, one probe each)."""
    doit(
        tmp_path,
        "units",
        "--suite",
        "original",
        "--trace",
        "harbor-market-stall",
        "--arms",
        "native,cold-rebuild",
        "--probe-limit",
        "1",
        "--run",
        "small",
    )
    return tmp_path / "out" / "runs" / "small"


def _states(run: Path) -> dict[str, tuple[int, int]]:
    return {name: ((run / name).stat().st_mtime_ns, (run / name).stat().st_ino) for name in OUTPUTS}


def _ran(result_stdout: str) -> bool:
    """doit prints ``.  aggregate`` when it runs the action, ``-- aggregate`` when not."""
    lines = result_stdout.splitlines()
    if "-- aggregate" in lines:
        return False
    assert ".  aggregate" in lines, result_stdout
    return True


def test_up_to_date_prints_its_location_and_rewrites_nothing(tmp_path: Path, run_dir: Path) -> None:
    first = doit(tmp_path, "aggregate", "--run", "small")
    assert _ran(first.stdout)
    before = _states(run_dir)
    again = doit(tmp_path, "aggregate", "--run", "small")
    assert not _ran(again.stdout)
    assert again.stdout.splitlines()[-1] == (
        f"aggregate: small up to date (2 units; unit files, scorer, pricing and report code "
        f"unchanged); report at {run_dir / 'report.html'}"
    )
    assert _states(run_dir) == before
    # The same run named by directory is another option set, but the same key.
    by_dir = doit(tmp_path, "aggregate", "--run-dir", str(run_dir))
    assert not _ran(by_dir.stdout) and _states(run_dir) == before


def test_a_changed_input_or_a_deleted_report_runs_it_again(tmp_path: Path, run_dir: Path) -> None:
    doit(tmp_path, "aggregate", "--run", "small")
    # A unit rewritten (atomic replace, as units are written).
    unit = sorted((run_dir / "units").glob("*.json"))[0]
    copy = unit.with_suffix(".tmp")
    shutil.copyfile(unit, copy)
    os.replace(copy, unit)
    assert _ran(doit(tmp_path, "aggregate", "--run", "small").stdout)
    assert not _ran(doit(tmp_path, "aggregate", "--run", "small").stdout)
    # Another scorer, then back: each change of option is a change of key.
    assert _ran(doit(tmp_path, "aggregate", "--run", "small", "--scorer", "original").stdout)
    assert _ran(doit(tmp_path, "aggregate", "--run", "small").stdout)
    # Another pricing catalog.
    catalog = tmp_path / "catalog.json"
    shutil.copyfile(default_catalog_path(), catalog)
    priced = ("aggregate", "--run", "small", "--pricing", str(catalog))
    assert _ran(doit(tmp_path, *priced).stdout)
    assert not _ran(doit(tmp_path, *priced).stdout)
    catalog.write_bytes(catalog.read_bytes().replace(b'"note": "', b'"note": "edited: '))
    assert _ran(doit(tmp_path, *priced).stdout)
    # The report deleted.
    (run_dir / "report.html").unlink()
    assert _ran(doit(tmp_path, *priced).stdout)
    assert (run_dir / "report.html").is_file()


def test_a_new_or_removed_unit_runs_it_again(tmp_path: Path, run_dir: Path) -> None:
    doit(tmp_path, "aggregate", "--run", "small")
    doit(
        tmp_path,
        *("units", "--suite", "original", "--trace", "harbor-market-stall"),
        *("--arms", "compaction-1", "--probe-limit", "1", "--run", "small"),
    )
    added = doit(tmp_path, "aggregate", "--run", "small")
    assert _ran(added.stdout) and "aggregate: 3 units" in added.stdout
    next(iter(sorted((run_dir / "units").glob("*compaction-1*.json")))).unlink()
    removed = doit(tmp_path, "aggregate", "--run", "small")
    assert _ran(removed.stdout) and "aggregate: 2 units" in removed.stdout


def test_fail_under_passes_above_and_exits_3_below_even_when_up_to_date(
    tmp_path: Path, run_dir: Path
) -> None:
    passed = doit(tmp_path, "aggregate", "--run", "small", "--fail-under", "0")
    assert passed.returncode == 0 and _ran(passed.stdout)
    assert passed.stdout.splitlines()[-1].startswith("aggregate: every arm at or above 0 % ")
    assert passed.stdout.splitlines()[-1].endswith(f"results at {run_dir / 'results.json'}")
    before = _states(run_dir)
    for _ in range(2):  # the gate is evaluated again while the reports stay current
        failed = doit(tmp_path, "aggregate", "--run", "small", "--fail-under", "100", check=False)
        assert failed.returncode == EXIT_GATE, failed.stdout + failed.stderr
        assert "accuracy_below_threshold: " in failed.stderr
        assert "(at --fail-under)" in failed.stderr and "Traceback" not in failed.stderr
        assert "native in original: " in failed.stderr
        assert "small up to date (2 units;" in failed.stdout
        assert _states(run_dir) == before
    # Without the gate the run is still up to date.
    assert not _ran(doit(tmp_path, "aggregate", "--run", "small").stdout)


@pytest.mark.parametrize("value", ["100.5", "-1", "sixty", "nan", "inf"])
def test_fail_under_refuses_a_value_that_is_no_percentage(tmp_path: Path, value: str) -> None:
    refused = doit(tmp_path, "aggregate", "--fail-under", value, check=False)
    assert refused.returncode == 2  # a usage error, distinct from the gate's 3
    output = refused.stdout + refused.stderr
    assert "option_invalid: " in output and "(at --fail-under)" in output
    assert "Traceback" not in output
