"""``python -m continuity``: doit with the coded checks first, from any directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from continuity.__main__ import dodo_file, main
from tests.conftest import REPO

CODED = re.compile(r"^[a-z][a-z0-9_]*: .+ \(at .+\)$")


def run(cwd: Path, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`tool` (``continuity`` or ``doit``) as ``python -m``, in `cwd`."""
    env = {**os.environ}
    env.pop("CI", None)
    return subprocess.run(
        [sys.executable, "-m", tool, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def assert_refused(result: subprocess.CompletedProcess[str], code: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == "", result
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"{code}: ") and CODED.match(line), line


def test_an_empty_value_from_another_directory_is_one_coded_line(tmp_path: Path) -> None:
    result = run(tmp_path, "continuity", "-f", str(REPO / "dodo.py"), "units", "--suite", "")
    assert_refused(result, "option_empty")
    assert "--suite" in result.stderr
    assert not (tmp_path / "env-out").exists()


def test_plain_doit_from_another_directory_cannot_catch_it(tmp_path: Path) -> None:
    """Why the front door exists: doit splits its arguments before it imports dodo.py and
    reads pyproject.toml's loader only in the checkout (README, Failure behaviour)."""
    result = run(tmp_path, "doit", "-f", str(REPO / "dodo.py"), "units", "--suite", "")
    assert "IndexError" in result.stderr, result


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("units", "--nope"), "option_unknown"),
        (("run", "verify", "--repair=yes"), "option_value_unexpected"),
        (("gc", "--keep-plans"), "option_value_missing"),
        (("nosuchtask",), "task_unknown"),
        (("units", "--suite="), "option_empty"),
        (("lookup_budget", "--fixed-budget-sha256", " "), "lookup_empty_fixed_budget_sha256"),
        (("lookup_budget", "--fixed-budget-sha256="), "lookup_empty_fixed_budget_sha256"),
    ],
)
def test_usage_errors_from_another_directory(
    tmp_path: Path, args: tuple[str, ...], code: str
) -> None:
    assert_refused(run(tmp_path, "continuity", *args), code)


@pytest.mark.parametrize("args", [("list",), ("help", "units"), ("info", "gc")])
def test_valid_commands_behave_exactly_like_doit_in_the_checkout(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    front = run(tmp_path, "continuity", *args)
    plain = run(REPO, "doit", *args)
    assert front.returncode == plain.returncode and front.returncode in (0, 1), front
    assert front.stdout == plain.stdout and front.stderr == plain.stderr
    # doit list shows the tasks; help and info name the task they describe
    assert ("offline_contract" if args == ("list",) else args[-1]) in front.stdout


def test_a_task_runs_from_another_directory(tmp_path: Path) -> None:
    store = tmp_path / "store"
    result = run(tmp_path, "continuity", "gc", "--dry-run", "--store", str(store))
    assert result.returncode == 0, result
    assert "gc would remove" in result.stdout and store.is_dir()


def test_an_unusable_environment_store_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONTINUITY_STORE", "/dev/null/x")
    assert main(["list"]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("store_path_invalid: ") and captured.out == ""


def test_in_process_refusals_return_the_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["units", "--suite", " "]) == 2
    assert capsys.readouterr().err.startswith("option_empty: ")
    assert main(["units", "--no-such-option"]) == 2
    assert capsys.readouterr().err.startswith("option_unknown: ")
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("0.")


def test_the_dodo_file_is_the_checkouts_and_f_is_honoured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert dodo_file() == REPO / "dodo.py"
    monkeypatch.delitem(sys.modules, "dodo", raising=False)  # doit imports it as "dodo"
    other = tmp_path / "dodo.py"
    other.write_text('def task_elsewhere():\n    return {"actions": None, "doc": "other"}\n')
    assert main(["-f", str(other), "list"]) == 0
    assert capsys.readouterr().out.split() == ["elsewhere", "other"]


def test_the_console_script_is_the_front_door() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["continuity"] == "continuity.__main__:main"


def test_help_from_another_directory_is_the_grouped_overview(tmp_path: Path) -> None:
    """doit reads its command plugins from a pyproject.toml in the working directory
    only: the front door hands it the grouped help itself."""
    result = run(tmp_path, "continuity", "help")
    assert result.returncode == 0, result
    assert result.stdout.startswith("doit TASK [options] runs a task; doit help TASK")
    assert "\nEveryday:\noffline_contract " in result.stdout
