"""`doit lookup_budget`: its options and one call
(`continuity.commands.lookup_sizing.lookup_budget`): a fresh lookup sizing inventory and
policy, or a fixed-budget sizing of a holdout source."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.holdout import SELECTION_PARAMS, SOURCE_PARAMS
from rules.params import STORE, NewDirOption, SeedsOption, TaskSpec, param

__all__ = ["task_lookup_budget"]


def _budget(**options: Any) -> str:
    from continuity.commands.lookup_sizing import LookupBudgetRequest, lookup_budget

    return lookup_budget(LookupBudgetRequest.of(options))


def task_lookup_budget() -> TaskSpec:
    """Measure a lookup sizing inventory, or size a holdout source at a fixed budget.

    Legacy: every reference path of the corpus is an action in the store (a rerun
    reuses them and takes seconds, a killed one resumes); a policy is derived (never the
    frozen one) and written with the inventory and a summary to --output.
    --fixed-budget-sha256 SHA with a holdout source (--manifest, --manifest-sha256,
    --statistical-spec) and --selection-seed N [--per-group K] sizes each role x
    selected conversation x probe at the frozen policy's budget (ten rounds, unchanged
    deadlines; --policy names another frozen policy file): every slot records its
    observed initial context and admission, measured in a private scratch store that is
    removed; records are keyed in the store. It prints budget.json's sha256.
    Results: --output (policy.json, inventory.json, summary.md; or budget.json, summary.md).
    """
    return {
        "actions": [task_action(_budget)],
        "params": [
            param(
                "output",
                NewDirOption(
                    "--output", exists="lookup_output_exists", invalid="lookup_output_invalid"
                ),
                "",
                "a directory that does not exist yet",
            ),
            param("suites", str, "", "corpus suites (default original,hard,hard-distractors)"),
            param("seeds", SeedsOption("--seeds"), "", "generated-suite seeds (default 101-108)"),
            *SOURCE_PARAMS,
            *SELECTION_PARAMS,
            param(
                "fixed_budget_sha256",
                str,
                None,
                "fixed-budget sizing of a holdout: the sha256 of the frozen policy's raw "
                "bytes (fixtures/lookup/budget-v4.json: 8 calls, 126,976 bytes)",
            ),
            param(
                "policy",
                str,
                "",
                "fixed-budget sizing: another frozen policy file whose bytes hash to "
                "--fixed-budget-sha256",
            ),
            param(
                "reader_model",
                str,
                "",
                "fixed-budget sizing: the paid reader it prices, provider:model (default "
                "the scripted binding's reader, Sol; measured offline either way)",
            ),
            STORE,
        ],
        "verbosity": 2,
    }
