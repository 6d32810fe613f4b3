"""`doit lookup_budget`: measure a fresh sizing inventory and derive a policy from it.

It refuses an existing output directory (a measurement is never mixed into an earlier
one), writes ``inventory.json``, ``policy.json`` and ``summary.md`` there, and keeps the
policy in the store under ``refs/lookup/policies/<sha256>``. It never touches the frozen
policy in ``fixtures/``: use the new one explicitly with ``--policy PATH
--policy-sha256 SHA``. Re-measure into a fresh directory to prepare a new policy, never
to enlarge a budget after seeing trial outcomes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from continuity.lookup.policy import LookupPolicy, policy_sha256
from continuity.lookup.soul import read_soul
from continuity.outputs import check_new_directory, write_output
from continuity.runner.inventory import (
    CORPUS,
    Inventory,
    compute_policy,
    inventory_sha256,
    measure_inventory,
)
from continuity.store import Store

__all__ = ["LookupBudget", "run_lookup_budget", "summary_text"]


class LookupBudget(msgspec.Struct, frozen=True):
    policy: LookupPolicy
    policy_path: str
    policy_sha256: str
    inventory_sha256: str


def summary_text(inventory: Inventory, policy: LookupPolicy, sha: str) -> str:
    classes = Counter((s.arm, s.classification) for s in policy.slots)
    lines = [
        "# Lookup sizing policy",
        "",
        f"- corpus: {', '.join(inventory.corpus)} plus two 27,600-byte regression records",
        f"- paths measured: {len(inventory.paths)}; inventory sha256 {policy.inventory_sha256}",
        f"- maximum reference path: {policy.max_path_calls} calls / "
        f"{policy.max_path_bytes:,} bytes; largest response {policy.largest_response:,} bytes",
        f"- budget: {policy.calls} calls, {policy.bytes:,} bytes per arm and probe",
        f"- measured on the scripted reader {policy.reader or '?'}",
        f"- soul sha256 {policy.soul_sha256} (core {policy.soul_core_sha256})",
        f"- policy sha256 {sha}",
        "",
        "| arm | class | slots |",
        "|---|---|---|",
        *[f"| {arm} | {cls} | {n} |" for (arm, cls), n in sorted(classes.items())],
        "",
    ]
    return "\n".join(lines)


def run_lookup_budget(
    store: Store,
    output: Path,
    *,
    corpus: Sequence[tuple[str, Sequence[int] | None]] = CORPUS,
    progress: Callable[[int, int, str, str], None] | None = None,
) -> LookupBudget:
    """Measure, derive and write a new policy into `output` (which must not exist).

    Raises:
        UsageError: ``lookup_output_exists`` (the directory exists) or
            ``lookup_output_invalid`` (it cannot be created: ``/proc/nope``, under a file,
            a read-only parent), before anything is measured.
    """
    check_new_directory(output, exists="lookup_output_exists", invalid="lookup_output_invalid")
    soul = read_soul()
    inventory = measure_inventory(store, soul, corpus=corpus, progress=progress)
    policy = compute_policy(
        inventory,
        soul,
        note="Measured by doit lookup_budget; see summary.md. Not the frozen policy.",
    )
    data = msgspec.json.format(msgspec.json.encode(policy)) + b"\n"
    sha = policy_sha256(data)
    write_output(output / "inventory.json", msgspec.json.format(msgspec.json.encode(inventory)))
    write_output(output / "policy.json", data)
    write_output(output / "summary.md", summary_text(inventory, policy, sha).encode())
    blob = store.put_blob(data)
    store.set_ref(
        f"lookup/policies/{sha}",
        objects=[blob],
        meta={"output": str(output), "inventory_sha256": inventory_sha256(inventory)},
    )
    return LookupBudget(policy, str(output / "policy.json"), sha, policy.inventory_sha256)
