"""The offline contract: what CI runs and the README's main command produces.

It builds and validates all three default trace suites (the original fixtures, hard
seeds 101-108, hard-distractors 101-108) and checks the distractor invariants against
their hard twins. It then replays the originals and hard seeds 101-102 through the
reference harness into checkpoints (scripted model, real MCP tool calls), forks each
checkpoint into a fresh child process at its original path, and checks what the child
sees. Later stages (arms, units, aggregate) extend it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from continuity.arms import LEDGER_ARM
from continuity.contract_agent import AgentPass, start_outside_agent
from continuity.contract_checks import check_ledger_units, check_units, contract_checks
from continuity.contract_headline import SuiteHeadline, headline, headline_markdown
from continuity.errors import ContinuityError
from continuity.harness.checkpoints import CheckpointResult, fork, run_child
from continuity.outputs import resolve_out_path, write_json, write_output
from continuity.plan.plan import build_plan
from continuity.plan.pricing import default_catalog_path
from continuity.progress import progress, stages
from continuity.report.freshness import aggregate_stamped
from continuity.runner.checkpoints import build_checkpoints
from continuity.runner.children import ZYGOTE_PRELOAD
from continuity.runner.design import check_design
from continuity.runner.manifest import utc_stamp, write_run_manifest
from continuity.runner.units.build import build_units
from continuity.runner.units.execution import Execution
from continuity.store import Store, utc_now
from continuity.traces.bounds import RESULT_HEAD_BYTES
from continuity.traces.distractors import distractor_differences
from continuity.traces.keys import SUITES
from continuity.traces.schema import Steer, ToolResult, decode_trace, iter_turns
from continuity.traces.suites import SuiteResult, build_suite
from continuity.zygote import ZygotePool

if TYPE_CHECKING:
    from continuity.report.results import Results
    from continuity.runner.units.build import UnitRecord

CONTRACT_CHECKPOINTS = (("original", None), ("hard", "gen-grant-101,gen-oven-102"))
CONTRACT_DESIGN_TRACES = ("gen-grant-101", "gen-oven-102")
CONTRACT_RUN = "offline-contract"
# Every arm, the opt-in ledger arm included (offline its extractions are scripted).
CONTRACT_ARMS = f"all,{LEDGER_ARM}"
# The contract's plan opts in to the judge (played offline by the scripted judge), so its
# report shows the judge's agreement with the scorer.
CONTRACT_JUDGE = "openai-codex:gpt-6.1-sol"

__all__ = [
    "CONTRACT_ARMS",
    "CONTRACT_CHECKPOINTS",
    "CONTRACT_DESIGN_TRACES",
    "CONTRACT_JUDGE",
    "CONTRACT_RUN",
    "CONTRACT_SCHEMA",
    "ContractReport",
    "SuiteSummary",
    "check_checkpoint",
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
    report: str = ""  # the aggregate report.html of the contract's run
    # where each probed fact was after each arm's boundary (`continuity.contract_headline`)
    headline: tuple[SuiteHeadline, ...] = ()


def run_offline_contract(
    store: Store, *, out_dir: Path | None = None
) -> tuple[ContractReport, Path]:
    """Run the offline contract; return the report and the path of ``contract.md``.

    Raises:
        ContinuityError: any stage's typed error (the report is not written).
    """
    out = out_dir or resolve_out_path()
    # The stages the overall bar counts: traces per suite; checkpoints, units and ledger
    # samples per checkpointed suite; the outside-agent pass; the design checks and the
    # aggregate.
    count = len(SUITES) + 3 * len(CONTRACT_CHECKPOINTS) + 2
    with stages("offline contract", count):
        results = _build_suites(store, out)
        check_distractor_pairs(store, results["hard"], results["hard-distractors"])
        # The outside-agent pass in a process of its own, beside the checkpoints and units.
        agent = start_outside_agent(
            store,
            [(i.key, i.digest) for i in results["original"].items],
            out / "runs" / f"{CONTRACT_RUN}-agent",
        )
        try:
            # One zygote pool for every stage that forks probe children: the units, the
            # ledger samples and the design checks start their zygotes once.
            with ZygotePool(ZYGOTE_PRELOAD, start=2) as zygotes:
                run_dir, units, checkpoints = _run_contract(
                    store, out, results, agent.check, zygotes
                )
                finished = _finish(store, out, results["hard"], run_dir, agent, zygotes)
        finally:
            agent.stop()
    aggregated, paths, ledger_samples, outside = finished
    report = ContractReport(
        created_at=utc_now(),
        store=str(store.root),
        suites=tuple(
            SuiteSummary(r.suite, len(r.items), r.built, r.tree.digest, r.manifest_path)
            for r in results.values()
        ),
        checks=contract_checks(
            units,
            checkpoints,
            f"{aggregated.units} units aggregated into {paths['report']}",
            ledger_samples,
        )
        | {"outside_agent": outside},
        passed=True,
        report=str(paths["report"]),
        headline=headline(aggregated.availability, aggregated.arms),
    )
    folder = out / "contract"
    write_json(folder / "contract.json", report)
    md_path = folder / "contract.md"
    write_output(md_path, _markdown(report).encode("utf-8"))
    return report, md_path


def _run_contract(
    store: Store,
    out: Path,
    results: dict[str, SuiteResult],
    beside: Callable[[], None],
    zygotes: ZygotePool,
) -> tuple[Path, list[UnitRecord], int]:
    """The checkpoints and every arm's units, checked, and the run's manifest; the run's
    folder, its units, and how many checkpoints were checked. `beside` is
    called between stages: it raises what the pass running beside them raised, if it
    has ended so (a failure is reported as soon as it is known)."""
    checkpoints = _check_checkpoints(store, out, results)
    beside()
    run_dir = out / "runs" / CONTRACT_RUN
    started = utc_stamp()
    units = _run_units(store, run_dir, zygotes)
    beside()
    check_units(units)
    check_ledger_units(units)
    write_run_manifest(
        run_dir,
        build_plan(arms=CONTRACT_ARMS, judge=CONTRACT_JUDGE),  # what every suite ran
        started=started,
        suites=[suite for suite, _ in CONTRACT_CHECKPOINTS],
    )
    return run_dir, units, checkpoints


def _finish(
    store: Store,
    out: Path,
    hard: SuiteResult,
    run_dir: Path,
    agent: AgentPass,
    zygotes: ZygotePool,
) -> tuple[Results, dict[str, Path], int, str]:
    """After the units: the ledger samples, the outside-agent pass's end and the
    aggregate, with the design checks beside them in a thread (each side waits on
    child processes one at a time, and the units no longer hold both cores). The
    aggregate, its paths, the ledger samples checked and the pass's sentence."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="design") as pool:
        designs = pool.submit(_check_designs, store, hard, zygotes)
        ledger_samples = _ledger_samples(store, out, zygotes)
        outside = agent.result()
        with progress("design checks and the aggregate"):
            # The contract's own run is the one `doit aggregate` reads by default (the
            # run whose newest unit file is newest): the pass may have ended after it.
            _touch_units(run_dir)
            # Stamped, so `doit aggregate` right after the contract is up to date.
            aggregated, paths, _ = aggregate_stamped(store, run_dir, default_catalog_path())
            designs.result()
    return aggregated, paths, ledger_samples, outside


