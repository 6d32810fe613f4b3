"""`doit checkpoints`: replay a suite's traces into checkpoints and materialise a manifest.

Each trace's checkpoint is skipped through the store when it exists, so a rerun after a
crash replays only the unfinished traces. The manifest
``out/checkpoints/<suite>/manifest.json`` maps trace ids to checkpoint keys, trees,
workspace paths and content-free replay receipts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from continuity.errors import UsageError
from continuity.harness.keys import ReplayConfig, checkpoint_key
from continuity.outputs import resolve_out_path, write_json
from continuity.progress import Tick
from continuity.store import Store
from continuity.traces.keys import suite_specs

if TYPE_CHECKING:
    from continuity.harness.checkpoints import CheckpointResult

__all__ = [
    "MANIFEST_SCHEMA",
    "CheckpointManifest",
    "ManifestItem",
    "build_checkpoints",
    "checkpoints_current",
    "select_traces",
]

MANIFEST_SCHEMA = "continuity-checkpoint-manifest-v1"


class ManifestItem(msgspec.Struct, frozen=True):
    key: str
    tree: str
    root: str
    trace_key: str
    requests: int
    tool_calls: int
    steers_owner: int
    context_messages: int


class CheckpointManifest(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = MANIFEST_SCHEMA
    suite: str
    config: dict[str, object]
    checkpoints: dict[str, ManifestItem]


def select_traces(available: Sequence[str], wanted: str | None) -> list[str]:
    """Filter trace ids by a comma list (``--trace a,b``); None keeps all.

    Raises:
        UsageError: ``trace_unknown`` naming the ids that are not in the suite.
    """
    if not wanted:
        return list(available)
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    missing = [n for n in names if n not in available]
    if missing:
        raise UsageError(
            f"not in the suite: {', '.join(missing)}", code="trace_unknown", location="--trace"
        )
    return [n for n in available if n in names]


def _manifest_path(out_dir: Path, suite: str) -> Path:
    return out_dir / "checkpoints" / suite / "manifest.json"


def build_checkpoints(
    store: Store,
    suite: str,
    seeds: Sequence[int] | None = None,
    *,
    traces: str | None = None,
    out_dir: Path | None = None,
    progress: Tick | None = None,
) -> tuple[list[CheckpointResult], Path]:
    """Build the suite's traces (from the store when present), then their checkpoints.

    Returns the checkpoint results and the manifest path.
    """
    from continuity.harness.checkpoints import build_checkpoint
    from continuity.traces.suites import build_suite
    from continuity.traces.validate import load_trace

    out = out_dir or resolve_out_path()
    suite_result = build_suite(store, suite, seeds, out_dir=out)
    chosen = set(select_traces([i.trace_id for i in suite_result.items], traces))
    config = ReplayConfig()
    results = []
    items = [i for i in suite_result.items if i.trace_id in chosen]
    for position, item in enumerate(items, start=1):
        trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
        result = build_checkpoint(
            store, trace, trace_key=item.key, trace_digest=item.digest, config=config
        )
        results.append(result)
        if progress is not None:
            progress(position, len(items), item.trace_id, result.status)
    manifest = CheckpointManifest(
        suite=suite,
        config=msgspec.to_builtins(config),
        checkpoints={
            r.trace_id: ManifestItem(
                key=r.key,
                tree=r.tree.digest,
                root=r.root,
                trace_key=next(i.key for i in items if i.trace_id == r.trace_id),
                requests=r.receipt.requests,
                tool_calls=r.receipt.tool_calls,
                steers_owner=r.receipt.steers_owner,
                context_messages=r.receipt.context_messages,
            )
            for r in results
        },
    )
    keys = [r.key for r in results]
    store.set_ref(f"checkpoints/{suite}", actions=keys, meta={"seeds": list(seeds or ())})
    store.record_plan(f"checkpoints --suite {suite}", actions=keys)
    path = _manifest_path(out, suite)
    write_json(path, manifest)
    return results, path


def checkpoints_current(
    store: Store,
    suite: str,
    seeds: Sequence[int] | None = None,
    *,
    traces: str | None = None,
    out_dir: Path | None = None,
) -> bool:
    """Whether `build_checkpoints` would do nothing (store and manifest only)."""
    try:
        specs = suite_specs(suite, seeds)
    except UsageError:
        return False
    ids: dict[str, str] = {}
    for spec in specs:
        key = spec.spec.key()
        entry = store.get_action(key)
        if entry is None:
            return False
        ids[str(entry.meta["trace_id"])] = key
    try:
        chosen = select_traces(list(ids), traces)
        manifest = msgspec.json.decode(
            _manifest_path(out_dir or resolve_out_path(), suite).read_bytes(),
            type=CheckpointManifest,
        )
    except (UsageError, OSError, msgspec.MsgspecError):
        return False
    for trace_id in chosen:
        key = checkpoint_key(ids[trace_id])
        listed = manifest.checkpoints.get(trace_id)
        if listed is None or listed.key != key or store.get_action(key) is None:
            return False
    return set(manifest.checkpoints) == set(chosen)
