"""Checkpoint keys and the replay configuration, light enough for doit's uptodate check
(no MCP, HTTP or provider imports)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from continuity.digest import KeySpec, code_digest
from continuity.store import Store

if TYPE_CHECKING:
    from continuity.providers.endpoint import RealBinding

__all__ = [
    "CHECKPOINT_SALT",
    "HARNESS_CODE",
    "ReplayConfig",
    "checkpoint_key",
    "checkpoint_root",
    "checkpoint_spec",
    "real_summarizer_params",
]

CHECKPOINT_SALT = "checkpoint-v1"
# The code a checkpoint depends on: a change here rebuilds checkpoints; a change to
# scoring or reports does not.
HARNESS_CODE = (
    "continuity.harness",
    "continuity.messages",  # the message types every session entry and request holds
    "continuity.memory",  # replay writes the retained store (and its pack inputs)
    "continuity.privacy",  # the credential-omission rule applied while retaining
    "continuity.sqlite_open",  # how the retained store and the steer inbox are opened
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


def real_summarizer_params(real: RealBinding) -> dict[str, Any]:
    """What a real-mode checkpoint binds of its summarizer: the repeat and the endpoint
    binding (never the credentials path, the ledger or execution knobs)."""
    spec = real.endpoint
    return {
        "repeat": real.repeat,
        "summarizer": {
            "kind": spec.kind,
            "base_url": spec.base_url.rstrip("/"),
            "model": spec.model,
            "generation": spec.generation(),
        },
    }


def checkpoint_spec(
    trace_key: str, config: ReplayConfig, real: RealBinding | None = None
) -> KeySpec:
    """A checkpoint's key spec. `real` only for a replay that calls a real model (the
    mid-trace summary of arm (d) in real mode): such a checkpoint is one per repeat and
    summarizer binding. Offline keys are what they were."""
    params: dict[str, Any] = {"replay": _replay_params(config)}
    if real is not None:
        params["real"] = real_summarizer_params(real)
    return KeySpec(
        kind="checkpoint",
        salt=CHECKPOINT_SALT,
        code=code_digest(HARNESS_CODE),
        params=params,
        inputs={"trace": trace_key},
    )


def checkpoint_key(
    trace_key: str, config: ReplayConfig | None = None, real: RealBinding | None = None
) -> str:
    return checkpoint_spec(trace_key, config or ReplayConfig(), real).key()


def checkpoint_root(store: Store, trace_id: str, key: str) -> Path:
    """The workspace's absolute path: fixed per checkpoint, pinned by its sidecar."""
    return store.root / "checkpoints" / f"{trace_id}-{key[:16]}"
