"""The reference harness's retained evidence for an outside agent's store and pack arms.

The outside ``continuity-store`` and ``continuity-pack-cold`` arms keep the names of
their reference counterparts and their evidence: the retained store and the continuity
pack the reference harness builds for the trace. `retained_view` builds (or reuses) the
reference store arm's checkpoint (the same replay configuration serves the pack arm),
restores its tree into a private folder (the checkpoint itself stays untouched and
unlocked, so samples of one trace run side by side), and renders the pack for a cold
session: no context, the reference window. The agent then gets the retained store as
the ConversationHistory MCP server in a new session (store), or the pack through
``context/inject`` in a new session (pack) (`continuity.agents.drive`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from continuity.arms import ARMS, arm_config, replay_config_for
from continuity.errors import ObjectMissing
from continuity.harness.checkpoints import build_checkpoint
from continuity.harness.keys import checkpoint_key
from continuity.harness.workspace import Workspace
from continuity.memory.history import CanonicalHistory
from continuity.memory.pack import build_pack
from continuity.memory.retained import RetainedStore
from continuity.store import Store
from continuity.traces.schema import ReplayTrace

__all__ = ["STORE_ARMS", "RetainedView", "retained_checkpoint", "retained_view"]

# The outside arms that carry the reference harness's retained evidence.
STORE_ARMS = ("continuity-store", "continuity-pack-cold")


class RetainedView(msgspec.Struct, frozen=True, kw_only=True):
    retained: str  # a private copy of the retained store (retained.sqlite3)
    checkpoint: str  # the reference checkpoint's key (what the evidence came from)
    pack: str  # the pack's text for a cold session ("" when the pack is invalid)
    pack_status: str


def retained_checkpoint(trace_key: str) -> str:
    """The key of the reference checkpoint the store and pack arms' evidence comes from
    (an agent unit's key binds it: a harness change builds new units)."""
    return checkpoint_key(trace_key, replay_config_for(ARMS["continuity-store"]))


def retained_view(store: Store, trace_key: str, trace: ReplayTrace, folder: Path) -> RetainedView:
    """The retained store and the cold pack of `trace` (module doc), restored under
    `folder` (replaced).

    Raises:
        ObjectMissing: the trace `trace_key` names is not in the store.
        HarnessError: the reference replay failed.
    """
    entry = store.get_action(trace_key)
    if entry is None:
        raise ObjectMissing(f"no trace {trace_key[:16]} in the store", location=trace.trace_id)
    arm = ARMS["continuity-store"]
    checkpoint = build_checkpoint(
        store,
        trace,
        trace_key=trace_key,
        trace_digest=entry.output.digest,
        config=replay_config_for(arm),
    )
    shutil.rmtree(folder, ignore_errors=True)
    store.restore_tree(checkpoint.tree.digest, folder)
    workspace = Workspace(folder)
    retained = RetainedStore(workspace.retained_path, readonly=True)
    history = CanonicalHistory.load(workspace.history_path)
    try:
        window = arm_config(ARMS["continuity-pack-cold"]).runtime.compaction.window
        pack = build_pack(retained, history, context=(), window_tokens=window, context_tokens=0)
    finally:
        retained.close()
        history.close()
    valid = pack.receipt.status != "invalid"
    return RetainedView(
        retained=str(workspace.retained_path),
        checkpoint=checkpoint.key,
        pack=pack.text if valid else "",
        pack_status=pack.receipt.status,
    )
