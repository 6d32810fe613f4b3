"""``doit offline_contract``: the offline end-to-end contract CI runs
(`continuity.contract`), and its summary line."""

from __future__ import annotations

import shlex
from importlib import metadata

from continuity.requests import Request

__all__ = ["OfflineContractRequest", "next_steps", "offline_contract"]

# The local model's run, as .ci/run proves it: three arms on the smoke suite, two probes
# (the options `python3 -m continuity.servers.local_model` prints complete the plan).
_LOCAL_RUN = (
    "dry_run --suite smoke --arms native,cold-rebuild,continuity-store --probe-limit 2 "
    "--max-output-tokens 48 <the plan options it prints>"
)


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
    following = next_steps()
    return "\n".join([summary, *following, *headline_lines(report.headline)])


def _local_install(python: str) -> str:
    """The install of the ``local`` extra: from the checkout (editable), or, for an
    installed distribution (a wheel), its requirements as its metadata lists them."""
    from continuity.installation import is_installed_tree, tree_root

    if not is_installed_tree(tree_root()):
        return f"{python} -m pip install -e '.[local]'"
    wanted = []
    for requirement in metadata.requires("continuity") or []:
        spec, _, marker = requirement.partition(";")
        if marker.replace(" ", "").replace("'", '"') == 'extra=="local"':
            wanted.append(spec.strip())
    return f"{python} -m pip install " + " ".join(shlex.quote(r) for r in wanted)


def next_steps() -> list[str]:
    """The contract's next step: a real model on this machine, without a key (the local
    model server, then a dry run against it whose own ``next:`` line runs the plan)."""
    from continuity.installation import interpreter, task_command

    python, tasks = shlex.quote(interpreter()), shlex.join(task_command())
    return [
        "a real model on this machine, no key (docs/real-models.md): start its server,",
        f"next: {_local_install(python)} && {python} -m continuity.servers.local_model",
        f"then, beside it: {tasks} {_LOCAL_RUN}, and the next: line it prints",
    ]
