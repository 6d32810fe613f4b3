"""The sizing inventory behind `doit lookup_budget`, and the policy derived from it.

For every trace of the sizing corpus (the four originals, hard and hard-distractors
seeds 101-108), every lookup arm and every probe with an annotated source, a probe child
runs the evaluator's reference path in place of the reader: it restores the arm's
(lookup-namespaced) checkpoint, crosses the arm's boundary, builds the first request the
reader would get, then follows the path through the same metered ConversationHistory
proxy a reader uses (real loopback MCP calls). Two regression records of 27,600 UTF-8
bytes (one plain, one full of characters JSON must escape) go through the real handler
and its 8 KiB response splitter the same way.

The inventory is a content-addressed artifact. Every path is an action of its own,
keyed by what it ran on (`continuity.runner.inventory_paths`,
`continuity.runner.inventory_regression`), and the inventory is an action whose inputs
are its paths' keys in order, with the code that assembles it (the trace estimates). A
re-run with unchanged inputs measures nothing and reproduces the inventory; a changed
trace re-measures that trace's paths only; a killed run resumes where it stopped.

The inventory is content-free (ids, counts, sizes, flags). Its sha256 over canonical
JSON binds the policy computed from it. Replays and record ids are deterministic here,
so re-measuring the same code, corpus and reader binding reproduces the digest. Paths
are measured on the default scripted reader binding (Sol), whose model the inventory
and policy record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import msgspec

from continuity.arms import ARMS, LOOKUP_ARMS
from continuity.digest import KeySpec, code_digest
from continuity.errors import ContinuityError
from continuity.lookup.policy import (
    LOOKUP_PROTOCOL,
    LookupPolicy,
    PathCost,
    budget_from_paths,
    classifier_code,
    slot_policy,
)
from continuity.lookup.reader import binding_models
from continuity.lookup.soul import Soul
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.runner.inventory_paths import (
    MeasuredPath,
    PathJob,
    PathRecord,
    annotated_probes,
    measure_paths,
)
from continuity.runner.inventory_regression import REGRESSION_BYTES, measure_regression
from continuity.store import Store
from continuity.traces.schema import Trace

__all__ = [
    "CORPUS",
    "INVENTORY_CODE",
    "INVENTORY_KIND",
    "INVENTORY_SALT",
    "PROBE_MODE",
    "REGRESSION_BYTES",
    "Inventory",
    "InventoryRun",
    "compute_policy",
    "corpus_jobs",
    "corpus_names",
    "inventory_sha256",
    "inventory_spec",
    "measure_inventory",
    "path_cost",
    "policy_for",
]

PROBE_MODE = LOOKUP_PROTOCOL
CORPUS: tuple[tuple[str, tuple[int, ...] | None], ...] = (
    ("original", None),
    ("hard", tuple(range(101, 109))),
    ("hard-distractors", tuple(range(101, 109))),
)
INVENTORY_KIND = "lookup-inventory"
INVENTORY_SALT = "lookup-inventory-v1"
# The code that turns path records into the inventory: this module and the trace
# estimates (continuity.plan.workload's trace shape) every path's initial input uses.
INVENTORY_CODE = ("continuity.runner.inventory", "continuity.plan.workload")


class Inventory(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = "continuity-lookup-inventory-v1"
    corpus: list[str]
    paths: list[PathCost]
    reader: str = ""  # the scripted reader binding's model (its native history's model)


class InventoryRun(msgspec.Struct, frozen=True, kw_only=True):
    """An inventory, its action key and path keys, and how many paths this run measured
    (the others came from the store)."""

    inventory: Inventory
    key: str
    path_keys: list[str]
    measured: int
    reused: int


def inventory_sha256(inventory: Inventory) -> str:
    """sha256 of the inventory's canonical JSON (sorted keys, compact)."""
    canonical = msgspec.json.encode(msgspec.to_builtins(inventory), order="sorted")
    return hashlib.sha256(canonical).hexdigest()


def corpus_names(corpus: Sequence[tuple[str, Sequence[int] | None]]) -> list[str]:
    return [
        f"{suite}{'' if seeds is None else f':{min(seeds)}-{max(seeds)}'}"
        for suite, seeds in corpus
    ]


def corpus_jobs(store: Store, corpus: Sequence[tuple[str, Sequence[int] | None]]) -> list[PathJob]:
    """One job per trace x lookup arm of the corpus, with its annotated probes (a trace
    without any gives jobs with no probes: nothing to measure)."""
    from continuity.traces.suites import build_suite
    from continuity.traces.validate import load_trace

    jobs: list[PathJob] = []
    for suite, seeds in corpus:
        for item in build_suite(store, suite, seeds).items:
            trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
            probes = annotated_probes(trace)
            jobs.extend(PathJob(suite, item, trace, ARMS[arm], probes) for arm in LOOKUP_ARMS)
    return jobs


def _trace_estimates(trace: Trace) -> tuple[int, int]:
    """(full context, cold reseed) token estimates from the trace alone."""
    from continuity.plan.workload import ASSUMPTIONS, trace_shape

    shape = trace_shape(trace)
    return shape["full"] + ASSUMPTIONS["system_tokens"], shape["reseed"]


def path_cost(
    record: PathRecord, *, initial_tokens: int, cold_tokens: int = 0, suite: str = "original"
) -> PathCost:
    """A path record as the inventory's content-free path cost."""
    receipt = record.receipt
    return PathCost(
        trace_id=record.trace_id,
        arm=record.arm,
        probe_id=record.probe_id,
        discovered=receipt.discovered,
        verified=receipt.verified,
        calls=receipt.calls,
        bytes=receipt.bytes,
        largest_response=max(receipt.responses, default=0),
        responses=receipt.responses,
        initial_tokens=initial_tokens,
        cold_tokens=cold_tokens,
        suite=suite,
    )


