"""`doit lookup_budget`: a sizing inventory (reused from the store where it can be) and
the policy derived from it.

It refuses an existing output directory (a measurement is never mixed into an earlier
one), writes ``inventory.json``, ``policy.json`` and ``summary.md`` there, and keeps the
policy in the store under ``refs/lookup/policies/<sha256>`` and the inventory with every
path it was assembled from under ``refs/lookup/inventories/<key>`` (so ``doit gc``
keeps them). Every path already measured with the same inputs is reused, so a second
run into a new directory takes seconds and gives the same inventory and policy. It never
touches the frozen policy in ``fixtures/``: use the new one explicitly with ``--policy
PATH --policy-sha256 SHA``. Re-measure into a fresh directory to prepare a new policy,
never to enlarge a budget after seeing trial outcomes. `freeze_policy` writes a frozen
policy at a given budget (the seed's 8 calls and 126,976 bytes for ``budget-v4.json``).
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
    InventoryRun,
    compute_policy,
    inventory_sha256,
    measure_inventory,
    policy_for,
)
from continuity.runner.inventory_paths import PathRecord
from continuity.store import Store

__all__ = [
    "LookupBudget",
    "freeze_policy",
    "policy_bytes",
    "run_lookup_budget",
    "summary_text",
]


class LookupBudget(msgspec.Struct, frozen=True):
    policy: LookupPolicy
    policy_path: str
    policy_sha256: str
    inventory_sha256: str
    inventory_key: str = ""
    measured: int = 0  # paths this run measured
    reused: int = 0  # paths it took from the store


def policy_bytes(policy: LookupPolicy) -> bytes:
    """A policy file's bytes (indented JSON, a final newline): what its sha256 covers."""
    return msgspec.json.format(msgspec.json.encode(policy)) + b"\n"


def summary_text(inventory: Inventory, policy: LookupPolicy, sha: str) -> str:
    classes = Counter((s.arm, s.classification) for s in policy.slots)
    lines = [
        "# Lookup sizing policy",
        "",
        f"- corpus: {', '.join(inventory.corpus)} plus two 27,600-byte regression records",
        f"- paths measured: {len(inventory.paths)}; inventory sha256 {policy.inventory_sha256}",
        f"- inventory key {policy.inventory_key}",
        f"- maximum reference path: {policy.max_path_calls} calls / "
        f"{policy.max_path_bytes:,} bytes; largest response {policy.largest_response:,} bytes",
        f"- budget: {policy.calls} calls, {policy.bytes:,} bytes per arm and probe",
        f"- measured on the scripted reader {policy.reader or '?'}",
        f"- bound to {policy.lookup_protocol} / {policy.probe_protocol}, classifier code "
        f"{policy.classifier_code}",
        f"- soul sha256 {policy.soul_sha256} (core {policy.soul_core_sha256})",
        f"- policy sha256 {sha}",
        "",
        "| arm | class | slots |",
        "|---|---|---|",
        *[f"| {arm} | {cls} | {n} |" for (arm, cls), n in sorted(classes.items())],
        "",
    ]
    return "\n".join(lines)


def _keep(store: Store, run: InventoryRun) -> None:
    """Pin the inventory and its paths against `doit gc`."""
    store.set_ref(
        f"lookup/inventories/{run.key}",
        actions=[run.key, *run.path_keys],
        meta={"sha256": inventory_sha256(run.inventory), "paths": len(run.path_keys)},
    )


def run_lookup_budget(
    store: Store,
    output: Path,
    *,
    corpus: Sequence[tuple[str, Sequence[int] | None]] = CORPUS,
    progress: Callable[[int, int, str, str], None] | None = None,
    on_path: Callable[[str, PathRecord], None] | None = None,
) -> LookupBudget:
    """Measure (or reuse), derive and write a new policy into `output` (which must not
    exist). `on_path` is called after each path this run measures is stored.

    Raises:
        UsageError: ``lookup_output_exists`` (the directory exists) or
            ``lookup_output_invalid`` (it cannot be created: ``/proc/nope``, under a file,
            a read-only parent), before anything is measured.
        ContinuityError: ``lookup_inventory_failed``, ``lookup_inventory_empty``.
    """
    check_new_directory(output, exists="lookup_output_exists", invalid="lookup_output_invalid")
    soul = read_soul()
    run = measure_inventory(store, soul, corpus=corpus, progress=progress, on_path=on_path)
    _keep(store, run)
    policy = compute_policy(
        run.inventory,
        soul,
        note="Measured by doit lookup_budget; see summary.md. Not the frozen policy.",
        inventory_key=run.key,
    )
    data = policy_bytes(policy)
    sha = policy_sha256(data)
    write_output(output / "inventory.json", msgspec.json.format(msgspec.json.encode(run.inventory)))
    write_output(output / "policy.json", data)
    write_output(output / "summary.md", summary_text(run.inventory, policy, sha).encode())
    blob = store.put_blob(data)
    store.set_ref(
        f"lookup/policies/{sha}",
        objects=[blob],
        actions=[run.key],
        meta={"output": str(output), "inventory_sha256": policy.inventory_sha256},
    )
    return LookupBudget(
        policy,
        str(output / "policy.json"),
        sha,
        policy.inventory_sha256,
        run.key,
        run.measured,
        run.reused,
    )


def freeze_policy(
    store: Store,
    target: Path,
    calls: int,
    budget: int,
    *,
    note: str,
    corpus: Sequence[tuple[str, Sequence[int] | None]] = CORPUS,
    progress: Callable[[int, int, str, str], None] | None = None,
) -> LookupBudget:
    """Measure (or reuse) the inventory and write the policy of a fixed budget of `calls`
    and `budget` bytes to `target` (a new file: a frozen policy is never edited).

    Raises:
        UsageError: ``lookup_output_exists`` when `target` exists.
        ContinuityError: ``lookup_inventory_failed``.
    """
    from continuity.errors import UsageError

    if target.exists():
        raise UsageError(
            "a frozen policy is never overwritten; name a new file",
            code="lookup_output_exists",
            location=str(target),
        )
    soul = read_soul()
    run = measure_inventory(store, soul, corpus=corpus, progress=progress)
    _keep(store, run)
    policy = policy_for(run.inventory, soul, calls, budget, note=note, inventory_key=run.key)
    data = policy_bytes(policy)
    write_output(target, data)
    return LookupBudget(
        policy,
        str(target),
        policy_sha256(data),
        policy.inventory_sha256,
        run.key,
        run.measured,
        run.reused,
    )
