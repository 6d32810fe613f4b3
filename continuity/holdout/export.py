"""Copy a verified freeze into another store (a role child's isolated store).

`doit compare_run` gives every role child a store of its own, so no checkpoint crosses
treatments. On an external registration the child loads the frozen holdout from that
store, so the parent copies the freeze into it first: the record, every family's trace
blob and its trace action, and the ref, exactly as `freeze_source` wrote them. The
source is verified in the parent's store first (`load_frozen`: tooling, runtime, every
trace hash), and the child verifies it again with its own code when it loads it; a blob
is re-hashed on every read, so a copy can never hand the child other bytes.
"""

from __future__ import annotations

from continuity.holdout.freeze import FrozenHoldout, freeze_ref, load_frozen
from continuity.holdout.source import HoldoutSource
from continuity.store import ObjectRef, Store

__all__ = ["export_frozen"]


def export_frozen(source_store: Store, target: Store, source: HoldoutSource) -> FrozenHoldout:
    """Copy the freeze of `source` from `source_store` into `target`; the loaded freeze.

    Raises:
        HoldoutError: `load_frozen`'s codes (nothing is copied then).
    """
    frozen = load_frozen(source_store, source)
    data = source_store.get_blob(frozen.freeze_digest)
    written = target.put_blob(data)
    record = ObjectRef("blob", written.digest, written.size)
    blobs = []
    for family in frozen.families:
        blob = target.put_blob(source_store.get_blob(family.blob))
        blobs.append(blob)
        entry = source_store.get_action(family.key)
        if entry is not None and target.get_action(family.key) is None:
            target.record_action(
                family.key,
                kind=entry.kind,
                output=blob,
                inputs=dict(entry.inputs),
                meta=dict(entry.meta),
            )
    name = freeze_ref(frozen.record.manifest_sha256, frozen.record.spec_sha256)
    present = target.get_ref(name)
    if present is not None and present.meta.get("freeze") == frozen.freeze_digest:
        return frozen  # already there (every blob and action above is content-addressed)
    original = source_store.get_ref(name)
    target.set_ref(
        name,
        objects=[record, *blobs],
        actions=[f.key for f in frozen.families],
        meta=dict(original.meta) if original is not None else {"freeze": frozen.freeze_digest},
    )
    return frozen
