"""External frozen holdout sources: validate, check overlap, freeze, load and select.

A source is the triple ``{manifest, manifest sha256, statistical spec}``
(`source_from_options`). `validate_source` checks it (``doit holdout_validate``);
`check_overlap` compares what it asks and expects with the project's own references
(``doit holdout_overlap``); `freeze_source` stores it with its tooling and runtime digests
(``doit holdout_freeze``); `load_frozen` finds and verifies the freeze; `select_frozen`
applies ``seeded-sha256-rank-v1``; `holdout_binding` and `selected_traces` are what
plans, budgets and estimates take from it.
"""

from __future__ import annotations

from continuity.holdout.binding import (
    check_holdout_repeats,
    check_selection,
    holdout_binding,
    refuse_explicit_traces,
    selected_traces,
)
from continuity.holdout.freeze import (
    FreezeResult,
    FrozenHoldout,
    freeze_source,
    load_frozen,
    runtime_digest,
    tooling_digest,
    trace_key,
)
from continuity.holdout.overlap import check_overlap, read_report, write_report
from continuity.holdout.references import References, project_references
from continuity.holdout.schema import (
    MANIFEST_SCHEMA,
    SELECTION_ALGORITHM,
    SPEC_SCHEMA,
    FreezeRecord,
    GroupSpec,
    HoldoutBinding,
    HoldoutManifest,
    ManifestFamily,
    OverlapReport,
    SelectedTrace,
    Selection,
    SelectionSpec,
    StatisticalSpec,
    encode_json,
)
from continuity.holdout.selection import (
    check_per_group,
    parse_selection_seed,
    select,
    select_frozen,
)
from continuity.holdout.source import (
    EXTERNAL_ONLY_OPTIONS,
    HoldoutSource,
    source_from_options,
)
from continuity.holdout.validate import ValidatedSource, validate_source

__all__ = [
    "EXTERNAL_ONLY_OPTIONS",
    "MANIFEST_SCHEMA",
    "SELECTION_ALGORITHM",
    "SPEC_SCHEMA",
    "FreezeRecord",
    "FreezeResult",
    "FrozenHoldout",
    "GroupSpec",
    "HoldoutBinding",
    "HoldoutManifest",
    "HoldoutSource",
    "ManifestFamily",
    "OverlapReport",
    "References",
    "SelectedTrace",
    "Selection",
    "SelectionSpec",
    "StatisticalSpec",
    "ValidatedSource",
    "check_holdout_repeats",
    "check_overlap",
    "check_per_group",
    "check_selection",
    "encode_json",
    "export",
    "freeze_source",
    "holdout_binding",
    "load_frozen",
    "locomo_import",
    "overlap",
    "parse_selection_seed",
    "project_references",
    "read_report",
    "refuse_explicit_traces",
    "runtime_digest",
    "schema",
    "select",
    "select_frozen",
    "selected_traces",
    "source_from_options",
    "tooling_digest",
    "trace_key",
    "validate_source",
    "write_report",
]
