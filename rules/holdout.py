"""`doit holdout_validate`, `holdout_overlap`, `holdout_freeze` and `holdout_select`.

A holdout source is given as ``--manifest F --manifest-sha256 S --statistical-spec F``
(`SOURCE_PARAMS`), and a selection as ``--selection-seed N [--per-group K]``
(`SELECTION_PARAMS`). Other task families that take a holdout reuse both lists and
`holdout_source`, which refuses a partial triple, or an external-only option without the
triple, with ``holdout_source_incomplete`` (never a fallback to a built-in suite).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, TypedDict, Unpack

from continuity.graph import task_action
from rules.params import STORE, DirOption, IntOption, Param, TaskSpec, param

if TYPE_CHECKING:
    from continuity.holdout import HoldoutSource

__all__ = [
    "OVERLAP_OUTPUT",
    "SELECTION_PARAMS",
    "SOURCE_PARAMS",
    "HoldoutOptions",
    "external_given",
    "holdout_source",
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


class HoldoutOptions(TypedDict, total=False):
    """The options of the holdout tasks (a task without one gets its default)."""

    manifest: str
    manifest_sha256: str
    statistical_spec: str
    selection_seed: int
    per_group: int
    output: str
    overlap: str
    store: str


def external_given(options: HoldoutOptions) -> list[str]:
    """The external-only options among `options` that the user gave."""
    given = []
    if options.get("selection_seed", _NO_SEED) != _NO_SEED:
        given.append("--selection-seed")
    if options.get("per_group", 0):
        given.append("--per-group")
    return given


def holdout_source(
    options: HoldoutOptions, *, external: Collection[str] = (), required: bool = False
) -> HoldoutSource | None:
    """The source the options name (None when none is named and `required` is false).

    Raises:
        HoldoutError: ``holdout_source_incomplete``, ``holdout_manifest_sha256_invalid``.
    """
    from continuity.errors import HoldoutError
    from continuity.holdout import source_from_options

    source = source_from_options(
        options.get("manifest"),
        options.get("manifest_sha256"),
        options.get("statistical_spec"),
        external=external,
    )
    if source is None and required:
        raise HoldoutError(
            "this task needs a holdout source: --manifest F --manifest-sha256 S "
            "--statistical-spec F",
            code="holdout_source_incomplete",
            location="--manifest",
        )
    return source


def _required(options: HoldoutOptions) -> HoldoutSource:
    source = holdout_source(options, external=external_given(options), required=True)
    assert source is not None
    return source


def _validate(**options: Unpack[HoldoutOptions]) -> str:
    from continuity.holdout import validate_source

    source = _required(options)
    validated = validate_source(source)
    print(validated.summary(), flush=True)
    return f"holdout_validate: the source is valid; nothing written (manifest {source.manifest})"


def _overlap(**options: Unpack[HoldoutOptions]) -> str:
    from continuity.errors import HoldoutError
    from continuity.holdout import check_overlap, project_references, validate_source
    from continuity.holdout.overlap import write_report
    from continuity.outputs import usable_directory

    source = _required(options)
    if not options.get("output"):
        raise HoldoutError(
            "holdout_overlap needs --output DIR for overlap.json and overlap.md",
            code="holdout_output_invalid",
            location="--output",
        )
    output = usable_directory(str(options.get("output")), code="holdout_output_invalid")
    validated = validate_source(source)
    report = check_overlap(validated, project_references())
    c = report.counts
    print(
        f"compared {c.distinctive_values} of {c.values} values, {c.distinctive_ids} of "
        f"{c.ids} ids and {c.phrases:,} phrases of {c.families} families with "
        f"{c.references} references ({c.reference_texts:,} texts); references digest "
        f"{report.references_digest}",
        flush=True,
    )
    path = write_report(report, output, validated.files.manifest.source)
    return f"holdout_overlap: no overlap; report in {path} and {path.with_suffix('.md')}"


def _freeze(**options: Unpack[HoldoutOptions]) -> str:
    from continuity.errors import HoldoutError
    from continuity.holdout import freeze_source
    from continuity.store import Store

    source = _required(options)
    if not options.get("overlap"):
        raise HoldoutError(
            "holdout_freeze needs --overlap DIR/overlap.json (doit holdout_overlap writes it)",
            code="holdout_overlap_invalid",
            location="--overlap",
        )
    store = Store(options.get("store") or None)
    result = freeze_source(store, source, str(options.get("overlap")))
    verb = "was already frozen" if result.status == "cached" else "is frozen"
    return (
        f"holdout_freeze: {result.record.source} ({len(result.record.families)} families) "
        f"{verb}: freeze {result.digest} in the store {store.root} under ref {result.ref}"
    )


def _select(**options: Unpack[HoldoutOptions]) -> str:
    from continuity.holdout import holdout_binding, load_frozen, select_frozen
    from continuity.store import Store

    source = _required(options)
    seed = options.get("selection_seed", _NO_SEED)
    store = Store(options.get("store") or None)
    frozen = load_frozen(store, source)
    selection = select_frozen(
        frozen, None if seed == _NO_SEED else seed, options.get("per_group") or None
    )
    binding = holdout_binding(frozen, selection)
    for group, chosen in selection.by_group:
        print(f"{group}: {', '.join(chosen)}", flush=True)
    print(f"sealed spares: {len(selection.spares)}", flush=True)
    return (
        f"holdout_select: {selection.algorithm} seed {selection.seed} selects "
        f"{len(selection.selected)} families ({selection.per_group} per group); selection "
        f"digest {binding.selection_digest}, freeze {binding.freeze_digest}; nothing written"
    )


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
