"""The fresh-copy rule under the template restore: a probe that writes into a file its
copy shares with the checkpoint's template has its sample excluded
(``checkpoint_contract_failed``), and the next probe sees the snapshot's bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

import continuity.sampling.child as child_module
from continuity.arms import ARMS, replay_config_for
from continuity.harness.checkpoints import build_checkpoint
from continuity.harness.workspace import Workspace
from continuity.runner.units.selection import limited, probe_slots
from continuity.sampling.receipts import ProbeRequest
from continuity.sampling.worker import UnitRequest, run_unit, warm_imports
from continuity.store import Store
from continuity.traces.suites import build_suite
from continuity.traces.validate import load_trace


def test_a_probe_writing_a_linked_file_is_excluded_and_the_next_sees_pristine_bytes(
    store: Store, out_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = build_suite(store, "original", out_dir=out_dir)
    item = suite.items[0]
    trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
    arm = ARMS["native"]
    checkpoint = build_checkpoint(
        store, trace, trace_key=item.key, trace_digest=item.digest, config=replay_config_for(arm)
    )
    specs, _ = probe_slots(trace, arm, limited(trace, 3), None)
    pristine = hashlib.sha256(
        store.get_blob(store.get_tree(checkpoint.tree.digest).entries["replay.json"].digest)
    ).hexdigest()
    seen = tmp_path / "seen"
    seen.mkdir()
    real_probe = child_module.run_probe

    async def writing_probe(workspace: Workspace, request: ProbeRequest, **kw: Any) -> Any:
        receipt = workspace.root / "replay.json"  # linked from the template, read-only
        digest = hashlib.sha256(receipt.read_bytes()).hexdigest()
        (seen / str(request.probe_index)).write_text(digest)
        if request.probe_index == specs[0].index:
            mode = receipt.stat().st_mode
            receipt.chmod(0o644)  # root would not even need to
            with open(receipt, "r+b") as handle:
                handle.write(b"X")
            receipt.chmod(mode)  # only the write itself is left to find
        return await real_probe(workspace, request, **kw)

    # The forked probe children inherit the patched function.
    monkeypatch.setattr(child_module, "run_probe", writing_probe)
    request = UnitRequest(
        store_root=str(store.root),
        tree=checkpoint.tree.digest,
        workspace=checkpoint.root,
        arm=arm.id,
        probes=specs,
    )
    warm_imports(request)
    outcomes = run_unit(request).outcomes
    first, *rest = outcomes
    assert first.evidence is None and first.error is not None
    assert first.error.startswith("checkpoint_contract_failed: ")
    assert "replay.json" in first.error
    assert all(o.evidence is not None and o.error is None for o in rest), rest
    # Every probe, the one after the write included, started from the snapshot's bytes.
    assert {p.name: p.read_text() for p in seen.iterdir()} == {
        str(s.index): pristine for s in specs
    }
    assert not Path(checkpoint.root + ".template").exists()
