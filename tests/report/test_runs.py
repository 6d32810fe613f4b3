"""Which runs exist, which is the most recent, `doit aggregate` without `--run`, and a
run that is not there refused alike by every command that reads one."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from continuity.errors import AggregateError
from continuity.report.runs import latest_run, run_names, runs_hint
from tests.conftest import REPO
from tests.graph.test_dodo import doit, doit_command, doit_env


def _unit(runs: Path, run: str, mtime: float) -> None:
    path = runs / run / "units" / "r1-trace-native.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    os.utime(path, (mtime, mtime))


def test_the_most_recent_run_is_the_one_whose_newest_unit_is_newest(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert latest_run(runs) is None and run_names(runs) == []
    assert runs_hint(runs).startswith("no run under")
    _unit(runs, "zeta", 1_000)
    _unit(runs, "alpha", 2_000)
    (runs / "empty" / "units").mkdir(parents=True)  # no unit: not a run to read
    (runs / "stray.txt").write_text("not a run")
    assert run_names(runs) == ["alpha", "zeta"]
    assert latest_run(runs) == runs / "alpha"
    _unit(runs, "zeta", 3_000)  # a later unit written into an older run
    assert latest_run(runs) == runs / "zeta"
    assert runs_hint(runs) == f"runs with units under {runs}: alpha, zeta"


def test_aggregate_reads_the_most_recent_run_and_names_the_runs_on_run_empty(
    tmp_path: Path,
) -> None:
    unit = ("units", "--suite", "original", "--trace", "harbor-market-stall")
    one = ("--arms", "native", "--probe-limit", "1")
    empty = doit(tmp_path, "aggregate", check=False)  # nothing yet
    assert empty.returncode != 0 and "run_empty: no run to aggregate" in empty.stdout
    doit(tmp_path, *unit, *one, "--run", "first")
    doit(tmp_path, *unit, *one, "--run", "second")
    latest = doit(tmp_path, "aggregate")
    assert f"report at {tmp_path / 'out' / 'runs' / 'second' / 'report.html'}" in latest.stdout
    named = doit(tmp_path, "aggregate", "--run", "first")
    assert f"report at {tmp_path / 'out' / 'runs' / 'first' / 'report.html'}" in named.stdout
    scored = doit(tmp_path, "score", "--run", "first")
    assert "run doit aggregate --run first to refresh the report" in scored.stdout
    latest_scored = doit(tmp_path, "score")  # the most recent run, which aggregate reads
    assert str(tmp_path / "out" / "runs" / "second" / "scores") in latest_scored.stdout
    assert "run doit aggregate to refresh the report" in latest_scored.stdout
    missing = doit(tmp_path, "aggregate", "--run", "nosuch", check=False)
    assert missing.returncode != 0
    assert "run_unknown: no run 'nosuch' at " in missing.stdout
    assert "; runs with units under" in missing.stdout
    assert "first, second" in missing.stdout


@pytest.mark.parametrize("command", ["aggregate", "score", "export", "compare"])
def test_a_run_that_is_not_there_is_run_unknown_at_its_option_listing_the_runs(
    tmp_path: Path, command: str
) -> None:
    """Named by --run or --run-dir (compare: --base), a missing run is refused before
    anything is read, located at that option, with the runs under <out>/runs that hold
    units; never the parent of a --run-dir."""
    runs = tmp_path / "out" / "runs"
    _unit(runs, "alpha", 1_000)
    _unit(runs, "zeta", 2_000)
    nowhere = tmp_path / "elsewhere" / "nonexist"
    if command == "compare":
        named = [(["--base", "nosuch", "--head", "alpha"], "--base", "nosuch")]
        named.append((["--base", str(nowhere), "--head", "alpha"], "--base", str(nowhere)))
    else:
        named = [(["--run", "nosuch"], "--run", "nosuch")]
        named.append((["--run-dir", str(nowhere)], "--run-dir", str(nowhere)))
    for args, option, text in named:
        result = doit(tmp_path, command, *args, check=False)
        output = result.stdout + result.stderr
        assert result.returncode != 0 and "Traceback" not in output
        found = re.search(r"^run_unknown: (.*) \(at (.+)\)$", output, re.MULTILINE)
        assert found is not None, output
        message, location = found.groups()
        assert location == option
        assert message.startswith(f"no run {text!r} at ")
        assert message.endswith(f"; runs with units under {runs}: alpha, zeta")
    assert not nowhere.parent.exists()


def test_the_library_calls_refuse_a_missing_run_at_its_path(tmp_path: Path) -> None:
    """Without an option to name, `aggregate_run` and `rescore_run` locate a missing run
    at its path, with the same message."""
    from continuity.report.aggregate import aggregate_run
    from continuity.report.rescore import rescore_run
    from continuity.store import Store

    store = Store(tmp_path / "store")
    _unit(tmp_path / "runs", "alpha", 1_000)
    missing = tmp_path / "runs" / "gone"
    for call in (aggregate_run, rescore_run):
        with pytest.raises(AggregateError) as refused:
            call(store, missing)
        assert (refused.value.code, refused.value.location) == ("run_unknown", str(missing))
        assert refused.value.message == (
            f"no run 'gone' at {missing}; runs with units under {tmp_path / 'runs'}: alpha"
        )


def test_doit_runs_lists_the_runs_with_units_and_names_the_most_recent(tmp_path: Path) -> None:
    none = doit(tmp_path, "runs")
    assert "runs: none under" in none.stdout
    runs = tmp_path / "out" / "runs"
    _unit(runs, "before", 1_000)
    _unit(runs, "after", 2_000)
    (runs / "after" / "report.html").write_text("<html></html>")
    listed = doit(tmp_path, "runs").stdout.splitlines()
    header = next(i for i, line in enumerate(listed) if line.startswith("run "))
    assert listed[header].split() == [
        "run",
        "units",
        "newest",
        "unit",
        "plan",
        "digest",
        "started",
        "report",
    ]
    # Neither run has a run manifest (run.json): no plan digest, no start date.
    assert listed[header + 1].split() == [
        "after",
        "1",
        "1970-01-01",
        "00:33",
        "-",
        "-",
        "report.html",
    ]
    assert listed[header + 2].split() == ["before", "1", "1970-01-01", "00:16", "-", "-", "-"]
    assert listed[-1] == (
        f"runs: 2 under {runs}; doit aggregate without --run reads the most recent, after"
    )


def _arm_facts(rows: dict[str, str]) -> None:
    assert "long suites only" in rows["ceiling"]
    assert "lookup mode only" in rows["native-lookup"]
    assert "not at this revision" in rows["pack+stubs"]
    assert "retained store + pack, ConversationHistory" in rows["continuity-pack-cold"]
    assert "probe input >= 150,000 tokens (long traces)" in rows["native"]
    assert "when named (opt-in: paid extractions)" in rows["continuity-ledger-cold"]
    assert "extracted ledger" in rows["continuity-ledger-cold"]


def _arms(tmp_path: Path, columns: str | None) -> list[str]:
    """``doit arms`` through a pipe, with $COLUMNS set to `columns` (None: unset)."""
    env = {k: v for k, v in doit_env(tmp_path).items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run(
        doit_command("arms"), cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def test_doit_arms_lists_every_arm_with_what_it_crosses_and_where_it_runs(
    tmp_path: Path,
) -> None:
    """Not a terminal: 100 columns, so one block per arm, every line within them; a wide
    terminal ($COLUMNS) gets the table, one line per arm."""
    from continuity.arms import ARMS, LOOKUP_ONLY, OPT_IN

    lines = _arms(tmp_path, None)
    assert max(len(line) for line in lines) <= 100
    start = next(i for i, line in enumerate(lines) if line == "native")
    blocks = "\n".join(lines[start:]).split("\n\n")
    rows = {b.splitlines()[0]: " ".join(b.split()) for b in blocks[: len(ARMS)]}
    assert set(rows) == set(ARMS)
    _arm_facts(rows)
    runnable = [a for a in ARMS.values() if a.available and a.id not in LOOKUP_ONLY | OPT_IN]
    assert lines[-2].startswith(
        f"arms: {len(ARMS)} defined, {len(runnable)} run by --arms all, "
        f"{len(OPT_IN)} more only when named (continuity-ledger-cold)"
    )
    wide = _arms(tmp_path, "400")
    header = next(i for i, line in enumerate(wide) if line.startswith("arm "))
    table = {line.split()[0]: line for line in wide[header + 1 : header + 1 + len(ARMS)]}
    assert set(table) == set(ARMS)
    _arm_facts(table)
