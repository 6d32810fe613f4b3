"""The blake3 file checker doit uses for fixture file_deps, and the task wrapper."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from doit.exceptions import TaskFailed

from continuity.errors import UsageError
from continuity.graph import Blake3Checker, doit_config, file_blake3, task_action


def test_touch_without_change_is_unchanged_and_edits_are_caught(tmp_path: Path) -> None:
    path = tmp_path / "fixture.json"
    path.write_text("alpha")
    checker = Blake3Checker()
    state = checker.get_state(str(path), None)
    assert state is not None and state[2] == file_blake3(path)
    assert not checker.check_modified(str(path), os.stat(path), state)
    os.utime(path, (1, 1))  # touched: new mtime, same bytes
    assert not checker.check_modified(str(path), os.stat(path), state)
    path.write_text("alphb")  # same size, different bytes
    os.utime(path, (2, 2))
    assert checker.check_modified(str(path), os.stat(path), state)
    path.write_text("longer text")
    assert checker.check_modified(str(path), os.stat(path), state)
    assert checker.check_modified(str(path), os.stat(path), "md5-state-from-elsewhere")
    fresh = checker.get_state(str(path), None)
    assert checker.get_state(str(path), fresh) is None  # unchanged: keep the saved state


def test_doit_config_puts_the_dep_file_in_the_store(tmp_path: Path) -> None:
    config = doit_config(tmp_path / "s")
    assert config["dep_file"] == str(tmp_path / "s" / "doit-deps.sqlite3")
    assert config["backend"] == "sqlite3"
    assert config["check_file_uptodate"] is Blake3Checker


def test_task_action_turns_typed_errors_into_task_failures(capsys: Any) -> None:
    def broken() -> str:
        raise UsageError("nope", code="seeds_invalid", location="--seeds")

    def fine() -> str:
        return "results at /somewhere"

    failure = task_action(broken)()
    assert isinstance(failure, TaskFailed)
    assert "seeds_invalid: nope (at --seeds)" in str(failure)
    assert task_action(fine)() is None
    assert "results at /somewhere" in capsys.readouterr().out
