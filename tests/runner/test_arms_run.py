"""Every arm on the hard seeds: boundary, pressure, contexts, packs, the store.

The default run samples every arm on hard seeds 101-102 (the offline contract's two);
the full-size variant (``-m variant``, run by CI) samples every arm on all eight seeds
with the same checks.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import msgspec
import pytest
from msgspec import UNSET

from continuity.arms import ARMS, LEDGER_ARM, Arm, replay_config_for
from continuity.errors import CheckpointError, HarnessError, typed_error
from continuity.evidence import classify
from continuity.harness.checkpoints import build_checkpoint, fork
from continuity.harness.compaction import should_compact
from continuity.harness.session import DurableSession, SessionBoundaryEntry
from continuity.harness.workspace import Workspace
from continuity.runner.children import ZYGOTE_PRELOAD
from continuity.runner.design import check_design
from continuity.runner.samples import (
    SampleRecord,
    build_arm_samples,
    run_probe_child,
    run_probe_process,
)
from continuity.runner.samples import _checkpoint as samples_checkpoint
from continuity.sampling.child import run_probe
from continuity.sampling.receipts import ProbeRequest
from continuity.store import Store
from continuity.traces.schema import Trace, decode_trace
from continuity.traces.suites import SuiteItem, build_suite
from continuity.zygote import ZygotePool

# One worker runs this module: its module fixture is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("arms-run")

SEEDS = (101, 102)
ALL_SEEDS = tuple(range(101, 109))


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Path]]:
    root = tmp_path_factory.mktemp("arms")
    yield Store(root / "store"), root / "out"


def _samples(store: Store, out: Path, seeds: Sequence[int]) -> list[SampleRecord]:
    records, path, built = build_arm_samples(store, "hard", seeds, arms="all", out_dir=out)
    assert path.is_file() and built == len(records) == 9 * len(seeds)
    return records


@pytest.fixture(scope="module")
def samples(shared: tuple[Store, Path]) -> list[SampleRecord]:
    return _samples(*shared, SEEDS)


def _check_crossings(samples: list[SampleRecord]) -> None:
    """Every sample valid, and each arm's boundary where its design puts it."""
    bad = [
        (r.trace_id, r.arm, r.classification) for r in samples if r.classification.status != "valid"
    ]
    assert bad == []
    for record in samples:
        e = record.evidence
        assert e is not None
        if record.arm == "native":
            assert e.probe_input_tokens >= 150_000 and e.operations == []
        if record.arm in ("cold-rebuild", "restart-switch-compact"):
            assert e.reseed is not None and e.reseed.text_messages == 64
            assert e.reseed.dropped_records >= 32
        if record.arm == "compaction-1":
            assert e.compaction is not None and e.compaction.tokens_before >= 150_000
        if record.arm == "compaction-2":
            assert e.mid_trace_compaction is not None
            assert e.mid_trace_compaction.tokens_before >= 80_000
            assert e.compaction is not None and e.compaction.tokens_before >= 40_000
        if record.arm == "ceiling":
            assert e.compaction is not None and e.compaction.reason == "ceiling"
            assert e.compaction.tokens_before >= 200_000
        if record.arm == "restart-switch-compact":
            assert e.operations == ["restart", "model_change", "compaction"]
            assert e.fresh_process


def _check_packs(samples: list[SampleRecord]) -> None:
    """The pack in the pack arm's every request exactly once, and in no other arm."""
    for record in samples:
        assert record.evidence is not None
        packs = record.evidence.packs_per_request
        if record.arm == "continuity-pack-cold":
            assert packs and all(count == 1 for count in packs)
            assert len(packs) == record.evidence.requests == 3  # it called the tool twice
        else:
            assert not any(packs), record.arm


def _check_store_tools(samples: list[SampleRecord]) -> None:
    """The store arms offer ConversationHistory alone, and use it; the others no tool."""
    for record in samples:
        e = record.evidence
        assert e is not None
        if ARMS[record.arm].history_tool:
            assert e.tools_offered == ["ConversationHistory"]
            assert [c.action for c in e.history_calls] == ["search", "get"]
            assert all(c.status == "succeeded" for c in e.history_calls)
            assert e.store is not None and e.store.records > 0
            assert e.store.omitted_tool_results >= 1  # the credential result
        else:
            assert e.tools_offered == [] and e.history_calls == []


def _check_design(store: Store, out: Path, seed: int) -> None:
    trace, item = _hard(store, out, seed)
    report = check_design(store, trace, item)
    assert report.account_in_native and not report.account_in_cold
    assert report.head_identifier_in_cold and report.secret_runs_found == []


