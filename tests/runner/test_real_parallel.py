"""Real runs are parallel by default: every checkpoint at once, within the model slots.

The end-to-end cases run `run_real` with no ``jobs`` against the loopback wire server
with a per-call latency, and read how many calls the server held at once
(`WireServer.peak_in_flight`); the slots (``--concurrency``) bound it, the stop rules
still stop admission, and a stopped run resumes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from continuity.arms import parse_arms
from continuity.errors import RunIncomplete
from continuity.runner.parallel import (
    MAX_REAL_JOBS,
    THREAD_MEMORY,
    available_memory,
    checkpoint_group,
    real_jobs,
    run_grouped,
)
from continuity.servers.wire import Faults, WireServer, serve_in_thread
from tests.runner.test_real import TRACE, Rig

ARMS = {arm.id: arm for arm in parse_arms("all")}


def test_real_jobs_one_per_model_slot_within_cores_and_memory() -> None:
    plenty = 64 * 2**30
    assert real_jobs(4, 1, memory=plenty, cpus=8) == 4
    assert real_jobs(4, 2, memory=plenty, cpus=8) == 8  # the reader's and the judge's slots
    assert real_jobs(4, 2, memory=plenty, cpus=2) == 4  # two threads per core
    assert real_jobs(1, 1, memory=plenty, cpus=2) == 1
    assert real_jobs(256, 2, memory=plenty, cpus=64) == MAX_REAL_JOBS
    assert real_jobs(4, 1, memory=4 * THREAD_MEMORY, cpus=8) == 2  # half the memory
    assert real_jobs(4, 1, memory=0, cpus=8) == 1  # never none
    assert real_jobs(4, 1, memory=None, cpus=None) == 2  # unknown: one core, no memory cap


def test_available_memory_reads_meminfo() -> None:
    memory = available_memory()
    assert memory is None or memory > THREAD_MEMORY


def test_units_sharing_a_checkpoint_share_a_group() -> None:
    def group(arm: str, repeat: int = 1, trace: str = TRACE) -> str:
        return checkpoint_group(trace, ARMS[arm], repeat)

    # native and compaction-1 replay the same history: one checkpoint, one group
    assert group("native") == group("compaction-1")
    assert group("native") != group("continuity-store")
    assert group("native") != group("native", trace="fernway-office-move")
    assert group("native", 2) == group("native", 1)  # repeats reuse the checkpoint
    # a real mid-trace compaction forks a checkpoint of its own per repeat
    assert group("compaction-2", 1) != group("compaction-2", 2)


def test_run_grouped_keeps_a_group_in_order_and_results_in_item_order() -> None:
    seen: list[int] = []
    items = list(range(8))

    def work(item: int) -> tuple[int, str]:
        seen.append(item)
        return item * 10, "built"

    done = run_grouped(items, group_of=lambda i: str(i % 3), work=work, describe=str, jobs=3)
    assert done == [(i * 10, "built") for i in items]
    for group in range(3):
        members = [i for i in seen if i % 3 == group]
        assert members == sorted(members)


def test_a_default_real_run_overlaps_checkpoints_within_the_slots(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer(latency_ms=400)
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", judge="none", probe_limit=1)
        result = rig.run(jobs=None, traces=f"{TRACE},fernway-office-move")
        assert app.peak_in_flight >= 2  # checkpoints ran side by side
        assert app.peak_in_flight <= 4  # --concurrency: four calls per model
        made = app.count()
        again = rig.run(jobs=None, traces=None)  # the other two traces; the rest reused
        assert app.count() > made
        calls = app.count()
        rig.run(jobs=None, traces=None)
        assert app.count() == calls  # a finished plan calls nothing
    assert result.jobs == real_jobs(4, 1, memory=available_memory(), cpus=os.cpu_count())
    assert len(result.records) == 6 and result.built == 6  # 2 traces x 3 arms
    assert len(again.records) == 12 and again.built == 6
    assert all(p.status == "valid" for r in again.records for p in r.probes)


def test_concurrency_bounds_the_calls_in_flight(tmp_path: Path, clean_checkout: Path) -> None:
    app = WireServer(latency_ms=150)
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", judge="none", probe_limit=1)
        result = rig.run(jobs=4, concurrency=1, traces=None)
    assert result.jobs == 4  # four checkpoints at a time, one slot
    assert app.peak_in_flight == 1
    assert len(result.records) == 12


def test_a_stop_rule_stops_a_parallel_run_and_it_resumes(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer(faults=Faults(auth_fail_from=3), latency_ms=100)
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-responses", arms="native", judge="none")
        with pytest.raises(RunIncomplete) as caught:
            rig.run(jobs=None, traces=None)  # four traces, two live turns each
        refused = app.count()
        # admission stopped: at most the calls already in flight when it fired follow
        assert 3 <= refused < 3 + 4
        app.faults = Faults()
        resumed = rig.run(jobs=None, traces=None)
    assert caught.value.code == "run_stopped"
    assert "provider_auth_failed" in caught.value.message
    assert len(resumed.records) == 4
    assert all(p.status == "valid" for r in resumed.records for p in r.probes)
