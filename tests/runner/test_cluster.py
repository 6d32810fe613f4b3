"""Units on a Dask cluster (`continuity.runner.cluster`): a real ``LocalCluster`` of
worker processes on 127.0.0.1, the run's store or a shared one, against the local
runner's units byte for byte, and a real ``dask scheduler`` process killed mid-run.
(CI's cluster smoke adds two `dask worker` processes, an S3 server and a SIGKILLed
worker: `.ci/cluster-smoke`.)"""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import ContinuityError
from continuity.runner.cluster import Cluster, GroupTask, completed, run_group, task_result
from continuity.runner.units.build import build_units
from continuity.runner.units.execution import OFFLINE
from continuity.runner.units.record import UnitRecord
from continuity.runner.units.selection import plan_units
from continuity.runner.units.store import context_refs
from continuity.store import (
    SharedStore,
    Store,
    collect_shared_garbage,
    open_backend,
    verify_shared,
)
from rules.units import _units

pytest.importorskip("distributed")

COMMON = {"suite": "original", "arms": "native", "probe_limit": 1}


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.json")}


def _run(tmp_path: Path, name: str, **options: Any) -> tuple[str, dict[str, str]]:
    out = tmp_path / name
    line = _units(**COMMON, out=str(out), store=str(out / "store"), **options)
    return line, _digests(out / "runs" / "offline" / "units")


@pytest.fixture(scope="module")
def local_units(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _run(tmp_path_factory.mktemp("local"), "local")[1]


def test_a_local_cluster_builds_the_local_units_byte_for_byte(
    tmp_path: Path, local_units: dict[str, str]
) -> None:
    line, built = _run(tmp_path, "dask", executor="dask", workers=2)
    assert "4 units (4 run, 0 from the store)" in line
    assert built == local_units and len(built) == 4
    again, _ = _run(tmp_path, "dask", executor="dask", workers=2)
    assert "4 units (0 run, 4 from the store)" in again  # reused, no task sent


def test_workers_with_a_shared_store_publish_and_a_new_client_reuses(
    tmp_path: Path, local_units: dict[str, str]
) -> None:
    shared = str(tmp_path / "shared")
    line, built = _run(tmp_path, "first", executor="dask", workers=2, shared_store=shared)
    assert "(4 run, 0 from the store)" in line and built == local_units
    assert len(open_backend(shared).names("actions/")) >= 8  # 4 traces and 4 units
    # A client with an empty store of its own: every unit comes from the shared store,
    # with the reader contexts its drill-down shows (named inside the unit's blob).
    fresh, rebuilt = _run(tmp_path, "second", executor="dask", workers=1, shared_store=shared)
    assert "(0 run, 4 from the store)" in fresh and rebuilt == local_units
    client = Store(tmp_path / "second" / "store")
    folder = tmp_path / "second" / "runs" / "offline" / "units"
    records = [msgspec.json.decode(p.read_bytes(), type=UnitRecord) for p in folder.glob("*.json")]
    contexts = context_refs(records)
    assert contexts and all(client.verify_ref(ref) for ref in contexts)
    # Each client recorded its run's plan there: it roots every file the run published,
    # so the shared store's gc, with no grace at all, removes nothing.
    backend = open_backend(shared)
    assert len(backend.names("refs/plans/")) == 2
    collected = collect_shared_garbage(backend, grace_seconds=0)
    assert (collected.removed_objects, collected.removed_actions) == (0, 0)
    assert collected.kept_actions == 8 and collected.kept_objects == len(backend.names("objects/"))


def test_a_worker_killed_mid_group_leaves_published_units_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group's task run again on another worker (as Dask does after a worker dies)
    reuses what the first published and builds the rest; the shared store never holds
    a unit's entry without its output."""
    store = Store(tmp_path / "client")
    plans = plan_units(store, "original", None, out_dir=tmp_path, arms="native,compaction-1",
                       repeats=1, traces="brightline-return", only_repeats=None,
                       probe_mode="recall-only")  # fmt: skip
    shared = SharedStore(store, open_backend(str(tmp_path / "shared")))
    for plan in plans:
        shared.push_action(plan.item.key)
    task = GroupTask(store_root="", shared=str(tmp_path / "shared"), plans=plans[:1],
                     probe_limit=1)  # fmt: skip
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path / "worker-a"))
    first = run_group(task, OFFLINE)  # the first worker built one unit, then died
    assert [status for _, status in first] == ["built"]
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path / "worker-b"))
    retried = run_group(msgspec.structs.replace(task, plans=plans), OFFLINE)
    assert [status for _, status in retried] == ["cached", "built"]
    assert first[0][0] == retried[0][0]  # the same unit, byte for byte
    for name in open_backend(str(tmp_path / "shared")).names("actions/"):
        key = name.rsplit("/", 1)[1].removesuffix(".json")
        assert SharedStore(Store(tmp_path / f"check-{key[:6]}"), shared.backend).pull_action(key)


