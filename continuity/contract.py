"""The offline contract: what CI runs and the README's main command produces.

For now it builds and validates all three default trace suites (the original fixtures,
hard seeds 101-108, hard-distractors 101-108), checks the distractor invariants against
their hard twins, and writes a small report. Later stages (checkpoints, arms, units,
aggregate) extend it.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from continuity.errors import ContinuityError
from continuity.progress import progress
from continuity.store import Store, utc_now
from continuity.traces.distractors import distractor_differences
from continuity.traces.keys import SUITES, resolve_out_path
from continuity.traces.schema import decode_trace
from continuity.traces.suites import SuiteResult, build_suite

__all__ = [
    "ContractReport",
    "SuiteSummary",
    "check_distractor_pairs",
    "run_offline_contract",
]

CONTRACT_SCHEMA = "continuity-offline-contract-v1"


class SuiteSummary(msgspec.Struct, frozen=True):
    suite: str
    traces: int
    built: int
    tree: str
    manifest: str


class ContractReport(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = CONTRACT_SCHEMA
    created_at: str
    store: str
    suites: tuple[SuiteSummary, ...]
    checks: dict[str, str]
    passed: bool


def run_offline_contract(
    store: Store, *, out_dir: Path | None = None
) -> tuple[ContractReport, Path]:
    """Run the offline contract; return the report and the path of ``contract.md``.

    Raises:
        ContinuityError: any stage's typed error (the report is not written).
    """
    out = out_dir or resolve_out_path()
    results: dict[str, SuiteResult] = {}
    for suite in SUITES:
        with progress(f"traces {suite}") as tick:
            results[suite] = build_suite(store, suite, out_dir=out, progress=tick)
    checks: dict[str, str] = {
        "suites_valid": "every trace of the three default suites validated before storage",
    }
    check_distractor_pairs(store, results["hard"], results["hard-distractors"])
    checks["distractors_neutral"] = (
        "hard-distractors differ from their hard twins only in labelled filler units; "
        "facts, probes, byte sizes and estimated tokens are identical"
    )
    report = ContractReport(
        created_at=utc_now(),
        store=str(store.root),
        suites=tuple(
            SuiteSummary(r.suite, len(r.items), r.built, r.tree.digest, r.manifest_path)
            for r in results.values()
        ),
        checks=checks,
        passed=True,
    )
    folder = out / "contract"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "contract.json").write_bytes(msgspec.json.format(msgspec.json.encode(report)) + b"\n")
    md_path = folder / "contract.md"
    md_path.write_text(_markdown(report), encoding="utf-8")
    return report, md_path


def check_distractor_pairs(store: Store, hard: SuiteResult, distractors: SuiteResult) -> None:
    """Compare every stored distractor trace with its stored hard twin.

    Raises:
        ContinuityError: ``distractors_changed_facts`` naming the first bad trace.
    """
    twins = {i.trace_id: i.digest for i in hard.items}
    for item in distractors.items:
        twin = twins.get(item.trace_id.removesuffix("-distractors"))
        problems = (
            ["no hard twin was built"]
            if twin is None
            else distractor_differences(
                decode_trace(store.get_blob(twin)), decode_trace(store.get_blob(item.digest))
            )
        )
        if problems:
            raise ContinuityError(
                "; ".join(problems[:3]), code="distractors_changed_facts", location=item.trace_id
            )


def _markdown(report: ContractReport) -> str:
    lines = [
        "# Offline contract",
        "",
        f"Created {report.created_at}; store `{report.store}`.",
        "",
        "| suite | traces | built this run | suite tree | manifest |",
        "|---|---:|---:|---|---|",
    ]
    lines += [
        f"| {s.suite} | {s.traces} | {s.built} | `{s.tree[:16]}` | "
        f"`{os.path.relpath(s.manifest)}` |"
        for s in report.suites
    ]
    lines += ["", "## Checks", ""]
    lines += [f"- **{name}**: {text}" for name, text in report.checks.items()]
    lines += ["", f"Result: {'PASSED' if report.passed else 'FAILED'}", ""]
    return "\n".join(lines)
