"""A gate (`GateFailed`) ends the doit command with exit status 3 and one coded line,
after the task's outputs are written, and the task stays not up to date."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DODO = """
from continuity.errors import GateFailed
from continuity.graph import task_action as wrap

DOIT_CONFIG = {"dep_file": "deps.sqlite3", "backend": "sqlite3", "verbosity": 2}


def _gate():
    open("written.txt", "a").write("x")
    raise GateFailed("accuracy 20.0% is under 50.0%", code="accuracy_below_threshold",
                     location="--fail-under")


def task_gate():
    return {"actions": [wrap(_gate)]}
"""


def test_a_gate_exits_3_with_its_code_after_writing_and_runs_again(tmp_path: Path) -> None:
    (tmp_path / "dodo.py").write_text(DODO)
    for attempt in (1, 2):
        result = subprocess.run(
            [sys.executable, "-m", "doit", "-f", "dodo.py", "gate"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 3, result.stderr
        assert "accuracy_below_threshold: accuracy 20.0% is under 50.0% (at --fail-under)" in (
            result.stderr
        )
        assert "Traceback" not in result.stderr
        assert (tmp_path / "written.txt").read_text() == "x" * attempt
