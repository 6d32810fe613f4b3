"""``doit holdout_validate``, ``holdout_overlap``, ``holdout_freeze`` and ``holdout_select``:
check an external holdout source, check it against the project's own references, freeze
it into the store, and show what a preregistered seed selects from the freeze.

A holdout source is the triple ``--manifest F --manifest-sha256 S --statistical-spec F``
and a selection is ``--selection-seed N [--per-group K]``. `holdout_source` reads the
triple from a request (the other commands that take a holdout use it too) and refuses a
partial triple, or an external-only option without the triple, with
``holdout_source_incomplete`` (never a fallback to a built-in suite).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from continuity.plan.request import HoldoutRequest
from continuity.requests import Request

if TYPE_CHECKING:
    from continuity.holdout import HoldoutSource

__all__ = [
    "HoldoutFreezeRequest",
    "HoldoutOverlapRequest",
    "HoldoutSourceRequest",
    "external_given",
    "freeze_holdout",
    "holdout_overlap",
    "holdout_source",
    "select_holdout",
    "validate_holdout",
]


class HoldoutSourceRequest(Request, frozen=True, kw_only=True):
    """``doit holdout_validate``: the source triple ("" is not given)."""

    manifest: str = ""
    manifest_sha256: str = ""
    statistical_spec: str = ""


class HoldoutOverlapRequest(HoldoutSourceRequest, frozen=True, kw_only=True):
    """``doit holdout_overlap``: the source and the directory for overlap.json and
    overlap.md."""

    output: str = ""


class HoldoutFreezeRequest(HoldoutSourceRequest, frozen=True, kw_only=True):
    """``doit holdout_freeze``: the source and the clean overlap.json of
    ``doit holdout_overlap``."""

    overlap: str = ""


def external_given(request: HoldoutRequest) -> list[str]:
    """The external-only options the request gives (``--selection-seed``, then
    ``--per-group``), by their command-line names."""
    from continuity.plan.holdout_plan import external_options

    return external_options(request)


def holdout_source(
    request: HoldoutSourceRequest | HoldoutRequest,
    *,
    external: Collection[str] = (),
    required: bool = False,
) -> HoldoutSource | None:
    """The source the request's triple names (None when none is named, no option of
    `external` was given, and `required` is false).

    Raises:
        HoldoutError: ``holdout_source_incomplete``, ``holdout_manifest_sha256_invalid``.
    """
    from continuity.errors import HoldoutError
    from continuity.holdout import source_from_options

    source = source_from_options(
        request.manifest,
        request.manifest_sha256,
        request.statistical_spec,
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


def _required(request: HoldoutSourceRequest | HoldoutRequest) -> HoldoutSource:
    external = external_given(request) if isinstance(request, HoldoutRequest) else []
    source = holdout_source(request, external=external, required=True)
    assert source is not None
    return source


def validate_holdout(request: HoldoutSourceRequest) -> str:
    """``doit holdout_validate``: print the validated source's summary; writes nothing."""
    from continuity.holdout import validate_source

    source = _required(request)
    validated = validate_source(source)
    print(validated.summary(), flush=True)
    return f"holdout_validate: the source is valid; nothing written (manifest {source.manifest})"


def holdout_overlap(request: HoldoutOverlapRequest) -> str:
    """``doit holdout_overlap``: compare the source with the project's references and
    write the report (overlap.json, overlap.md) to ``--output``.

    Raises:
        HoldoutError: ``holdout_output_invalid`` (no or an unusable ``--output``),
            ``holdout_overlap_found`` (after the report is written), and the source's codes.
    """
    from continuity.errors import HoldoutError
    from continuity.holdout import check_overlap, project_references, validate_source
    from continuity.holdout.overlap import write_report
    from continuity.outputs import usable_directory

    source = _required(request)
    if not request.output:
        raise HoldoutError(
            "holdout_overlap needs --output DIR for overlap.json and overlap.md",
            code="holdout_output_invalid",
            location="--output",
        )
    output = usable_directory(request.output, code="holdout_output_invalid")
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


def freeze_holdout(request: HoldoutFreezeRequest) -> str:
    """``doit holdout_freeze``: freeze the source into the store (idempotent).

    Raises:
        HoldoutError: ``holdout_overlap_invalid`` (no ``--overlap``), and the codes of
            `continuity.holdout.freeze_source`.
    """
    from continuity.errors import HoldoutError
    from continuity.holdout import freeze_source
    from continuity.store import Store

    source = _required(request)
    if not request.overlap:
        raise HoldoutError(
            "holdout_freeze needs --overlap DIR/overlap.json (doit holdout_overlap writes it)",
            code="holdout_overlap_invalid",
            location="--overlap",
        )
    store = Store(request.store or None)
    result = freeze_source(store, source, request.overlap)
    verb = "was already frozen" if result.status == "cached" else "is frozen"
    return (
        f"holdout_freeze: {result.record.source} ({len(result.record.families)} families) "
        f"{verb}: freeze {result.digest} in the store {store.root} under ref {result.ref}"
    )


def select_holdout(request: HoldoutRequest) -> str:
    """``doit holdout_select``: print the families the seed selects from the frozen
    source, per group, and the count of sealed spares; writes nothing."""
    from continuity.holdout import holdout_binding, load_frozen, select_frozen
    from continuity.store import Store

    source = _required(request)
    seed = request.selection_seed
    store = Store(request.store or None)
    frozen = load_frozen(store, source)
    selection = select_frozen(frozen, None if seed == -1 else seed, request.per_group or None)
    binding = holdout_binding(frozen, selection)
    for group, chosen in selection.by_group:
        print(f"{group}: {', '.join(chosen)}", flush=True)
    print(f"sealed spares: {len(selection.spares)}", flush=True)
    return (
        f"holdout_select: {selection.algorithm} seed {selection.seed} selects "
        f"{len(selection.selected)} families ({selection.per_group} per group); selection "
        f"digest {binding.selection_digest}, freeze {binding.freeze_digest}; nothing written"
    )
