"""The sizing inventory behind `doit lookup_budget`, and the policy derived from it.

For every trace of the sizing corpus (the four originals, hard and hard-distractors
seeds 101-108), every lookup arm and every probe with an annotated source, a probe child
runs the evaluator's reference path in place of the reader: it restores the arm's
(lookup-namespaced) checkpoint, crosses the arm's boundary, builds the first request the
reader would get, then follows the path through the same metered ConversationHistory
proxy a reader uses (real loopback MCP calls). Two regression records of 27,600 UTF-8
bytes (one plain, one full of characters JSON must escape) go through the real handler
and its 8 KiB response splitter the same way.

The inventory is content-free (ids, counts, sizes, flags). Its sha256 over canonical
JSON binds the policy computed from it. Replays and record ids are deterministic here,
so re-measuring the same code, corpus and reader binding reproduces the digest; any
change to them gives a new one (and needs a new frozen policy). Paths are measured on
the default scripted reader binding (Sol), whose model the inventory and policy record.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import msgspec

from continuity.arms import ARMS, LOOKUP_ARMS, Arm, replay_config_for
from continuity.digest import digest_bytes
from continuity.errors import ContinuityError
from continuity.lookup.policy import (
    BYTE_CAP,
    CALL_CAP,
    LookupPolicy,
    PathCost,
    SlotPolicy,
    budget_from_paths,
    classify_path,
)
from continuity.lookup.reader import binding_models
from continuity.lookup.receipts import LookupBinding, PathReceipt, SourceRef
from continuity.lookup.soul import Soul
from continuity.lookup.sources import sources_for
from continuity.runner.children import ZYGOTE_PRELOAD
from continuity.store import Store
from continuity.traces.schema import Probe, Trace
from continuity.traces.suites import SuiteItem
from continuity.zygote import ZygotePool

if TYPE_CHECKING:
    from continuity.probe.worker import ProbeSpec

__all__ = [
    "CORPUS",
    "PROBE_MODE",
    "REGRESSION_BYTES",
    "Inventory",
    "compute_policy",
    "inventory_sha256",
    "measure_inventory",
    "policy_for",
    "regression_paths",
]

PROBE_MODE = "lookup-allowed-v1"
CORPUS: tuple[tuple[str, tuple[int, ...] | None], ...] = (
    ("original", None),
    ("hard", tuple(range(101, 109))),
    ("hard-distractors", tuple(range(101, 109))),
)
REGRESSION_BYTES = 27_600


class Inventory(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = "continuity-lookup-inventory-v1"
    corpus: list[str]
    paths: list[PathCost]
    reader: str = ""  # the scripted reader binding's model (its native history's model)


def inventory_sha256(inventory: Inventory) -> str:
    """sha256 of the inventory's canonical JSON (sorted keys, compact)."""
    canonical = msgspec.json.encode(msgspec.to_builtins(inventory), order="sorted")
    return hashlib.sha256(canonical).hexdigest()


def _regression_texts() -> dict[str, str]:
    plain_line = "Regression record: the loading bay schedule for pallets and crates. "
    escaped_line = 'Quote "marks", back\\slashes, tabs\t, newlines\n and non-ASCII: £ é — 漢字. '
    texts = {}
    for name, line in (("plain", plain_line), ("escaped", escaped_line)):
        text = ""
        while len((text + line).encode("utf-8")) <= REGRESSION_BYTES:
            text += line
        pad = REGRESSION_BYTES - len(text.encode("utf-8"))
        texts[name] = text + "x" * pad
        assert len(texts[name].encode("utf-8")) == REGRESSION_BYTES
    return texts


def _cost(
    trace_id: str,
    arm: str,
    probe_id: str,
    path: PathReceipt,
    *,
    initial_tokens: int,
    cold_tokens: int = 0,
    suite: str = "original",
) -> PathCost:
    """A measured reference path as the policy's content-free path cost."""
    return PathCost(
        trace_id=trace_id,
        arm=arm,
        probe_id=probe_id,
        discovered=path.discovered,
        verified=path.verified,
        calls=path.calls,
        bytes=path.bytes,
        largest_response=max(path.responses, default=0),
        responses=path.responses,
        initial_tokens=initial_tokens,
        cold_tokens=cold_tokens,
        suite=suite,
    )


