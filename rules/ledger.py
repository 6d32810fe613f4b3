"""`doit ledger_smoke`: the ledger arm's offline mechanism proof."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, TaskSpec, param


def _smoke(**options: Any) -> str:
    from continuity.commands.ledger_check import LedgerSmokeRequest, ledger_smoke

    return ledger_smoke(LedgerSmokeRequest.of(options))


def task_ledger_smoke() -> TaskSpec:
    """Prove the ledger arm's mechanism offline on a scripted fixture (see --help).

    A fictional refund conversation whose claim reference is buried in the middle of a
    long email and whose amount is corrected once is replayed, prepared by three upkeep
    stages in fresh processes and probed on the ledger arm and on cold-rebuild, with
    every extraction and reader request dumped. The smoke checks that the buried id and
    the corrected amount reach the actual upkeep input and every outgoing cold reader
    request (inside the ledger; the control has neither), with the question, the ledger
    and the pack exactly once per request. --fail-upkeep makes every extraction answer
    invalid JSON: the empty ledger and the deterministic pack still reach the reader,
    the coverage keeps a content-free gap and no repair call is made. It runs in a
    temporary store under <out>/ledger-smoke/ and writes <mode>.json there; a failed
    check is ledger_smoke_failed.
    """
    return {
        "actions": [task_action(_smoke)],
        "params": [
            param(
                "fail_upkeep",
                bool,
                False,
                "every extraction answers invalid JSON: the fallback and the gap, no repair",
            ),
            OUT,
        ],
        "verbosity": 2,
    }
