"""doit's configuration, the task graph it is given (none), and the task wrapper."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from doit.exceptions import TaskFailed
from doit.loader import generate_tasks

import dodo
from continuity.errors import UsageError
from continuity.graph import doit_config, task_action


def test_no_task_declares_a_file_or_task_dependency() -> None:
    """Skips come from the store, never from doit's own graph: a `file_dep`, `task_dep`,
    `targets`, `calc_dep` or `setup` would be a second, unstated source of "up to date"
    (docs/architecture.md, "The build graph")."""
    tasks = [
        task
        for name, factory in inspect.getmembers(dodo, inspect.isfunction)
        if name.startswith("task_")
        for task in generate_tasks(name[5:], factory(), factory.__doc__)
    ]
    assert len(tasks) >= 30
    declared = [
        t.name
        for t in tasks
        if t.file_dep or t.task_dep or t.targets or t.calc_dep or t.setup_tasks
    ]
    assert declared == []


def test_doit_config_puts_the_dep_file_in_the_store(tmp_path: Path) -> None:
    config = doit_config(tmp_path / "s")
    assert config["dep_file"] == str(tmp_path / "s" / "doit-deps.sqlite3")
    assert config["backend"] == "sqlite3"
    assert "check_file_uptodate" not in config  # no file_dep to check (test above)


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