async def _regression(root: Path) -> list[PathCost]:
    from continuity.harness.toolbox import McpToolbox
    from continuity.lookup.meter import metered_history
    from continuity.lookup.probe import reference_path
    from continuity.memory.retained import RetainedStore
    from continuity.servers.history import serve_history

    store = RetainedStore(root / "regression.sqlite3")
    sources: dict[str, SourceRef] = {}
    for name, text in _regression_texts().items():
        store.retain_tool_result(text, tool="document", tool_kind="document", entry_ref=name)
        data = text.encode("utf-8")
        sources[name] = SourceRef(
            value=text.splitlines()[0][:40],
            line=text.splitlines()[0][:200],
            digest=digest_bytes(data),
            size=len(data),
        )
    paths = []
    async with serve_history(store) as upstream:
        for name, source in sources.items():
            async with (
                metered_history(upstream, calls=CALL_CAP, budget_bytes=BYTE_CAP) as (
                    url,
                    meter,
                ),
                McpToolbox(url) as toolbox,
            ):
                path = await reference_path(
                    toolbox, meter, source, "", store.find_by_digest(source.digest)
                )
            paths.append(_cost("regression", "handler", name, path, initial_tokens=0))
    store.close()
    return paths


def regression_paths() -> list[PathCost]:
    """The two regression records through the real handler and splitter."""
    with tempfile.TemporaryDirectory() as tmp:
        return anyio.run(_regression, Path(tmp))


def _trace_estimates(trace: object) -> tuple[int, int]:
    """(full context, cold reseed) token estimates from the trace alone."""
    from continuity.plan.workload import ASSUMPTIONS, trace_shape

    shape = trace_shape(trace)  # type: ignore[arg-type]
    return shape["full"] + ASSUMPTIONS["system_tokens"], shape["reseed"]


def _reference_specs(
    annotated: Sequence[tuple[int, Probe, list[SourceRef]]],
    soul: Soul,
    models: tuple[str, str],
) -> list[ProbeSpec]:
    """One probe spec per annotated probe: the evaluator's reference path to its first
    source, under the inventory's call and byte caps."""
    from continuity.probe.worker import ProbeSpec

    return [
        ProbeSpec(
            index,
            probe.text,
            [],
            LookupBinding(
                mode="reference",
                call_budget=CALL_CAP,
                byte_budget=BYTE_CAP,
                soul_sha256=soul.sha256,
                soul_core_sha256=soul.core_sha256,
                sources=sources[:1],
                models=models,
            ),
        )
        for index, probe, sources in annotated
    ]


