"""`doit compare` end to end: real doit processes over copies of a real offline run."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuity.store import Store
from tests.graph.test_dodo import doit
from tests.report.test_compare import edit_units, make_runs, repeat_units, wrong_where_correct


@pytest.fixture
def runs(base_run: tuple[Path, Path], tmp_path: Path) -> tuple[Store, Path, Path]:
    return make_runs(base_run, tmp_path)


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_identical_runs_exit_0_and_end_with_where_the_outputs_are(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    result = doit(tmp_path, "compare", "--base", "base", "--head", "head", "--fail-on-regression")
    folder = tmp_path / "out" / "compare" / "base-vs-head"
    assert _last_line(result.stdout).endswith(
        f"0 flipped, 0 probes regressed; compare.json, compare.md and compare.html in {folder}"
    )
    assert {p.name for p in folder.iterdir()} == {"compare.json", "compare.md", "compare.html"}


def test_an_injected_regression_exits_3_after_writing_the_outputs(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    _, base, head = runs
    for run_dir in (base, head):  # enough discordant pairs for significance
        repeat_units(run_dir, shift=2)
    edit_units(head, wrong_where_correct)
    folder = tmp_path / "gate"
    compare = ("compare", "--base", "base", "--head", str(head), "--out-dir", str(folder))
    for gate in (("--fail-on-regression",), ("--max-drop", "10")):
        result = doit(tmp_path, *compare, *gate, check=False)
        assert result.returncode == 3, result.stdout + result.stderr
        coded = [line for line in result.stderr.splitlines() if line.startswith("regression_")]
        assert len(coded) == 1 and coded[0].endswith(f"(at {gate[0]})"), result.stderr
        assert "regression_found: significant drop" in coded[0]
        assert "original/native -15.4 pp" in coded[0]
        assert "Traceback" not in result.stderr
        assert _last_line(result.stdout).endswith(f"compare.html in {folder}")
        assert (folder / "compare.html").is_file()
    within = doit(tmp_path, *compare, "--max-drop", "30")  # a 15.4 pp drop is allowed
    assert "flipped" in _last_line(within.stdout)
    plain = doit(tmp_path, *compare)  # no gate asked for: the drop is reported, exit 0
    assert "24 flipped, 6 probes regressed" in plain.stdout


def test_a_missing_run_and_a_bad_option_are_refused_with_their_codes(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    missing = doit(tmp_path, "compare", "--base", "nosuch", "--head", "head", check=False)
    assert missing.returncode == 1
    assert "run_unknown: no run 'nosuch' at " in missing.stdout
    assert "runs with units under" in missing.stdout and "base, head" in missing.stdout
    assert "(at --base)" in missing.stdout
    unnamed = doit(tmp_path, "compare", "--base", "base", check=False)
    assert unnamed.returncode == 1 and "(at --head)" in unnamed.stdout
    for value, why in (("-2", "-2 is not at least 0"), ("abc", "'abc' is not a finite")):
        bad = doit(
            tmp_path,
            "compare",
            "--base",
            "base",
            "--head",
            "head",
            f"--max-drop={value}",
            check=False,
        )
        assert bad.returncode == 2 and bad.stdout == "", bad
        assert bad.stderr.startswith(f"option_invalid: {why}") and "(at --max-drop)" in bad.stderr
    assert not (tmp_path / "out" / "compare").exists()
