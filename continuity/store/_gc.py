"""Garbage collection: remove what no ref and no recent plan can reach."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterable
from pathlib import Path

import msgspec

from continuity.errors import ObjectMissing, RecordCorrupt, UsageError
from continuity.store._records import ObjectRef, Ref
from continuity.store._store import Store
from continuity.store._verify import object_problem

__all__ = [
    "PLAN_PREFIX",
    "GcReport",
    "check_limits",
    "collect_garbage",
]

PLAN_PREFIX = "plans/"


class GcReport(msgspec.Struct, kw_only=True):
    """What `collect_garbage` removed (or would remove, with ``dry_run``)."""

    dry_run: bool
    kept_objects: int
    kept_actions: int
    kept_plans: int
    removed_objects: int
    removed_bytes: int
    removed_actions: int
    removed_plans: list[str]
    removed_tmp: int
    young_skipped: int
    corrupt_objects: list[str] = msgspec.field(default_factory=list)

    @classmethod
    def start(cls, dry_run: bool, kept_plans: int, removed_plans: Iterable[str]) -> GcReport:
        """A report before the sweep: the plans kept and removed, nothing counted yet."""
        return cls(
            dry_run=dry_run,
            kept_objects=0,
            kept_actions=0,
            kept_plans=kept_plans,
            removed_objects=0,
            removed_bytes=0,
            removed_actions=0,
            removed_plans=sorted(removed_plans),
            removed_tmp=0,
            young_skipped=0,
        )

    def summary(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        return (
            f"gc {verb} {self.removed_objects} objects ({self.removed_bytes:,} bytes), "
            f"{self.removed_actions} action entries, {len(self.removed_plans)} old plans, "
            f"{self.removed_tmp} temp files; kept {self.kept_objects} objects, "
            f"{self.kept_actions} action entries, {self.kept_plans} recent plans"
            + (
                f"; {self.young_skipped} unreachable files younger than the grace period"
                if self.young_skipped
                else ""
            )
            + (
                f"; {len(self.corrupt_objects)} corrupt files found "
                + ("(run `doit verify --repair`)" if self.dry_run else "and were quarantined")
                if self.corrupt_objects
                else ""
            )
        )


def collect_garbage(
    store: Store,
    *,
    keep_plans: int = 20,
    grace_seconds: float = 3600.0,
    dry_run: bool = False,
    now: float | None = None,
) -> GcReport:
    """Remove objects and action entries unreachable from refs and recent plans.

    Roots are every ref outside ``plans/`` plus the `keep_plans` newest plan refs; older
    plan refs are removed. Unreachable files younger than `grace_seconds` are kept, so
    a build writing concurrently (object first, then its action entry) is never cut in
    half. A corrupt ref is quarantined by the read and roots nothing. Every kept object is
    hashed: a corrupt one is listed in ``corrupt_objects`` and (unless ``dry_run``) moved to
    ``quarantine/``, so a build rebuilds it; ``doit verify --repair`` rebuilds the refs
    that need it.

    Raises:
        UsageError: ``option_invalid`` for a negative `keep_plans` or a `grace_seconds`
            that is negative or not finite, before anything is read.
    """
    check_limits(keep_plans, grace_seconds)
    now = time.time() if now is None else now
    events_before = len(store.corruption_events)
    refs = _readable_refs(store)
    plans = sorted((r for r in refs if r.name.startswith(PLAN_PREFIX)), key=lambda r: r.name)
    old_plans = plans[: max(0, len(plans) - keep_plans)]
    old_names = {r.name for r in old_plans}
    live_objects, live_actions = _mark_live(store, [r for r in refs if r.name not in old_names])
    report = GcReport.start(dry_run, len(plans) - len(old_plans), old_names)
    sweep = _Sweep(store, report, now, grace_seconds)
    sweep.objects(live_objects)
    sweep.actions(live_actions)
    sweep.tmp()
    if not dry_run:
        for name in old_names:
            store.delete_ref(name)
    # Trees, action entries and refs read while marking were verified (and quarantined) by
    # the read itself, dry run or not.
    report.corrupt_objects += [e.path for e in store.corruption_events[events_before:]]
    return report


def check_limits(keep_plans: int, grace_seconds: float) -> None:
    """Refuse a bad ``--keep-plans`` or ``--grace`` (``option_invalid``)."""
    if isinstance(keep_plans, bool) or not isinstance(keep_plans, int) or keep_plans < 0:
        raise UsageError(
            f"keep_plans must be a whole number >= 0, not {keep_plans!r}",
            code="option_invalid",
            location="--keep-plans",
        )
    # nan would make every file "old" (now - mtime < nan is false): refused, as is < 0.
    if not math.isfinite(grace_seconds) or grace_seconds < 0:
        raise UsageError(
            f"grace must be a finite number of seconds >= 0, not {grace_seconds!r}",
            code="option_invalid",
            location="--grace",
        )


def _readable_refs(store: Store) -> list[Ref]:
    """Every ref that reads (a corrupt one is quarantined by the read and skipped)."""
    refs = []
    for name in store.list_refs():
        try:
            ref = store.get_ref(name)
        except RecordCorrupt:
            continue
        if ref is not None:
            refs.append(ref)
    return refs


def _mark_live(store: Store, roots: list[Ref]) -> tuple[set[str], set[str]]:
    """The object digests and action keys the `roots` reach."""
    live_objects: set[str] = set()
    live_actions: set[str] = set()
    for ref in roots:
        for obj in ref.objects:
            _mark(store, obj, live_objects)
        for key in ref.actions:
            if key in live_actions:
                continue
            entry = store.get_action(key, verify_output=False)
            if entry is None:
                continue
            live_actions.add(key)
            _mark(store, entry.output, live_objects)
    return live_objects, live_actions


class _Sweep:
    """Counts into `report` (and, unless it is a dry run, removes) what is unreachable
    and older than the grace period."""

    def __init__(self, store: Store, report: GcReport, now: float, grace_seconds: float) -> None:
        self.store, self.report, self.now, self.grace = store, report, now, grace_seconds

    def _young(self, path: Path) -> bool:
        return _young(path, self.now, self.grace)

    def objects(self, live: set[str]) -> None:
        report = self.report
        for path in self.store.iter_objects():
            if path.name in live:
                problem = object_problem(path)
                if problem is None:
                    report.kept_objects += 1
                    continue
                if report.dry_run:
                    report.corrupt_objects.append(str(path))
                else:  # the event lands in corrupt_objects (see collect_garbage)
                    self.store.quarantine(path, path.name, problem)
            elif self._young(path):
                report.young_skipped += 1
            else:
                report.removed_objects += 1
                report.removed_bytes += path.stat().st_size
                _remove(path, report.dry_run)

    def actions(self, live: set[str]) -> None:
        report = self.report
        for path in self.store.iter_actions():
            if path.name.removesuffix(".json") in live:
                report.kept_actions += 1
            elif self._young(path):
                report.young_skipped += 1
            else:
                report.removed_actions += 1
                _remove(path, report.dry_run)

    def tmp(self) -> None:
        for path in self.store.tmp_dir.iterdir():
            if not self._young(path):
                self.report.removed_tmp += 1
                _remove(path, self.report.dry_run)


def _mark(store: Store, ref: ObjectRef, live: set[str]) -> None:
    try:
        live.update(store.walk(ref))
    except ObjectMissing:
        live.add(ref.digest)  # a damaged tree keeps what it names; the rest is unreachable


def _young(path: Path, now: float, grace_seconds: float) -> bool:
    try:
        return now - path.stat().st_mtime < grace_seconds
    except FileNotFoundError:
        return True


def _remove(path: Path, dry_run: bool) -> None:
    if dry_run:
        return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
