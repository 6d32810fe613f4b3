"""Checkpoint keys and the replay configuration, light enough for doit's uptodate check
(no MCP, HTTP or provider imports)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from continuity.digest import KeySpec, code_digest
from continuity.store import Store

__all__ = [
    "CHECKPOINT_SALT",
    "HARNESS_CODE",
    "ReplayConfig",
    "checkpoint_key",
    "checkpoint_root",
    "checkpoint_spec",
]

CHECKPOINT_SALT = "checkpoint-v1"
# The code a checkpoint depends on: a change here rebuilds checkpoints; a change to
# scoring or reports does not.
HARNESS_CODE = (
    "continuity.harness",
    "continuity.memory",  # replay writes the retained store (and its pack inputs)
    "continuity.privacy",  # the credential-omission rule applied while retaining
    "continuity.providers",
    "continuity.servers",
    "continuity.traces.schema",
    "continuity.traces.tools",
    "continuity.traces.bounds",
)


class ReplayConfig(msgspec.Struct, frozen=True, kw_only=True):
    """What shapes a replay (and so a checkpoint's key). Execution-only settings such as
    timeouts are not part of it."""

    schema: str = "continuity-replay-config-v1"
    history_provider: str = "openai-codex"
    history_model: str = "gpt-6-luna"
    retained_records: bool = False  # record retained evidence (store and pack arms)
    mid_trace_compaction: bool = False  # a promptless manual compaction mid-trace
    namespace: str = ""  # "" for recall-only; the probe mode otherwise (lookup)


def _replay_params(config: ReplayConfig) -> dict[str, object]:
    """The key's view of a replay config: the namespace only when set, so recall-only
    checkpoint keys are what they were before namespaces existed."""
    params: dict[str, object] = msgspec.to_builtins(config)
    if not config.namespace:
        params.pop("namespace")
    return params


def checkpoint_spec(trace_key: str, config: ReplayConfig) -> KeySpec:
    return KeySpec(
        kind="checkpoint",
        salt=CHECKPOINT_SALT,
        code=code_digest(HARNESS_CODE),
        params={"replay": _replay_params(config)},
        inputs={"trace": trace_key},
    )


def checkpoint_key(trace_key: str, config: ReplayConfig | None = None) -> str:
    return checkpoint_spec(trace_key, config or ReplayConfig()).key()


def checkpoint_root(store: Store, trace_id: str, key: str) -> Path:
    """The workspace's absolute path: fixed per checkpoint, pinned by its sidecar."""
    return store.root / "checkpoints" / f"{trace_id}-{key[:16]}"