def test_every_arm_crosses_its_boundary_under_pressure(samples: list[SampleRecord]) -> None:
    _check_crossings(samples)


def test_packs_only_in_the_pack_arm_exactly_once(samples: list[SampleRecord]) -> None:
    _check_packs(samples)


def test_store_arms_offer_only_conversation_history(samples: list[SampleRecord]) -> None:
    _check_store_tools(samples)


def _hard(store: Store, out: Path, seed: int) -> tuple[Trace, SuiteItem]:
    item = build_suite(store, "hard", (seed,), out_dir=out).items[0]
    return decode_trace(store.get_blob(item.digest)), item


@pytest.mark.parametrize("seed", SEEDS)
def test_the_trace_design_shows_in_the_contexts(
    samples: list[SampleRecord], shared: tuple[Store, Path], seed: int
) -> None:
    _check_design(*shared, seed)


@pytest.mark.variant
def test_every_arm_on_every_hard_seed_full_size(tmp_path: Path) -> None:
    store, out = Store(tmp_path / "store"), tmp_path / "out"
    records = _samples(store, out, ALL_SEEDS)
    _check_crossings(records)
    _check_packs(records)
    _check_store_tools(records)
    for seed in ALL_SEEDS:
        _check_design(store, out, seed)


def test_a_store_without_records_is_store_degraded(
    samples: list[SampleRecord], shared: tuple[Store, Path]
) -> None:
    store, out = shared
    trace, item = _hard(store, out, 101)
    arm = ARMS["continuity-store"]
    checkpoint = build_checkpoint(
        store, trace, trace_key=item.key, trace_digest=item.digest, config=replay_config_for(arm)
    )
    with fork(store, checkpoint.key) as root:
        Workspace(root).retained_path.unlink()
        evidence = run_probe_child(
            root, ProbeRequest(arm=arm.id, probe_text="where?", parent_pid=os.getpid())
        )
    assert evidence.store_error == "history_unavailable"
    assert classify(arm, evidence, family="hard").status == "store_degraded"


def test_the_wrong_checkpoint_leaves_the_boundary_unverified(
    samples: list[SampleRecord], shared: tuple[Store, Path]
) -> None:
    store, out = shared
    trace, item = _hard(store, out, 102)
    native_checkpoint = build_checkpoint(
        store,
        trace,
        trace_key=item.key,
        trace_digest=item.digest,
        config=replay_config_for(ARMS["native"]),
    )
    with fork(store, native_checkpoint.key) as root:  # history already on the reader
        evidence = run_probe_child(
            root, ProbeRequest(arm="cold-rebuild", probe_text="x?", parent_pid=os.getpid())
        )
    result = classify(ARMS["cold-rebuild"], evidence, family="hard")
    assert result.status == "boundary_unverified"
    assert "no model-change reseed to the reader" in result.reasons


@pytest.fixture(scope="module")
def zygotes() -> Iterator[ZygotePool]:
    with ZygotePool(ZYGOTE_PRELOAD) as pool:
        yield pool


@pytest.mark.parametrize("forked", [False, True], ids=["interpreter", "zygote"])
def test_a_failing_child_keeps_its_code(tmp_path: Path, zygotes: ZygotePool, forked: bool) -> None:
    request = ProbeRequest(arm="native", probe_text="x", parent_pid=1)
    with pytest.raises(CheckpointError) as err:
        run_probe_process(tmp_path, request, zygotes=zygotes if forked else None)
    assert err.value.code == "child_failed" and err.value.location == str(tmp_path)
    assert err.value.message.startswith("probe child exited 3: error session_corrupt: ")


@pytest.mark.parametrize("arm", ["native", "continuity-store", LEDGER_ARM])
def test_a_probe_forked_from_a_zygote_sees_what_an_interpreter_of_its_own_sees(
    samples: list[SampleRecord],
    shared: tuple[Store, Path],
    zygotes: ZygotePool,
    arm: str,
    tmp_path: Path,
) -> None:
    """The arm samples fork their probe child from a zygote: the same evidence, byte
    for byte (the reader context it keeps in the store included), and the same request
    dump, as the child started as an interpreter; a new process each time."""
    store, out = shared
    trace, item = _hard(store, out, 101)
    checkpoint, forked, _ = samples_checkpoint(store, trace, item, ARMS[arm], None)
    assert checkpoint is not None
    seen, dumps = [], []
    for number, pool in enumerate((None, zygotes, zygotes)):
        dump = tmp_path / f"requests-{number}.jsonl"
        request = ProbeRequest(
            arm=arm,
            probe_text=trace.probes[0].text,
            parent_pid=os.getpid(),
            dump_requests=str(dump),
            store_root=str(store.root),
        )
        with fork(store, forked) as root:
            seen.append(run_probe_process(root, request, zygotes=pool))
        dumps.append(dump.read_bytes())
    (first, by_self), *by_fork = seen
    assert first.context is not UNSET
    assert all(msgspec.json.encode(e) == msgspec.json.encode(first) for e, _ in by_fork)
    assert dumps[0] and dumps.count(dumps[0]) == 3
    pids = {by_self.child_pid, *(receipt.child_pid for _, receipt in by_fork)}
    assert len(pids) == 3 and os.getpid() not in pids
    assert zygotes.zygote().process.pid not in pids  # forked from it, never it