def _trace_cost(path: MeasuredPath) -> PathCost:
    """A measured trace path with its initial input: the larger of the first request's
    bytes / 3 and the trace estimate (native: the full context; pack: cold + 8,000)."""
    job, record = path.job, path.record
    full, cold = _trace_estimates(job.trace)
    observed = -(-record.first_request_bytes // 3)
    estimate = full if job.arm.id == "native-lookup" else cold + 8_000
    return path_cost(
        record,
        initial_tokens=max(observed, estimate),
        cold_tokens=cold if job.arm.pack else 0,
        suite=job.suite,
    )


def inventory_spec(
    path_keys: Sequence[str], suites: Sequence[str], corpus: Sequence[str], reader: str
) -> KeySpec:
    """The inventory's key spec: its paths' keys in order (inputs ``path-0000`` ...),
    each path's suite (its admission cap), the corpus names and the reader's model."""
    return KeySpec(
        kind=INVENTORY_KIND,
        salt=INVENTORY_SALT,
        code=code_digest(INVENTORY_CODE),
        params={"corpus": list(corpus), "reader": reader, "suites": list(suites)},
        inputs={f"path-{i:04d}": key for i, key in enumerate(path_keys)},
    )


def _stored_inventory(store: Store, key: str) -> Inventory | None:
    data = store.load_output(key)
    if data is None:
        return None
    try:
        return msgspec.json.decode(data, type=Inventory)
    except msgspec.MsgspecError:
        return None


def measure_inventory(
    store: Store,
    soul: Soul,
    *,
    corpus: Sequence[tuple[str, Sequence[int] | None]] = CORPUS,
    progress: Callable[[int, int, str, str], None] | None = None,
    binding: str = "default",
    on_path: Callable[[str, PathRecord], None] | None = None,
) -> InventoryRun:
    """The inventory of the corpus (see the module doc) on a scripted reader binding's
    models (the default one: the policy's reader): every stored path reused, the rest
    measured; the inventory itself reused when its key is stored.

    Raises:
        ContinuityError: ``lookup_inventory_failed`` (a reference path's child failed).
    """
    models = binding_models(binding)
    jobs = corpus_jobs(store, corpus)
    run = measure_paths(store, jobs, soul, models, progress=progress, on_path=on_path)
    regression = measure_regression(store)
    keys = [p.key for p in run.paths] + [key for key, _, _ in regression]
    suites = [p.job.suite for p in run.paths] + ["original"] * len(regression)
    names = corpus_names(corpus)
    spec = inventory_spec(keys, suites, names, models[0])
    key = spec.key()
    measured = len(run.measured) + sum(fresh for *_, fresh in regression)
    inventory = _stored_inventory(store, key)
    if inventory is None:
        costs = [_trace_cost(p) for p in run.paths]
        costs += [path_cost(record, initial_tokens=0) for _, record, _ in regression]
        inventory = Inventory(corpus=names, reader=models[0], paths=costs)
        blob = store.put_blob(msgspec.json.encode(inventory))
        store.record_action(
            key, kind=INVENTORY_KIND, output=blob, meta={"sha256": inventory_sha256(inventory)}
        )
    return InventoryRun(
        inventory=inventory,
        key=key,
        path_keys=keys,
        measured=measured,
        reused=len(keys) - measured,
    )


def compute_policy(
    inventory: Inventory, soul: Soul, *, note: str = "", inventory_key: str = ""
) -> LookupPolicy:
    """The budget from the inventory's discovered paths, and every slot's class.

    Raises:
        ContinuityError: ``lookup_inventory_empty`` when no path discovered its source.
    """
    found = [p for p in inventory.paths if p.discovered and p.verified]
    if not found:
        raise ContinuityError(
            "no reference path discovered its source",
            code="lookup_inventory_empty",
            location="inventory",
        )
    calls, budget = budget_from_paths(
        max(p.calls for p in found),
        max(p.bytes for p in found),
        max(p.largest_response for p in inventory.paths),
    )
    return policy_for(inventory, soul, calls, budget, note=note, inventory_key=inventory_key)


def policy_for(
    inventory: Inventory,
    soul: Soul,
    calls: int,
    budget: int,
    *,
    note: str = "",
    inventory_key: str = "",
) -> LookupPolicy:
    """A policy with the given budget, bound to this checkout's lookup and probe
    protocols and classifier, with every slot's metrics and class against it."""
    found = [p for p in inventory.paths if p.discovered and p.verified]
    return LookupPolicy(
        lookup_protocol=LOOKUP_PROTOCOL,
        probe_protocol=PROBE_PROTOCOL,
        classifier_code=classifier_code(),
        calls=calls,
        bytes=budget,
        max_path_calls=max((p.calls for p in found), default=0),
        max_path_bytes=max((p.bytes for p in found), default=0),
        largest_response=max((p.largest_response for p in inventory.paths), default=0),
        inventory_sha256=inventory_sha256(inventory),
        inventory_key=inventory_key,
        soul_sha256=soul.sha256,
        soul_core_sha256=soul.core_sha256,
        reader=inventory.reader,
        paths=len(inventory.paths),
        slots=[slot_policy(p, calls, budget) for p in inventory.paths if p.arm in LOOKUP_ARMS],
        note=note,
    )
