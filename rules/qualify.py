"""`doit qualify`: the benchmark qualifies its own reliability.

``--list [--group G]`` lists cases; ``--group G``, ``--case NAME``, ``--id FULL_ID``,
``--suite S`` or ``--all`` selects (explicit-only groups only by name, case or id) and
runs one attempt per case, each an evidence package under ``<out>/qualify/``;
``--report`` summarises every attempt so far (`continuity.commands.qualification`).
"""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, TaskSpec, param

__all__ = ["task_qualify"]


def _qualify(**options: Any) -> str:
    from continuity.commands.qualification import QualifyRequest, qualify

    return qualify(QualifyRequest.of(options))


def task_qualify() -> TaskSpec:
    """Qualify the benchmark's own reliability: fault cases with receipts and evidence.

    Explicit-only groups (reliability, slow) run only by --group, --case or --id; --all
    and --suite never select them. Each attempt is an evidence package under
    <out>/qualify/<plan>/<case>/attempt-<n>/; --report summarises them."""
    return {
        "actions": [task_action(_qualify)],
        "params": [
            param("list", bool, False, "list the cases (with --group: that group's)"),
            param("group", str, "", "run (or list) every case of this group"),
            param("case", str, "", "run the one case of this name"),
            param("id", str, "", "run the one case of this full id (<suite>.<group>.<case>)"),
            param("suite", str, "", "run the suite's cases outside explicit-only groups"),
            param("all", bool, False, "run every case outside explicit-only groups"),
            param("report", bool, False, "summarise every attempt so far"),
            OUT,
        ],
        "verbosity": 2,
    }
