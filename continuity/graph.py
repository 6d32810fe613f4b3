"""The doit side of the content-addressed build: configuration, reporter, task wrapper.

doit writes its dependency database only when a run ends, so after a SIGKILL it forgets
finished tasks; the store does not. No task declares a `file_dep`, `task_dep` or
`targets`: every task decides "up to date" through an `uptodate` callable that asks the
store whether the artifacts its options name exist and verify (docs/architecture.md,
"The build graph"). doit's database keeps only those callables' saved values.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from doit.exceptions import TaskFailed
from doit.reporter import ConsoleReporter

from continuity.errors import EXIT_GATE, ContinuityError, GateFailed
from continuity.interrupts import raise_if_interrupted
from continuity.store import resolve_store_path

__all__ = [
    "DEP_FILE_NAME",
    "LocatingReporter",
    "doit_config",
    "project_path",
    "task_action",
]

DEP_FILE_NAME = "doit-deps.sqlite3"


class LocatingReporter(ConsoleReporter):  # type: ignore[misc]
    """doit's console reporter, except that a task skipped as up to date also says where
    its results are: the line its ``meta["uptodate_line"]`` gives for its options, so
    every task ends with its location line, run or not."""

    def skip_uptodate(self, task: Any) -> None:
        super().skip_uptodate(task)
        line = (task.meta or {}).get("uptodate_line")
        if line is None or task.name.startswith("_"):
            return
        try:
            text = line(task.options or {})
        except (ContinuityError, OSError):  # bad options: the check said "not current"
            return
        self.write(f"{text}\n")


def doit_config(store: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``DOIT_CONFIG`` for dodo.py: the dependency file lives inside the store, in the
    sqlite3 backend (which tolerates a second doit process)."""
    root = resolve_store_path(store)
    root.mkdir(parents=True, exist_ok=True)
    return {
        "dep_file": str(root / DEP_FILE_NAME),
        "backend": "sqlite3",
        "reporter": LocatingReporter,
        "default_tasks": ["offline_contract"],
        "verbosity": 2,
    }


def task_action(run: Callable[..., str | None]) -> Callable[..., TaskFailed | None]:
    """Wrap a task body so a `ContinuityError` fails the task with its code and location
    (one line, no traceback) and the task's last line says where the results are."""

    def action(**options: Any) -> TaskFailed | None:
        try:
            where = run(**options)
        except GateFailed as exc:
            raise_if_interrupted()
            # The outputs are written; the gate decides the exit status (3). doit saves
            # its database on the way out (Runner.run_all's finally), and the task stays
            # not up to date, so the gate is checked again on the next run.
            print(f"{exc.code}: {exc.message} (at {exc.location})", file=sys.stderr, flush=True)
            raise SystemExit(EXIT_GATE) from None
        except ContinuityError as exc:
            raise_if_interrupted()
            for issue in getattr(exc, "issues", ())[1:]:
                print(f"also {issue}", flush=True)
            return TaskFailed(f"{exc.code}: {exc.message} (at {exc.location})")
        except Exception:  # not mapped: re-raised, unless an interrupt explains it
            # Cleanup cut short by Ctrl-C or SIGTERM may raise its own error (a server
            # that went away): the interrupt, not that error, is what happened.
            raise_if_interrupted()
            raise
        raise_if_interrupted()  # an interrupt something swallowed still stops the command
        if where:
            print(where, flush=True)
        return None

    action.__name__ = getattr(run, "__name__", "action")
    action.__doc__ = run.__doc__
    return action


def project_path(*parts: str) -> Path:
    """A path inside the checkout (next to dodo.py)."""
    return Path(__file__).resolve().parents[1].joinpath(*parts)
