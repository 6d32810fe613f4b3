"""`doit compare_preflight`: its options (typed as
`continuity.commands.preflight_runs.ComparePreflightRequest`), and one call
(`continuity.commands.preflight_runs.compare_preflight`)."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.holdout import SELECTION_PARAMS, SOURCE_PARAMS
from rules.params import STORE, TaskSpec, param
from rules.roles import REGISTRATION_PARAMS


def _preflight(**options: Any) -> str:
    from continuity.commands.preflight_runs import ComparePreflightRequest, compare_preflight

    return compare_preflight(ComparePreflightRequest.of(options))


def task_compare_preflight() -> TaskSpec:
    """Prepare every registered slot once in a private root: tree limits, dry restore, times.

    Runs only the offline preparation child of each role x suite x trace slot (no probe,
    no model, no authorization; safe in CI) and exits non-zero with
    lookup_preparation_invalid when a slot is not eligible, after writing the report.
    Give either --registration FILE --sha256 S (the registered workload, each role in its
    registered build) or a frozen holdout source (--manifest F --manifest-sha256 S
    --statistical-spec F --selection-seed N [--per-group K]: every role x selected
    trace, prepared by this checkout from the frozen trace's bytes).

    Results: <output>/preflight.json (default $CONTINUITY_OUT/preflight/<digest16>/, or
    preflight/holdout-<selection digest16>/).
    """
    return {
        "actions": [task_action(_preflight)],
        "params": [
            *REGISTRATION_PARAMS,
            *SOURCE_PARAMS,
            *SELECTION_PARAMS,
            param(
                "output",
                str,
                "",
                "a new absolute directory for preflight.json, outside both checkouts "
                "(default $CONTINUITY_OUT/preflight/<registration digest16>)",
            ),
            STORE,
        ],
        "verbosity": 2,
    }