def test_a_worker_running_other_code_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client plans a unit under one key; a worker (another process, unpatched)
    builds it under another: cluster_code_mismatch, never a unit mixed into the run."""
    monkeypatch.setattr("continuity.runner.cluster._key", lambda *args: "0" * 64)
    with pytest.raises(ContinuityError) as caught:
        build_units(Store(tmp_path / "store"), "smoke", arms="native", probe_limit=1,
                    run_dir=tmp_path / "run", cluster=Cluster(workers=1))  # fmt: skip
    assert caught.value.code == "cluster_code_mismatch"
    assert not (tmp_path / "run" / "units").exists()


def test_a_task_dask_lost_is_cluster_task_failed() -> None:
    class Lost:
        def result(self) -> None:
            raise RuntimeError("worker died three times")

    with pytest.raises(ContinuityError) as caught:
        task_result(Lost())
    assert caught.value.code == "cluster_task_failed" and "resume" in caught.value.message

    def broken() -> Iterator[object]:
        raise OSError("scheduler connection closed")
        yield

    with pytest.raises(ContinuityError) as closed:
        list(completed(broken()))
    assert closed.value.code == "cluster_task_failed"


@pytest.mark.parametrize(
    ("options", "location"),
    [
        ({"executor": "dask", "scheduler": "tcp://127.0.0.1:1", "workers": 2}, "--workers"),
        ({"executor": "spark"}, "--executor"),
        ({"scheduler": "tcp://127.0.0.1:1"}, "--scheduler"),
        ({"workers": 2}, "--workers"),
        ({"shared_store": "/tmp/x"}, "--shared-store"),
    ],
)
def test_cluster_options_are_refused_where_they_cannot_apply(
    tmp_path: Path, options: dict[str, Any], location: str
) -> None:
    with pytest.raises(ContinuityError) as caught:
        _run(tmp_path, "refused", **options)
    assert caught.value.code == "option_invalid" and caught.value.location == location


def test_an_unreachable_scheduler_is_scheduler_unreachable(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    cluster = Cluster(scheduler="tcp://127.0.0.1:9", timeout=1.0)  # the discard port: closed
    with pytest.raises(ContinuityError) as caught:
        build_units(store, "smoke", arms="native", probe_limit=1, run_dir=tmp_path / "run",
                    cluster=cluster)  # fmt: skip
    assert caught.value.code == "scheduler_unreachable"
    assert caught.value.location == "--scheduler"


def test_an_unsupported_shared_store_is_refused_before_any_task(tmp_path: Path) -> None:
    with pytest.raises(ContinuityError) as caught:
        _run(tmp_path, "bad", executor="dask", shared_store="ftp://host/store")
    assert caught.value.code == "store_backend_unsupported"


def test_without_dask_distributed_the_executor_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if absent
    store = Store(tmp_path / "store")
    with pytest.raises(ContinuityError) as caught:
        build_units(store, "smoke", arms="native", probe_limit=1, run_dir=tmp_path / "run",
                    cluster=Cluster())  # fmt: skip
    assert caught.value.code == "executor_unavailable" and caught.value.location == "--executor"


def _spawn(*command: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)


def _until(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_lost_scheduler_fails_the_command_and_the_same_command_resumes(
    tmp_path: Path, local_units: dict[str, str]
) -> None:
    """A real ``dask scheduler`` process SIGKILLed once its worker has published a
    unit: the command fails with cluster_task_failed, and run again (here on a
    LocalCluster, over the same shared store) it reuses what was published and builds
    the rest; the units are the local run's, byte for byte."""
    dask = str(Path(sys.executable).with_name("dask"))
    scheduler_file = tmp_path / "scheduler.json"
    loopback = ["--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0"]
    files = ["--scheduler-file", str(scheduler_file)]
    processes = [_spawn(dask, "scheduler", *loopback, *files, log=tmp_path / "scheduler.log")]
    try:
        _until(lambda: scheduler_file.is_file() and scheduler_file.stat().st_size > 0, 60,
               "the scheduler")  # fmt: skip
        address = json.loads(scheduler_file.read_text())["address"]
        worker = ["--nthreads", "1", "--no-nanny", "--dashboard-address", "127.0.0.1:0"]
        scratch = ["--local-directory", str(tmp_path / "worker")]
        processes.append(_spawn(dask, "worker", address, *worker, *scratch, log=tmp_path / "w.log"))
        shared = str(tmp_path / "shared")
        backend = open_backend(shared)

        def kill_once_a_unit_is_published() -> None:  # the 4 traces first, then units
            _until(lambda: len(backend.names("actions/")) > 4, 120, "a published unit")
            processes[0].send_signal(signal.SIGKILL)

        killer = threading.Thread(target=kill_once_a_unit_is_published, daemon=True)
        killer.start()
        with pytest.raises(ContinuityError) as caught:
            _run(tmp_path, "lost", executor="dask", scheduler=address, shared_store=shared)
        killer.join(timeout=5)
        assert caught.value.code == "cluster_task_failed"
        assert "run the same command again" in caught.value.message
        published = len(backend.names("actions/")) - 4
        assert 1 <= published < 4, published  # killed mid-run: some units, not all
    finally:
        for process in processes:
            process.kill()
            process.wait(timeout=30)
    line, built = _run(tmp_path, "lost", executor="dask", workers=1, shared_store=shared)
    assert f"4 units ({4 - published} run, {published} from the store)" in line
    assert built == local_units


def test_a_shared_unit_missing_an_object_is_built_again_and_heals(
    tmp_path: Path, local_units: dict[str, str]
) -> None:
    """A unit entry whose output object is gone from the shared store (a gc raced a
    reader, or a damaged bucket) is not taken as shared: it is built again, which
    publishes the missing object, and the entry already there is whole again."""
    shared = str(tmp_path / "shared")
    _run(tmp_path, "first", executor="dask", workers=1, shared_store=shared)
    backend = open_backend(shared)
    client = Store(tmp_path / "first" / "store")
    folder = tmp_path / "first" / "runs" / "offline" / "units"
    key = msgspec.json.decode(next(folder.glob("*.json")).read_bytes(), type=UnitRecord).key
    entry = client.get_action(key)
    assert entry is not None
    backend.delete(f"objects/{entry.output.digest[:2]}/{entry.output.digest}")
    assert verify_shared(backend).orphaned_actions == [key]
    line, built = _run(tmp_path, "second", executor="dask", workers=1, shared_store=shared)
    assert "(1 run, 3 from the store)" in line and built == local_units
    assert not verify_shared(backend).orphaned_actions