def _check_designs(store: Store, hard: SuiteResult, zygotes: ZygotePool) -> None:
    """`continuity.runner.design.check_design` on the contract's design traces."""
    for item in hard.items:
        if item.trace_id in CONTRACT_DESIGN_TRACES:
            trace = decode_trace(store.get_blob(item.digest))
            check_design(store, trace, item, zygotes=zygotes)


def _touch_units(run_dir: Path) -> None:
    """Mark the run's unit files written now (their content is unchanged)."""
    for path in (run_dir / "units").rglob("*.json"):
        os.utime(path)


def _build_suites(store: Store, out: Path) -> dict[str, SuiteResult]:
    """Build (or find in the store) and validate every default suite."""
    results: dict[str, SuiteResult] = {}
    for suite in SUITES:
        with progress(f"traces {suite}") as tick:
            results[suite] = build_suite(store, suite, out_dir=out, progress=tick)
    return results


def _check_checkpoints(store: Store, out: Path, results: dict[str, SuiteResult]) -> int:
    """Replay the contract's traces into checkpoints and fork each into a fresh child;
    return how many were checked."""
    checkpoints = 0
    for suite, traces in CONTRACT_CHECKPOINTS:
        with progress(f"checkpoints {suite}") as tick:
            built, _ = build_checkpoints(store, suite, traces=traces, out_dir=out, progress=tick)
        for result in built:
            check_checkpoint(store, result, results[suite])
        checkpoints += len(built)
    return checkpoints


