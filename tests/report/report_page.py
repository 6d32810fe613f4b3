"""A rendered report over a real two-suite run, shared by the report page tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from continuity.plan.plan import build_plan
from continuity.report.aggregate import aggregate_run
from continuity.report.results import ReportContext, Results
from continuity.runner.manifest import write_run_manifest
from continuity.store import Store

ARMS = "native,cold-rebuild,continuity-store,ceiling"


class Page(msgspec.Struct, frozen=True, kw_only=True):
    html: str
    path: Path
    results: Results
    store: Store


def render_mixed(mixed_base: tuple[Path, Path], root: Path) -> Page:
    """Copy the session's two-suite run to ``<root>/out/runs/mixed`` (with its store),
    give it a run manifest as doit units would, and aggregate it."""
    store_root, run_dir = mixed_base
    run = root / "out" / "runs" / "mixed"
    shutil.copytree(run_dir / "units", run / "units")
    store = Store(shutil.copytree(store_root, root / "store"))
    write_run_manifest(
        run, build_plan("original", arms=ARMS, repeats=2, judge="openai-codex:gpt-6.1-sol")
    )
    results, paths, _ = aggregate_run(store, run)
    return Page(
        html=paths["report"].read_text(encoding="utf-8"),
        path=paths["report"],
        results=results,
        store=store,
    )


def context_of(page: Page) -> ReportContext:
    from continuity.report.drilldown import report_context

    return report_context(page.store, page.path.parent)