def _measure_paths(
    store: Store,
    soul: Soul,
    models: tuple[str, str],
    job: tuple[str, SuiteItem, Trace, Arm],
    annotated: Sequence[tuple[int, Probe, list[SourceRef]]],
    zygotes: ZygotePool,
) -> list[PathCost]:
    """Run the reference paths of one trace x arm in a unit worker (forked from the
    zygote) on the arm's (lookup-namespaced) checkpoint; return their costs.

    Raises:
        ContinuityError: ``lookup_inventory_failed`` when a reference path's child failed.
    """
    from continuity.harness.checkpoints import build_checkpoint, checkpoint_lock
    from continuity.probe.worker import UnitRequest
    from continuity.runner.units import run_worker

    suite, item, trace, arm = job
    checkpoint = build_checkpoint(
        store,
        trace,
        trace_key=item.key,
        trace_digest=item.digest,
        config=replay_config_for(arm, PROBE_MODE, models),
        zygotes=zygotes,
    )
    request = UnitRequest(
        store_root=str(store.root),
        tree=checkpoint.tree.digest,
        workspace=checkpoint.root,
        arm=arm.id,
        probes=_reference_specs(annotated, soul, models),
        watchdog_seconds=720.0,
    )
    with checkpoint_lock(store, checkpoint.key):
        outcomes = run_worker(request, 3600.0, zygotes)
    full, cold = _trace_estimates(trace)
    paths: list[PathCost] = []
    for (_, probe, _), outcome in zip(annotated, outcomes, strict=True):
        evidence = outcome.evidence
        if evidence is None:
            raise ContinuityError(
                f"the reference path of {trace.trace_id} {arm.id} {probe.probe_id} "
                f"failed: {outcome.error}",
                code="lookup_inventory_failed",
                location=trace.trace_id,
            )
        assert evidence.lookup is not None and evidence.lookup.paths
        path = evidence.lookup.paths[0]
        observed = -(-evidence.lookup.first_request_bytes // 3)
        estimate = full if arm.id == "native-lookup" else cold + 8_000
        paths.append(
            _cost(
                trace.trace_id,
                arm.id,
                probe.probe_id,
                path,
                initial_tokens=max(observed, estimate),
                cold_tokens=cold if arm.pack else 0,
                suite=suite,
            )
        )
    return paths


def measure_inventory(
    store: Store,
    soul: Soul,
    *,
    corpus: Sequence[tuple[str, Sequence[int] | None]] = CORPUS,
    progress: Callable[[int, int, str, str], None] | None = None,
    binding: str = "default",
) -> Inventory:
    """Measure every reference path of the corpus (see the module doc) on a scripted
    reader binding's models (the default one: the policy's reader)."""
    from continuity.traces.suites import build_suite
    from continuity.traces.validate import load_trace

    models = binding_models(binding)
    jobs: list[tuple[str, SuiteItem, Trace, Arm]] = []
    for suite, seeds in corpus:
        for item in build_suite(store, suite, seeds).items:
            trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
            jobs.extend((suite, item, trace, ARMS[arm_id]) for arm_id in LOOKUP_ARMS)
    paths: list[PathCost] = []
    with ZygotePool(ZYGOTE_PRELOAD, start=1) as zygotes:  # every worker and replay
        for done, job in enumerate(jobs, start=1):
            _, item, trace, arm = job
            annotated = [
                (i, p, s) for i, p in enumerate(trace.probes) if (s := sources_for(trace, p))
            ]
            if annotated:
                paths.extend(_measure_paths(store, soul, models, job, annotated, zygotes))
            if progress is not None:
                progress(done, len(jobs), f"{item.trace_id} {arm.id}", f"{len(annotated)} paths")
    paths.extend(regression_paths())
    names = [
        f"{suite}{'' if seeds is None else f':{min(seeds)}-{max(seeds)}'}"
        for suite, seeds in corpus
    ]
    return Inventory(corpus=names, reader=models[0], paths=paths)


def compute_policy(inventory: Inventory, soul: Soul, *, note: str = "") -> LookupPolicy:
    """The budget from the inventory's discovered paths, and every slot's class."""
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
    return policy_for(inventory, soul, calls, budget, note=note)


def policy_for(
    inventory: Inventory, soul: Soul, calls: int, budget: int, *, note: str = ""
) -> LookupPolicy:
    """A policy with the given budget, every slot classified against it."""
    found = [p for p in inventory.paths if p.discovered and p.verified]
    slots = [
        SlotPolicy(
            trace_id=p.trace_id,
            arm=p.arm,
            probe_id=p.probe_id,
            classification=classify_path(p, calls, budget),
            calls=p.calls,
            bytes=p.bytes,
        )
        for p in inventory.paths
        if p.arm in LOOKUP_ARMS
    ]
    return LookupPolicy(
        calls=calls,
        bytes=budget,
        max_path_calls=max((p.calls for p in found), default=0),
        max_path_bytes=max((p.bytes for p in found), default=0),
        largest_response=max((p.largest_response for p in inventory.paths), default=0),
        inventory_sha256=inventory_sha256(inventory),
        soul_sha256=soul.sha256,
        soul_core_sha256=soul.core_sha256,
        paths=len(inventory.paths),
        slots=slots,
        note=note,
        reader=inventory.reader,
    )
