"""`doit gc`: garbage-collect the artifact store."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import STORE


def _gc(store: str, dry_run: bool, keep_plans: int, grace: float) -> str:
    from continuity.store import Store, collect_garbage

    report = collect_garbage(
        Store(store or None), keep_plans=keep_plans, grace_seconds=grace, dry_run=dry_run
    )
    return report.summary()


def task_gc() -> dict[str, Any]:
    """Remove store objects unreachable from refs and recent plans (--dry-run to preview)."""
    return {
        "actions": [task_action(_gc)],
        "params": [
            STORE,
            {
                "name": "dry_run",
                "long": "dry-run",
                "type": bool,
                "default": False,
                "help": "list what would be removed; remove nothing",
            },
            {
                "name": "keep_plans",
                "long": "keep-plans",
                "type": int,
                "default": 20,
                "help": "how many recent plans keep their artifacts alive",
            },
            {
                "name": "grace",
                "long": "grace",
                "type": float,
                "default": 3600.0,
                "help": "never remove files younger than this many seconds",
            },
        ],
        "verbosity": 2,
    }
