"""What the rest of the system takes from a frozen holdout and its selection.

- `holdout_binding`: the `HoldoutBinding` plans, policies and registrations bind (the
  source, its freeze, the algorithm, seed, per-group count, selected ids and the
  selection digest).
- `selected_traces`: each selected family's trace in the store (blob digest, size,
  sha256 and a trace key whose action entry resolves to the blob). Spares are never
  read.
- `refuse_explicit_traces` and `check_holdout_repeats`: the holdout's workload rules
  (no explicit ``--trace`` selection; lookup on a holdout runs exactly one repeat).
"""

from __future__ import annotations

from typing import NoReturn

from continuity.errors import HoldoutError
from continuity.holdout.freeze import FrozenHoldout, trace_key
from continuity.holdout.schema import BINDING_SCHEMA, HoldoutBinding, SelectedTrace, Selection
from continuity.holdout.selection import select
from continuity.store import ObjectRef, Store

__all__ = [
    "check_holdout_repeats",
    "check_selection",
    "holdout_binding",
    "refuse_explicit_traces",
    "selected_traces",
]


def check_selection(frozen: FrozenHoldout, selection: Selection) -> None:
    """`selection` is what `seeded-sha256-rank-v1` picks from `frozen` for its seed and
    per-group count.

    Raises:
        HoldoutError: ``holdout_selection_mismatch``.
    """
    expected = select(
        {f.family_id: f.group for f in frozen.families},
        [g.name for g in frozen.spec.groups],
        seed=selection.seed,
        per_group=selection.per_group,
    )
    if selection != expected:
        raise HoldoutError(
            f"the selection (seed {selection.seed}, per group {selection.per_group}) is not "
            "what seeded-sha256-rank-v1 picks from this frozen source",
            code="holdout_selection_mismatch",
            location=f"selection {selection.selection_digest[:16]}",
        )


def holdout_binding(frozen: FrozenHoldout, selection: Selection) -> HoldoutBinding:
    """The binding of a frozen source and its selection.

    Raises:
        HoldoutError: ``holdout_selection_mismatch``.
    """
    check_selection(frozen, selection)
    return HoldoutBinding(
        schema=BINDING_SCHEMA,
        manifest_sha256=frozen.record.manifest_sha256,
        spec_sha256=frozen.record.spec_sha256,
        freeze_digest=frozen.freeze_digest,
        algorithm=selection.algorithm,
        seed=selection.seed,
        per_group=selection.per_group,
        selected=selection.selected,
        selection_digest=selection.selection_digest,
    )


def selected_traces(
    store: Store, frozen: FrozenHoldout, selection: Selection
) -> list[SelectedTrace]:
    """The selected families' traces, in selection order, each with an action entry
    (kind ``trace``) under its key that resolves to the blob.

    Raises:
        HoldoutError: ``holdout_selection_mismatch``, ``holdout_not_frozen`` (the store
            no longer holds a selected trace's blob).
    """
    check_selection(frozen, selection)
    found = []
    for family_id in selection.selected:
        family = frozen.family(family_id)
        spec = trace_key(family.family_id, family.blob)
        if spec.key() != family.key:  # the validation code changed since the freeze
            raise HoldoutError(
                f"the trace key of {family_id} changed since the freeze; freeze it again",
                code="holdout_freeze_mismatch",
                location="tooling",
            )
        blob = ObjectRef("blob", family.blob, family.size)
        if store.get_action(family.key) is None:
            if not store.has_object(blob):
                raise HoldoutError(
                    f"the store no longer holds the trace of {family_id}; freeze it again",
                    code="holdout_not_frozen",
                    location=f"object {family.blob}",
                )
            meta = {"trace_id": family.family_id, "family": "imported", "bytes": family.size}
            store.record_action(
                family.key, kind="trace", output=blob, inputs=dict(spec.inputs), meta=meta
            )
        found.append(
            SelectedTrace(
                family_id=family.family_id,
                group=family.group,
                trace_id=family.family_id,
                digest=family.blob,
                size=family.size,
                sha256=family.sha256,
                key=family.key,
            )
        )
    return found


def refuse_explicit_traces(option_name: str) -> NoReturn:
    """Refuse an explicit trace selection on a holdout: the selection rule picks them.

    Raises:
        HoldoutError: ``holdout_trace_selection_refused`` (at `option_name`).
    """
    raise HoldoutError(
        f"{option_name} cannot pick traces of a holdout: seeded-sha256-rank-v1 selects them "
        "from --selection-seed and --per-group, and the others stay sealed spares",
        code="holdout_trace_selection_refused",
        location=option_name,
    )


def check_holdout_repeats(repeats: int, *, option: str = "--repeats") -> None:
    """Lookup on a holdout runs exactly one repeat.

    Raises:
        HoldoutError: ``holdout_repeats_invalid`` unless `repeats` is 1.
    """
    if isinstance(repeats, bool) or repeats != 1:
        raise HoldoutError(
            f"{repeats} repeats; lookup on a holdout requires exactly one (the spec's "
            "repeats are the source's transport setting and are ignored)",
            code="holdout_repeats_invalid",
            location=option,
        )
