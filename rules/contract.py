"""`doit offline_contract`: the offline end-to-end contract CI runs."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, STORE, TaskSpec


def _run(**options: Any) -> str:
    from continuity.commands.offline_contract import OfflineContractRequest, offline_contract

    return offline_contract(OfflineContractRequest.of(options))


def task_offline_contract() -> TaskSpec:
    """Run the offline contract (all default suites, scripted models) and write its report."""
    return {
        "actions": [task_action(_run)],
        "params": [STORE, OUT],
        "verbosity": 2,
    }
