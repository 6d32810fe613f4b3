"""`doit gc`: garbage-collect the artifact store; `doit verify`: scrub it."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, STORE, FloatOption, IntOption


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
                "type": IntOption("--keep-plans", 0, 1_000_000),
                "default": 20,
                "help": "how many recent plans keep their artifacts alive",
            },
            {
                "name": "grace",
                "long": "grace",
                "type": FloatOption("--grace", 0.0, inclusive=True),
                "default": 3600.0,
                "help": "never remove files younger than this many seconds",
            },
        ],
        "verbosity": 2,
    }


def _verify(store: str, out: str, repair: bool) -> str:
    from continuity.errors import StoreError
    from continuity.outputs import resolve_out_path, write_json
    from continuity.store import Store, verify_store

    out_dir = resolve_out_path(out or None)
    report = verify_store(Store(store or None), repair=repair, out_dir=out_dir)
    path = out_dir / "verify" / "report.json"
    write_json(path, report)
    for finding in report.findings:
        print(f"corrupt {finding.kind} {finding.path}: {finding.problem}", flush=True)
    for ref in report.refs:
        print(f"ref {ref.name}: {ref.status} ({ref.hint})", flush=True)
    print(report.summary(), flush=True)
    if report.unrepaired:
        raise StoreError(
            f"{len(report.unrepaired)} refs could not be rebuilt from the store: "
            + "; ".join(f"{r.name}: {r.hint}" for r in report.unrepaired),
            code="store_repair_incomplete",
            location=str(path),
        )
    if report.corrupt and not repair:
        raise StoreError(
            f"{report.corrupt} corrupt files quarantined; run `doit verify --repair`",
            code="store_corrupt",
            location=str(path),
        )
    return f"verify report at {path}"


def task_verify() -> dict[str, Any]:
    """Check every store object, action entry and ref; quarantine the corrupt (--repair)."""
    return {
        "actions": [task_action(_verify)],
        "params": [
            STORE,
            OUT,
            {
                "name": "repair",
                "long": "repair",
                "type": bool,
                "default": False,
                "help": "also rebuild what the refs need (trace suites); list the rest",
            },
        ],
        "verbosity": 2,
    }
