"""``doit compare``: two runs paired sample by sample, and a CI gate on significant drops.

`compare` is the command's entry point; `rules/compare.py` declares its options and
calls it with them typed once (`CompareRequest`).
"""

from __future__ import annotations

from continuity.commands.selection import Selection
from continuity.requests import Request

__all__ = ["NO_MAX_DROP", "CompareRequest", "compare"]

NO_MAX_DROP = -1.0  # --max-drop not given (any given value is at least 0)


class CompareRequest(Request, frozen=True, kw_only=True):
    """``doit compare``: the two runs (a run name or a run directory each), the scorer
    (``current`` or ``original``), where to write ("": ``<out>/compare/<base>-vs-<head>``)
    and the gates (`NO_MAX_DROP`: no ``--max-drop`` gate)."""

    base: str = ""
    head: str = ""
    scorer: str = "current"
    out_dir: str = ""
    fail_on_regression: bool = False
    max_drop: float = NO_MAX_DROP


def compare(request: CompareRequest) -> str:
    """Compare, write the three outputs, then apply the gates the user asked for;
    returns the summary line.

    Raises:
        GateFailed: ``regression_found`` (exit status 3) after the outputs are written.
    """
    from pathlib import Path

    from continuity.errors import GateFailed
    from continuity.report.compare import compare_runs, significant_drops
    from continuity.report.compare_runs import resolve_run

    chosen = Selection(request)
    base = resolve_run(request.base, chosen.out, "--base")
    head = resolve_run(request.head, chosen.out, "--head")
    named = request.out_dir
    out_dir = (
        Path(named).expanduser().absolute()
        if named
        else chosen.out / "compare" / f"{base.name}-vs-{head.name}"
    )
    comparison, paths = compare_runs(chosen.store, base, head, out_dir, request.scorer or "current")
    where = (
        f"compare: {comparison.slots.paired:,} paired samples, {len(comparison.flips):,} "
        f"flipped, {len(comparison.regressed_probes):,} probes regressed; "
        f"compare.json, compare.md and compare.html in {out_dir}"
    )
    max_drop = request.max_drop
    gates = [("--max-drop", max_drop)] if max_drop >= 0 else []
    if request.fail_on_regression:
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