def _run_units(store: Store, run_dir: Path, zygotes: ZygotePool) -> list[UnitRecord]:
    """Every arm's units on the contract's traces, graded by the scripted judge."""
    units: list[UnitRecord] = []
    for suite, traces in CONTRACT_CHECKPOINTS:
        with progress(f"units {suite}") as tick:
            records, _, _ = build_units(
                store,
                suite,
                arms=CONTRACT_ARMS,
                traces=traces,
                run_dir=run_dir,
                progress=tick,
                # the scripted judge grades every valid answer
                execution=Execution(judge=CONTRACT_JUDGE),
                zygotes=zygotes,
            )
        units += records
    return units


def _ledger_samples(store: Store, out: Path, zygotes: ZygotePool) -> int:
    """``doit checkpoints --arms continuity-ledger-cold`` on the contract's traces: one
    sample per trace, forking the preparation the units made (repeat 1); all valid.

    Raises:
        ContinuityError: ``arm_contract_failed`` naming the first sample that is not.
    """
    from continuity.runner.samples import build_arm_samples

    count = 0
    for suite, traces in CONTRACT_CHECKPOINTS:
        with progress(f"ledger samples {suite}") as tick:
            records, _, _ = build_arm_samples(
                store,
                suite,
                arms=LEDGER_ARM,
                traces=traces,
                out_dir=out,
                progress=tick,
                zygotes=zygotes,
            )
        bad = [r for r in records if r.classification.status != "valid"]
        if bad:
            raise ContinuityError(
                f"the ledger arm's sample is {bad[0].classification.status}: "
                f"{bad[0].classification.reasons[:2]}",
                code="arm_contract_failed",
                location=bad[0].trace_id,
            )
        count += len(records)
    return count


def check_checkpoint(store: Store, result: CheckpointResult, suite: SuiteResult) -> None:
    """Fork a checkpoint into a fresh child and compare what it sees with the receipt.

    Raises:
        ContinuityError: ``checkpoint_contract_failed`` naming the trace.
    """
    digest = next(i.digest for i in suite.items if i.trace_id == result.trace_id)
    trace = decode_trace(store.get_blob(digest))
    turns = [t for _, _, t in iter_turns(trace)]
    records = [t for t in turns if isinstance(t, ToolResult)]
    oversized = sum(len(r.output.encode("utf-8")) > RESULT_HEAD_BYTES for r in records)
    with fork(store, result.key) as root:
        child = run_child(root)
    receipt = result.receipt
    problems = []
    if receipt.trace_digest != digest:
        problems.append("the checkpoint was replayed from another trace")
    if not receipt.call_log_verified or receipt.tool_calls != len(records):
        problems.append("tool calls do not match the trace's records")
    if receipt.steers_owner != sum(isinstance(t, Steer) for t in turns):
        problems.append("not every steer arrived as owner input")
    if receipt.truncated_records != oversized:
        problems.append("oversized results were not cut to their 16 KiB head")
    if child.tool_history_status != "ok" or child.tool_records_visible != len(records):
        problems.append(f"the child saw tool history {child.tool_history_status}")
    if child.context_digest != receipt.context_digest or child.workspace != result.root:
        problems.append("the child's context differs from the replayed one")
    if problems:
        raise ContinuityError(
            "; ".join(problems), code="checkpoint_contract_failed", location=result.trace_id
        )


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
    lines += headline_markdown(report.headline)
    lines += ["", "## Checks", ""]
    lines += [f"- **{name}**: {text}" for name, text in report.checks.items()]
    lines += [
        "",
        f"Result: {'PASSED' if report.passed else 'FAILED'}",
        "",
        f"Aggregate report: `{report.report}`",
        "",
    ]
    return "\n".join(lines)
