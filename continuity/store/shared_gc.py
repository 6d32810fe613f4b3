"""``doit gc --shared-store URL``: collect a shared store's garbage as `collect_garbage`
collects a local one's.

The roots are the shared store's refs: every ref outside ``plans/``, and the
`keep_plans` newest ``plans/`` refs (the ones clients record after each cluster run,
`SharedStore.record_plan`); older plan refs are deleted. An object or action entry no
root reaches is deleted once it is older than the grace period, going by the time the
backend says it was last written (`Backend.stat`: a file's mtime, an S3 object's
``LastModified``), so a publisher writing meanwhile (its objects first, its entry last)
is never cut in half. Action entries go before objects, so no entry is left naming an
output gc removed. The report is the local collector's `GcReport`.

What it cannot see: a worker that found an unreachable, old object already shared and
so did not write it again, and is about to publish an entry that names it. A local store
has the same window. Run it when no cluster run is publishing to the store, or with a
grace period longer than any run (the default is an hour).

A ref or tree that does not decode roots nothing (``doit verify --shared-store`` moves
it aside); what it alone reached is collected as unreachable.
"""

from __future__ import annotations

import time

import msgspec

from continuity.store._gc import PLAN_PREFIX, GcReport, check_limits
from continuity.store._records import ActionEntry, ObjectRef, Ref, Tree, decode_checked
from continuity.store.backends import Backend

__all__ = ["collect_shared_garbage"]


def collect_shared_garbage(
    backend: Backend,
    *,
    keep_plans: int = 20,
    grace_seconds: float = 3600.0,
    dry_run: bool = False,
    now: float | None = None,
) -> GcReport:
    """Delete what no root of the shared store on `backend` reaches (module doc).

    Raises:
        UsageError: ``option_invalid`` for a negative `keep_plans` or a bad
            `grace_seconds`, before anything is read.
        StoreError: ``store_backend_failed``.
    """
    check_limits(keep_plans, grace_seconds)
    now = time.time() if now is None else now
    refs = _readable_refs(backend)
    plans = sorted(name for name in refs if name.startswith(PLAN_PREFIX))
    old = set(plans[: max(0, len(plans) - keep_plans)])
    live_objects: set[str] = set()
    live_actions: set[str] = set()
    for name, ref in refs.items():
        if name not in old:
            _mark_ref(backend, ref, live_objects, live_actions)
    report = GcReport.start(dry_run, len(plans) - len(old), old)
    # Entries first, then objects: an entry is never left naming an output gc removed.
    for prefix, live in (("actions/", live_actions), ("objects/", live_objects)):
        for name, info in backend.stat(prefix).items():
            leaf = name.rsplit("/", 1)[1].removesuffix(".json")
            if leaf in live:
                if prefix == "objects/":
                    report.kept_objects += 1
                else:
                    report.kept_actions += 1
            elif now - info.modified < grace_seconds:
                report.young_skipped += 1
            else:
                if prefix == "objects/":
                    report.removed_objects += 1
                    report.removed_bytes += info.size
                else:
                    report.removed_actions += 1
                if not dry_run:
                    backend.delete(name)
    if not dry_run:
        for name in old:
            backend.delete(f"refs/{name}.json")
    return report


def _readable_refs(backend: Backend) -> dict[str, Ref]:
    """Every shared ref that decodes, by name (``refs/<name>.json``)."""
    refs = {}
    for path in backend.names("refs/"):
        found = backend.get(path)
        if found is None or not path.endswith(".json"):
            continue
        try:
            refs[path.removeprefix("refs/").removesuffix(".json")] = decode_checked(found[0], Ref)
        except ValueError:
            continue  # roots nothing; doit verify --shared-store moves it aside
    return refs


def _mark_ref(backend: Backend, ref: Ref, objects: set[str], actions: set[str]) -> None:
    for obj in ref.objects:
        _mark(backend, obj, objects)
    for key in ref.actions:
        if key in actions:
            continue
        found = backend.get(f"actions/{key[:2]}/{key}.json")
        if found is None:
            continue
        actions.add(key)
        try:
            entry = decode_checked(found[0], ActionEntry)
        except ValueError:
            continue  # an undecodable entry keeps itself, and nothing it may name
        _mark(backend, entry.output, objects)


def _mark(backend: Backend, ref: ObjectRef, live: set[str]) -> None:
    """`ref` and every object below it (a tree that does not decode: itself only)."""
    if ref.digest in live:
        return
    live.add(ref.digest)
    if ref.kind != "tree":
        return
    found = backend.get(f"objects/{ref.digest[:2]}/{ref.digest}")
    if found is None:
        return
    try:
        tree = msgspec.json.decode(found[0], type=Tree)
    except msgspec.MsgspecError:
        return
    for entry in tree.entries.values():
        _mark(backend, ObjectRef(entry.kind, entry.digest, entry.size), live)
