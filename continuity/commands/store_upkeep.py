"""``doit gc``: garbage-collect the artifact store; ``doit verify``: scrub it.

The store layer knows nothing of what its refs mean; `rebuilders` hands ``doit verify
--repair`` the builders that make each kind of ref whole again. They are the same
functions ``doit traces`` and ``doit checkpoints`` run, so a repair rebuilds byte for byte
what those commands wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from continuity.errors import StoreError, UsageError
from continuity.requests import Request

if TYPE_CHECKING:
    from continuity.store import Ref, RefRebuilder, Store, VerifyReport

__all__ = [
    "GcRequest",
    "VerifyRequest",
    "gc",
    "rebuild_checkpoints",
    "rebuild_trace_suite",
    "rebuilders",
    "verify",
]


class GcRequest(Request, frozen=True, kw_only=True):
    """`doit gc`: preview only (``dry_run``), how many recent plans keep their artifacts
    alive, the age in seconds below which no file is removed, and the shared store to
    collect instead of the local one (``shared_store``)."""

    dry_run: bool = False
    keep_plans: int = 20
    grace: float = 3600.0
    shared_store: str = ""


class VerifyRequest(Request, frozen=True, kw_only=True):
    """`doit verify`: whether to rebuild what the refs need (``repair``), and the shared
    store to scrub instead of the local one (``shared_store``)."""

    repair: bool = False
    shared_store: str = ""


def gc(request: GcRequest) -> str:
    """Remove the store objects no ref or recent plan reaches (of the shared store
    ``--shared-store`` names: `continuity.store.shared_gc`); the summary line."""
    from continuity.store import (
        Store,
        check_limits,
        collect_garbage,
        collect_shared_garbage,
        open_backend,
    )

    keep, grace, dry_run = request.keep_plans, request.grace, request.dry_run
    if request.shared_store:
        check_limits(keep, grace)  # before the backend is opened
        backend = open_backend(request.shared_store)
        shared = collect_shared_garbage(
            backend, keep_plans=keep, grace_seconds=grace, dry_run=dry_run
        )
        return f"{shared.summary()} in {backend.url}"
    local = Store(request.store or None)
    return collect_garbage(local, keep_plans=keep, grace_seconds=grace, dry_run=dry_run).summary()


def _seeds(ref: Ref | None) -> list[int] | None:
    """The seeds a ref was built with (None: not recorded, or the defaults)."""
    if ref is None:
        return None
    seeds = ref.meta.get("seeds")
    return [int(s) for s in seeds] if isinstance(seeds, list) and seeds else None


def rebuild_trace_suite(
    store: Store, name: str, ref: Ref | None, out_dir: Path | None
) -> str | None:
    """Regenerate a ``traces/<suite>`` ref as ``doit traces --suite`` does (None for
    ``traces/file/<id>``: its source file is not in the store)."""
    from continuity.traces.keys import FIXTURE_SUITES, SUITES
    from continuity.traces.suites import build_suite

    suite = name.removeprefix("traces/")
    if suite not in SUITES:
        return None
    result = build_suite(store, suite, _seeds(ref), out_dir=out_dir)
    note = f"regenerated {suite} ({len(result.items)} traces)"
    if ref is None and suite not in FIXTURE_SUITES:
        note += "; its ref was corrupt, so the default seeds were used"
    return note


def rebuild_checkpoints(
    store: Store, name: str, ref: Ref | None, out_dir: Path | None
) -> str | None:
    """Replay a ``checkpoints/<suite>`` ref's traces again as ``doit checkpoints`` does.

    The seeds come from the ref (older refs: from the suite's ``traces/`` ref); the traces
    are those whose checkpoint the ref named (all of the suite when the ref itself was
    lost). None when the ref names checkpoints of traces these seeds do not build.
    """
    from continuity.errors import RecordCorrupt
    from continuity.harness.keys import checkpoint_key
    from continuity.runner.checkpoints import build_checkpoints
    from continuity.traces.keys import SUITES
    from continuity.traces.suites import build_suite

    suite = name.removeprefix("checkpoints/")
    if suite not in SUITES:
        return None
    seeds = _seeds(ref)
    if ref is None or "seeds" not in ref.meta:
        try:
            seeds = _seeds(store.get_ref(f"traces/{suite}"))
        except RecordCorrupt:
            seeds = None
    items = build_suite(store, suite, seeds, out_dir=out_dir).items
    wanted = [i.trace_id for i in items if ref is None or checkpoint_key(i.key) in ref.actions]
    if ref is not None and len(wanted) != len(set(ref.actions)):
        return None
    results, _ = build_checkpoints(store, suite, seeds, traces=",".join(wanted), out_dir=out_dir)
    built = sum(r.status == "built" for r in results)
    note = f"replayed {built} of {len(results)} {suite} checkpoints"
    if ref is None:
        note += "; its ref was corrupt, so every trace of the suite was replayed"
    return note


def rebuilders() -> dict[str, RefRebuilder]:
    """Ref kind -> its rebuilder, in repair order (checkpoints replay traces)."""
    return {"traces": rebuild_trace_suite, "checkpoints": rebuild_checkpoints}


def verify(request: VerifyRequest) -> str:
    """Check every store object, action entry and ref (``repair``: rebuild what the refs
    need), write ``<out>/verify/report.json`` and print each finding; the summary line
    names the report.

    Raises:
        StoreError: ``store_repair_incomplete`` (refs that could not be rebuilt) or,
            without ``repair``, ``store_corrupt`` (corrupt files were quarantined); both
            after the report is written.
    """
    from continuity.outputs import resolve_out_path
    from continuity.store import Store, verify_store

    repair = request.repair
    out_dir = resolve_out_path(request.out or None)
    if request.shared_store:
        return _verify_shared(request.shared_store, repair, out_dir / "verify" / "report.json")
    report = verify_store(
        Store(request.store or None), repair=repair, rebuild=rebuilders(), out_dir=out_dir
    )
    path = out_dir / "verify" / "report.json"
    _report(report, path, [f"ref {ref.name}: {ref.status} ({ref.hint})" for ref in report.refs])
    if report.unrepaired:
        raise StoreError(
            f"{len(report.unrepaired)} refs could not be rebuilt from the store: "
            + "; ".join(f"{r.name}: {r.hint}" for r in report.unrepaired),
            code="store_repair_incomplete",
            location=str(path),
        )
    if report.corrupt and not repair:
        raise StoreError(
            f"{report.corrupt} corrupt files quarantined; run `doit verify --repair`",
            code="store_corrupt",
            location=str(path),
        )
    return f"verify report at {path}"


def _report(report: VerifyReport, path: Path, lines: list[str]) -> None:
    """Write a scrub's report to `path`, then print each finding, `lines` and the
    summary."""
    from continuity.outputs import write_json

    write_json(path, report)
    for finding in report.findings:
        print(f"corrupt {finding.kind} {finding.path}: {finding.problem}", flush=True)
    for line in lines:
        print(line, flush=True)
    print(report.summary(), flush=True)


def _verify_shared(url: str, repair: bool, path: Path) -> str:
    """``doit verify --shared-store URL`` (`continuity.store.shared_verify`).

    Raises:
        UsageError: ``option_invalid`` with ``--repair``.
        StoreError: ``store_corrupt`` (files quarantined, or entries whose output is
            gone), after the report is written; the backend's own codes.
    """
    from continuity.store import open_backend, verify_shared

    if repair:
        raise UsageError(
            "--repair rebuilds a local store's refs; a shared store is repaired by "
            "building again (workers publish what is missing)",
            code="option_invalid",
            location="--repair",
        )
    report = verify_shared(open_backend(url))
    orphans = report.orphaned_actions
    _report(report, path, [f"action {key}: its output is missing or corrupt" for key in orphans])
    if report.corrupt or report.orphaned_actions:
        raise StoreError(
            f"{report.corrupt} corrupt files quarantined, {len(report.orphaned_actions)} "
            f"action entries without their output in {url}; build again to republish",
            code="store_corrupt",
            location=str(path),
        )
    return f"verify report at {path}"
