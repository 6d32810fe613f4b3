"""`doit holdout_validate`, `holdout_overlap`, `holdout_freeze` and `holdout_select`: their
options and one call each (`continuity.commands.holdouts`).

A holdout source is given as ``--manifest F --manifest-sha256 S --statistical-spec F``
(`SOURCE_PARAMS`), and a selection as ``--selection-seed N [--per-group K]``
(`SELECTION_PARAMS`); other task families that take a holdout reuse both lists.
"""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import STORE, DirOption, IntOption, Param, TaskSpec, param

__all__ = [
    "OVERLAP_OUTPUT",
    "SELECTION_PARAMS",
    "SOURCE_PARAMS",
    "task_holdout_freeze",
    "task_holdout_overlap",
    "task_holdout_select",
    "task_holdout_validate",
]

_MAX_SEED = 10**18 - 1  # continuity.holdout.selection.MAX_SEED (imported lazily there)
_NO_SEED = -1
_MAX_PER_GROUP = 1_000_000

SOURCE_PARAMS: list[Param] = [
    param("manifest", str, "", "the holdout manifest (JSON), e.g. DIR/manifest.json"),
    param("manifest_sha256", str, "", "the sha256 of the manifest's bytes (64 hex digits)"),
    param("statistical_spec", str, "", "the statistical spec (JSON): groups and selection"),
]
SELECTION_PARAMS: list[Param] = [
    param(
        "selection_seed",
        IntOption("--selection-seed", 0, _MAX_SEED, code="holdout_selection_seed_invalid"),
        _NO_SEED,
        "the preregistered selection seed, 0 to 10^18-1 (no default: give it explicitly, "
        "the same to budget, estimate, registration and plan)",
    ),
    param(
        "per_group",
        IntOption("--per-group", 1, _MAX_PER_GROUP, code="holdout_per_group_invalid"),
        0,
        "families selected per group, at most the smallest group (default: the spec's, 2)",
    ),
]
OVERLAP_OUTPUT = param(
    "output",
    DirOption("--output", "holdout_output_invalid"),
    "",
    "directory for overlap.json and overlap.md (created if missing)",
)


def _validate(**options: Any) -> str:
    from continuity.commands.holdouts import HoldoutSourceRequest, validate_holdout

    return validate_holdout(HoldoutSourceRequest.of(options))


def _overlap(**options: Any) -> str:
    from continuity.commands.holdouts import HoldoutOverlapRequest, holdout_overlap

    return holdout_overlap(HoldoutOverlapRequest.of(options))


def _freeze(**options: Any) -> str:
    from continuity.commands.holdouts import HoldoutFreezeRequest, freeze_holdout

    return freeze_holdout(HoldoutFreezeRequest.of(options))


def _select(**options: Any) -> str:
    from continuity.commands.holdouts import select_holdout
    from continuity.plan.request import HoldoutRequest

    return select_holdout(HoldoutRequest.of(options))


def task_holdout_validate() -> TaskSpec:
    """Check an external holdout source: manifest, spec and every trace (see --help).

    The manifest's bytes must hash to --manifest-sha256; the manifest and the spec must
    be well formed; every family's group declared and holding at least the spec's
    per_group families; every trace file inside the manifest's directory, hashing to its
    sha256 and valid as an imported trace whose trace_id is its family id. Prints the
    families per group, traces and probes; writes nothing.
    """
    return {"actions": [task_action(_validate)], "params": [*SOURCE_PARAMS], "verbosity": 2}


def task_holdout_overlap() -> TaskSpec:
    """Check that no holdout value, id or phrase appears in the project's own references.

    The holdout's expected values, ids and three-word phrases (of probe texts and values)
    are compared with the original and generated suites (seeds 101-108), the generator's
    literals, the prompts, the lookup souls and the calibration suites. Writes
    OUTPUT/overlap.json and OUTPUT/overlap.md (content-free: locations, references and
    hashes) and fails with holdout_overlap_found when anything overlaps.
    """
    return {
        "actions": [task_action(_overlap)],
        "params": [*SOURCE_PARAMS, OVERLAP_OUTPUT],
        "verbosity": 2,
    }


def task_holdout_freeze() -> TaskSpec:
    """Freeze a validated holdout source into the store (see --help).

    Re-validates the source, requires a clean overlap report for the same manifest and
    spec made against the current references (--overlap), stores every trace and writes
    the freeze record (tooling and runtime digests bound) under the ref
    holdout/<manifest sha256>/<spec sha256>. Idempotent: a rerun writes nothing new.
    """
    return {
        "actions": [task_action(_freeze)],
        "params": [
            *SOURCE_PARAMS,
            param("overlap", str, "", "the clean overlap.json doit holdout_overlap wrote"),
            STORE,
        ],
        "verbosity": 2,
    }


def task_holdout_select() -> TaskSpec:
    """Show which families a preregistered seed selects from a frozen holdout.

    Loads the freeze (tooling, runtime and every trace hash verified) and applies
    seeded-sha256-rank-v1 with --selection-seed (required) and --per-group: the selected
    ids per group, the count of sealed spares, and the selection digest that plans and
    policies bind. Writes nothing.
    """
    return {
        "actions": [task_action(_select)],
        "params": [*SOURCE_PARAMS, *SELECTION_PARAMS, STORE],
        "verbosity": 2,
    }
