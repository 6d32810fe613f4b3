"""`doit compare`: two runs paired sample by sample, and a CI gate on significant drops."""

from __future__ import annotations

from typing import Unpack

from continuity.graph import task_action
from rules.params import (
    OUT,
    STORE,
    DirOption,
    FloatOption,
    Selection,
    SelectionOptions,
    TaskSpec,
    param,
)

__all__ = ["CompareOptions", "task_compare"]

_NO_MAX_DROP = -1.0  # --max-drop not given (any given value is at least 0)


class CompareOptions(SelectionOptions, total=False):
    base: str
    head: str
    scorer: str
    out_dir: str
    fail_on_regression: bool
    max_drop: float


def _compare(**options: Unpack[CompareOptions]) -> str:
    """Compare, write the three outputs, then apply the gates the user asked for.

    Raises:
        GateFailed: ``regression_found`` (exit status 3) after the outputs are written.
    """
    from pathlib import Path

    from continuity.errors import GateFailed
    from continuity.report.compare import compare_runs, significant_drops
    from continuity.report.compare_runs import resolve_run

    chosen = Selection(options)
    base = resolve_run(options.get("base") or "", chosen.out, "--base")
    head = resolve_run(options.get("head") or "", chosen.out, "--head")
    named = options.get("out_dir")
    out_dir = (
        Path(named).expanduser().absolute()
        if named
        else chosen.out / "compare" / f"{base.name}-vs-{head.name}"
    )
    comparison, paths = compare_runs(
        chosen.store, base, head, out_dir, options.get("scorer") or "current"
    )
    where = (
        f"compare: {comparison.slots.paired:,} paired samples, {len(comparison.flips):,} "
        f"flipped, {len(comparison.regressed_probes):,} probes regressed; "
        f"compare.json, compare.md and compare.html in {out_dir}"
    )
    max_drop = options.get("max_drop", _NO_MAX_DROP)
    gates = [("--max-drop", max_drop)] if max_drop >= 0 else []
    if options.get("fail_on_regression"):
        gates.insert(0, ("--fail-on-regression", 0.0))
    for option, threshold in gates:
        drops = significant_drops(comparison, threshold)
        if drops:
            print(where, flush=True)  # the outputs are written: say where, then fail
            over = f" by more than {threshold:g} pp" if option == "--max-drop" else ""
            raise GateFailed(
                f"significant drop{over} in {'; '.join(drops)} (see {paths['html']})",
                code="regression_found",
                location=option,
            )
    return where


def task_compare() -> TaskSpec:
    """Compare two runs sample by sample: paired deltas, McNemar p, bootstrap intervals."""
    return {
        "actions": [task_action(_compare)],
        "params": [
            param("base", str, "", "the run before the change: a run name or a run directory"),
            param("head", str, "", "the run after the change: a run name or a run directory"),
            param(
                "scorer",
                str,
                "current",
                "current (both runs graded by this checkout's scorer; default) | original "
                "(each unit file's own grades)",
            ),
            param(
                "out_dir",
                DirOption("--out-dir", "out_path_invalid"),
                "",
                "where to write compare.json, .md and .html "
                "(default: <out>/compare/<base>-vs-<head>)",
            ),
            param(
                "fail_on_regression",
                bool,
                False,
                "exit 3 when any suite/arm accuracy drops significantly",
            ),
            param(
                "max_drop",
                FloatOption("--max-drop", 0.0, inclusive=True),
                _NO_MAX_DROP,
                "exit 3 when any suite/arm accuracy drops significantly by more than this "
                "many percentage points (default: off)",
            ),
            STORE,
            OUT,
        ],
        "verbosity": 2,
    }