def test_a_failed_sample_is_not_stored_so_the_next_run_retries_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from continuity.runner import samples as samples_module

    store = Store(tmp_path / "store")
    item = build_suite(store, "original", out_dir=tmp_path / "out").items[0]
    trace = decode_trace(store.get_blob(item.digest))
    real_child = samples_module.run_probe_process

    def busy(*_: object, **__: object) -> object:
        raise CheckpointError("the checkpoint is busy", code="checkpoint_busy")

    monkeypatch.setattr(samples_module, "run_probe_process", busy)
    failed, how = samples_module.sample_arm(store, trace, item, ARMS["native"])
    assert how == "built" and failed.classification.status == "failed"
    monkeypatch.setattr(samples_module, "run_probe_process", real_child)
    retried, how = samples_module.sample_arm(store, trace, item, ARMS["native"])
    assert how == "built" and retried.classification.status == "valid"
    assert samples_module.sample_arm(store, trace, item, ARMS["native"])[1] == "cached"


def _restored_in_place(tmp_path: Path, arm: Arm) -> tuple[Trace, Path]:
    """The first original trace's checkpoint for `arm`, restored at its own path (as a
    probe child's parent does), ready for an in-process `run_probe`."""
    store = Store(tmp_path / "store")
    item = build_suite(store, "original", out_dir=tmp_path / "out").items[0]
    trace = decode_trace(store.get_blob(item.digest))
    checkpoint = build_checkpoint(
        store, trace, trace_key=item.key, trace_digest=item.digest, config=replay_config_for(arm)
    )
    root = Path(checkpoint.root)
    shutil.rmtree(root)
    store.restore_tree(checkpoint.tree.digest, root)
    return trace, root


def test_a_boundary_the_session_file_did_not_record_fails_the_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arm = ARMS["restart-switch-compact"]
    trace, root = _restored_in_place(tmp_path, arm)
    original = DurableSession.append_boundary

    def lossy(
        self: DurableSession, kind: str, details: object = None, *, new_root: bool = False
    ) -> object:
        if kind == "restart":  # performed, but the write is lost
            return SessionBoundaryEntry(**self._next(), kind=kind, details={})
        return original(self, kind, details, new_root=new_root)  # type: ignore[arg-type]

    monkeypatch.setattr(DurableSession, "append_boundary", lossy)
    request = ProbeRequest(arm=arm.id, probe_text=trace.probes[0].text, parent_pid=os.getpid())
    with pytest.raises(BaseException) as caught:
        anyio.run(lambda: run_probe(Workspace(root), request))
    typed = typed_error(caught.value)
    assert isinstance(typed, HarnessError) and typed.code == "boundary_record_mismatch"


def test_mid_run_compactions_are_reported_but_not_the_boundary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arm = ARMS["continuity-store-compaction"]
    trace, root = _restored_in_place(tmp_path, arm)
    calls: list[object] = []

    def between_rounds_too(*args: object, **kwargs: object) -> object:
        # The pre-turn check is real; every check between tool rounds finds the
        # context over the trigger, as retrieved text can push it there.
        calls.append(args)
        return should_compact(*args, **kwargs) if len(calls) == 1 else "proactive"  # type: ignore[arg-type]

    monkeypatch.setattr("continuity.sampling.boundary.should_compact", between_rounds_too)
    request = ProbeRequest(arm=arm.id, probe_text=trace.probes[0].text, parent_pid=os.getpid())
    evidence = anyio.run(lambda: run_probe(Workspace(root), request))
    assert evidence.compaction is not None and evidence.compaction.reason == "proactive"
    assert evidence.mid_run_compactions, "no mid-run compaction happened"
    assert all(c.reason == "mid_run" for c in evidence.mid_run_compactions)
    assert evidence.operations == ["compaction"]  # the boundary is the pre-turn one only
    assert classify(arm, evidence, family="original").status == "valid"
