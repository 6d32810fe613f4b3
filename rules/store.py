"""`doit gc`: garbage-collect the artifact store; `doit verify`: scrub it
(`continuity.commands.store_upkeep`)."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, STORE, FloatOption, IntOption, TaskSpec, param


def _gc(**options: Any) -> str:
    from continuity.commands.store_upkeep import GcRequest, gc

    return gc(GcRequest.of(options))


def task_gc() -> TaskSpec:
    """Remove store objects unreachable from refs and recent plans (--dry-run to preview)."""
    return {
        "actions": [task_action(_gc)],
        "params": [
            STORE,
            param("dry_run", bool, False, "list what would be removed; remove nothing"),
            param(
                "keep_plans",
                IntOption("--keep-plans", 0, 1_000_000),
                20,
                "how many recent plans keep their artifacts alive",
            ),
            param(
                "grace",
                FloatOption("--grace", 0.0, inclusive=True),
                3600.0,
                "never remove files younger than this many seconds",
            ),
            param(
                "shared_store",
                str,
                "",
                "collect this shared store (a directory or s3://bucket/prefix) instead of "
                "--store: its refs and the --keep-plans newest plans clients recorded are "
                "the roots",
            ),
        ],
        "verbosity": 2,
    }


def _verify(**options: Any) -> str:
    from continuity.commands.store_upkeep import VerifyRequest, verify

    return verify(VerifyRequest.of(options))


def task_verify() -> TaskSpec:
    """Check every store object, action entry and ref; quarantine the corrupt (--repair)."""
    return {
        "actions": [task_action(_verify)],
        "params": [
            STORE,
            OUT,
            param(
                "repair",
                bool,
                False,
                "also rebuild what the refs need (trace suites, checkpoints); list the rest",
            ),
            param(
                "shared_store",
                str,
                "",
                "scrub this shared store (a directory or s3://bucket/prefix) instead of "
                "--store; corrupt files move under its quarantine/",
            ),
        ],
        "verbosity": 2,
    }
