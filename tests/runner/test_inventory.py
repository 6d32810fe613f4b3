"""The sizing inventory as a content-addressed artifact: what each key binds, reuse with
the same digest, a changed trace re-measuring only its own paths, and a measurement
killed with SIGKILL resuming where it stopped.

Measurements run the real probe child, replay and loopback MCP calls on the original
traces (a few seconds); nothing is mocked. Counting uses `measure_paths`' ``on_path``
hook, called after each path it measured is stored.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import msgspec
import pytest

from continuity.arms import ARMS
from continuity.digest import code_digest
from continuity.errors import ContinuityError
from continuity.lookup.policy import LOOKUP_PROTOCOL, load_policy
from continuity.lookup.reader import binding_models
from continuity.lookup.soul import read_soul
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.runner.inventory import (
    Inventory,
    compute_policy,
    corpus_jobs,
    inventory_sha256,
    inventory_spec,
    policy_for,
)
from continuity.runner.inventory_paths import (
    PATH_CODE,
    PATH_KIND,
    PathJob,
    PathRecord,
    annotated_probes,
    measure_paths,
    path_record,
    path_spec,
)
from continuity.runner.inventory_regression import (
    REGRESSION_BYTES,
    REGRESSION_CODE,
    regression_spec,
    regression_texts,
)
from continuity.runner.lookup_budget import LookupBudget, run_lookup_budget
from continuity.sampling.worker import ProbeOutcome
from continuity.store import Store
from continuity.traces.suites import build_suite
from continuity.traces.validate import load_trace
from tests.conftest import ORIGINALS, REPO

ORIGINAL = [("original", None)]
SOUL = read_soul()
MODELS = binding_models("default")
ARMS_ORDER = ("native-lookup", "continuity-pack-cold")


def original_jobs(store: Store, fixtures: Path | None = None) -> list[PathJob]:
    jobs = []
    for item in build_suite(store, "original", fixtures=fixtures).items:
        trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
        probes = annotated_probes(trace)
        jobs += [PathJob("original", item, trace, ARMS[a], probes) for a in ARMS_ORDER]
    return jobs


# -- keys ----------------------------------------------------------------------------


def test_each_input_of_a_path_moves_its_key_and_only_its_own(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    job = original_jobs(store)[0]
    probe = job.probes[0]
    soul = (SOUL.sha256, SOUL.core_sha256)
    base = path_spec(job, probe, soul, MODELS)
    other_item = original_jobs(store)[2].item  # another trace
    variants = {
        "trace": path_spec(replace(job, item=other_item), probe, soul, MODELS),
        "arm": path_spec(replace(job, arm=ARMS["continuity-pack-cold"]), probe, soul, MODELS),
        "probe": path_spec(job, job.probes[1], soul, MODELS),
        "soul": path_spec(job, probe, ("0" * 64, soul[1]), MODELS),
        "soul core": path_spec(job, probe, (soul[0], "0" * 64), MODELS),
        "reader": path_spec(job, probe, soul, binding_models("alternate")),
        "lookup protocol": path_spec(
            job, probe, soul, MODELS, ("lookup-allowed-v2", PROBE_PROTOCOL)
        ),
        "probe protocol": path_spec(
            job, probe, soul, MODELS, (LOOKUP_PROTOCOL, "probe-protocol-v9")
        ),
    }
    keys = {name: spec.key() for name, spec in variants.items()}
    assert len(set(keys.values()) | {base.key()}) == len(keys) + 1
    # The trace and the arm move the checkpoint input too; nothing else does.
    assert variants["trace"].inputs["trace"] != base.inputs["trace"]
    assert variants["arm"].inputs["checkpoint"] != base.inputs["checkpoint"]
    assert variants["reader"].inputs["checkpoint"] != base.inputs["checkpoint"]
    for name in ("probe", "soul", "soul core", "lookup protocol", "probe protocol"):
        assert variants[name].inputs == base.inputs, name
    assert base.code == code_digest(PATH_CODE) and base.kind == PATH_KIND


def test_the_path_code_is_what_measures_and_never_what_classifies() -> None:
    for module in (
        "continuity.harness",
        "continuity.servers",
        "continuity.sampling",
        "continuity.probes.protocol",
        "continuity.lookup.meter",
        "continuity.lookup.probe",
        "continuity.lookup.budget",
    ):
        assert module in PATH_CODE, module
    # A class is recomputed whenever a policy is read: neither the classifier, the
    # policy nor the whole lookup package (which holds both) is in a path's code.
    for module in ("continuity.lookup", "continuity.lookup.classify", "continuity.lookup.policy"):
        assert module not in PATH_CODE and module not in REGRESSION_CODE, module


def test_regression_keys_bind_the_text_and_the_handler_code() -> None:
    texts = regression_texts()
    assert {len(t.encode("utf-8")) for t in texts.values()} == {REGRESSION_BYTES}
    plain = regression_spec("plain", texts["plain"])
    assert regression_spec("plain", texts["plain"] + "!").key() != plain.key()
    assert regression_spec("escaped", texts["plain"]).key() != plain.key()
    assert plain.code == code_digest(REGRESSION_CODE)
    assert "continuity.servers" in REGRESSION_CODE and "continuity.memory" in REGRESSION_CODE


def test_the_inventory_key_is_its_paths_keys_in_order() -> None:
    keys = ["a" * 64, "b" * 64]
    base = inventory_spec(keys, ["original"] * 2, ["original"], MODELS[0]).key()
    assert inventory_spec(keys[::-1], ["original"] * 2, ["original"], MODELS[0]).key() != base
    assert inventory_spec(keys[:1], ["original"], ["original"], MODELS[0]).key() != base
    assert inventory_spec(keys, ["original", "hard"], ["original"], MODELS[0]).key() != base
    assert inventory_spec(keys, ["original"] * 2, ["original"], MODELS[1]).key() != base
    assert inventory_spec(keys, ["original"] * 2, ["original"], MODELS[0]).key() == base


# -- measuring, reusing ---------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    store: Store
    first: LookupBudget
    measured: list[str]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Measured]:
    """The originals measured once from an empty store (16 paths and 2 regression)."""
    root = tmp_path_factory.mktemp("inventory")
    store = Store(root / "store")
    keys: list[str] = []
    first = run_lookup_budget(
        store, root / "first", corpus=ORIGINAL, on_path=lambda key, _: keys.append(key)
    )
    yield Measured(store, first, keys)


def test_a_rerun_reuses_every_path_and_reproduces_the_inventory(
    measured: Measured, tmp_path: Path
) -> None:
    first = measured.first
    assert (first.measured, first.reused) == (18, 0)
    assert len(measured.measured) == 16  # the trace paths (the hook sees those)
    again: list[str] = []
    second = run_lookup_budget(
        measured.store, tmp_path / "second", corpus=ORIGINAL, on_path=lambda k, _: again.append(k)
    )
    assert again == [] and (second.measured, second.reused) == (0, 18)
    assert (second.inventory_sha256, second.inventory_key, second.policy_sha256) == (
        first.inventory_sha256,
        first.inventory_key,
        first.policy_sha256,
    )
    folder = Path(first.policy_path).parent
    for name in ("inventory.json", "policy.json"):
        assert (tmp_path / "second" / name).read_bytes() == (folder / name).read_bytes()
    # Every path and the inventory are actions, pinned by a ref against gc.
    ref = measured.store.get_ref(f"lookup/inventories/{first.inventory_key}")
    assert ref is not None and len(ref.actions) == 19
    kinds = [measured.store.get_action(k) for k in ref.actions]
    assert [e.kind for e in kinds if e is not None] == ["lookup-inventory"] + [PATH_KIND] * 16 + [
        "lookup-regression-path"
    ] * 2


def test_the_originals_reproduce_the_frozen_policys_slots(measured: Measured) -> None:
    # The frozen policy was measured over the whole corpus; its original-trace slots are
    # exactly what a fresh measurement of the originals gives.
    inventory = msgspec.json.decode(
        (Path(measured.first.policy_path).parent / "inventory.json").read_bytes(), type=Inventory
    )
    frozen = load_policy()
    fresh = policy_for(inventory, SOUL, frozen.calls, frozen.bytes)
    assert fresh.slots == [s for s in frozen.slots if s.suite == "original"]
    assert inventory_sha256(inventory) == measured.first.inventory_sha256


def test_a_changed_trace_re_measures_only_its_own_paths(measured: Measured, tmp_path: Path) -> None:
    shutil.copytree(measured.store.root, tmp_path / "store", symlinks=True)
    store = Store(tmp_path / "store")
    fixtures = tmp_path / "fixtures"
    (fixtures / "original").mkdir(parents=True)
    names = ["brightline-return.json", "harbor-market-stall.json"]
    for name in names:
        shutil.copy(ORIGINALS / name, fixtures / "original" / name)
    counted: list[PathRecord] = []

    def count(_: str, record: PathRecord) -> None:
        counted.append(record)

    # The same two traces from another folder: the same keys, nothing measured.
    run = measure_paths(store, original_jobs(store, fixtures), SOUL, MODELS, on_path=count)
    assert counted == [] and len(run.reused) == 8
    changed = fixtures / "original" / names[1]
    document = json.loads(changed.read_text())
    document["title"] += " (rescheduled)"
    changed.write_text(json.dumps(document, indent=2))
    jobs = original_jobs(store, fixtures)
    run = measure_paths(store, jobs, SOUL, MODELS, on_path=count)
    harbor = [j for j in jobs if j.trace.trace_id == "harbor-market-stall"]
    expected = sum(len(j.probes) for j in harbor)
    assert expected == 4
    assert len(counted) == expected == len(run.measured)
    assert {r.trace_id for r in counted} == {"harbor-market-stall"}
    assert {(r.arm, r.probe_id) for r in counted} == {
        (j.arm.id, p.probe.probe_id) for j in harbor for p in j.probes
    }
    assert len(run.reused) == 4 and set(run.reused).isdisjoint(run.measured)
    # A title changes no measured value: the new records equal the old ones.
    before = {(p.record.arm, p.record.probe_id): p.record for p in run.paths[4:]}
    old = measure_paths(store, original_jobs(store), SOUL, MODELS, on_path=count)
    assert len(counted) == expected  # the real fixtures' paths are all still stored
    assert before == {
        (p.record.arm, p.record.probe_id): p.record
        for p in old.paths
        if p.record.trace_id == "harbor-market-stall"
    }


def test_corpus_jobs_cover_every_trace_and_lookup_arm(measured: Measured) -> None:
    jobs = corpus_jobs(measured.store, ORIGINAL)
    assert len(jobs) == 8
    assert [j.arm.id for j in jobs[:2]] == list(ARMS_ORDER)
    assert sum(len(j.probes) for j in jobs) == 16


# -- a killed measurement --------------------------------------------------------------

MEASURE = """
import sys
from pathlib import Path
from continuity.runner.lookup_budget import run_lookup_budget
from continuity.store import Store
run_lookup_budget(Store(sys.argv[1]), Path(sys.argv[2]), corpus=[("original", None)])
"""


def path_actions(root: Path) -> dict[str, int]:
    """Key -> mtime (ns) of every stored trace-path action entry under store `root`."""
    store = Store(root)
    found = {}
    for path in store.actions_dir.rglob("*.json"):
        entry = store.get_action(path.stem, verify_output=False)
        if entry is not None and entry.kind == PATH_KIND:
            found[path.stem] = path.stat().st_mtime_ns
    return found


def kill_after(paths: int, root: Path, output: Path) -> None:
    """Run a measurement of the originals in its own session and SIGKILL the whole
    process group once `paths` trace paths are stored."""
    child = subprocess.Popen(
        [sys.executable, "-c", MEASURE, str(root), str(output)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 600
        while not (root.is_dir() and len(path_actions(root)) >= paths):
            assert child.poll() is None, "the measurement ended before it was killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL


def test_a_killed_measurement_resumes_where_it_stopped(measured: Measured, tmp_path: Path) -> None:
    root = tmp_path / "store"
    kill_after(4, root, tmp_path / "killed")
    before = path_actions(root)
    assert 4 <= len(before) < 16  # killed mid-way: some trace paths stored, not all
    resumed: list[str] = []
    result = run_lookup_budget(
        Store(root), tmp_path / "resumed", corpus=ORIGINAL, on_path=lambda k, _: resumed.append(k)
    )
    # Nothing recorded before the kill ran again; everything else did, once.
    assert set(resumed).isdisjoint(before)
    assert len(resumed) == len(set(resumed)) == 16 - len(before)
    after = path_actions(root)
    assert set(after) == set(before) | set(resumed)
    assert {key: after[key] for key in before} == before  # untouched entries
    # The same inventory, policy and digest as an uninterrupted run.
    assert (result.inventory_sha256, result.policy_sha256) == (
        measured.first.inventory_sha256,
        measured.first.policy_sha256,
    )
    assert (result.measured, result.reused) == (18 - len(before), len(before))


# -- failures --------------------------------------------------------------------------


def test_a_failed_reference_path_is_coded(tmp_path: Path) -> None:
    job = original_jobs(Store(tmp_path / "store"))[0]
    failed = ProbeOutcome(job.probes[0].index, None, "child_watchdog: killed")
    with pytest.raises(ContinuityError) as caught:
        path_record(job, job.probes[0], failed)
    assert caught.value.code == "lookup_inventory_failed"
    assert caught.value.location == job.trace.trace_id
    assert "child_watchdog" in caught.value.message


def test_an_inventory_without_a_discovered_path_is_empty(measured: Measured) -> None:
    inventory = msgspec.json.decode(
        (Path(measured.first.policy_path).parent / "inventory.json").read_bytes(), type=Inventory
    )
    lost = Inventory(
        corpus=inventory.corpus,
        reader=inventory.reader,
        paths=[msgspec.structs.replace(p, discovered=False) for p in inventory.paths],
    )
    with pytest.raises(ContinuityError) as caught:
        compute_policy(lost, SOUL)
    assert caught.value.code == "lookup_inventory_empty"
    # The originals derive their own budget: the escaped regression record (5 calls).
    assert compute_policy(inventory, SOUL).calls == 5 + 2
