"""An outside agent's units on a Dask cluster (`continuity.runner.agent_cluster`): a
real ``LocalCluster`` of worker processes running the toy agent (CAP/0, its own
processes, its sandbox), offline and against a real reader on the loopback wire
server, over a shared store; checked against the local build byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.agents.identity import identity
from continuity.agents.manifest import load_manifest
from continuity.errors import ContinuityError
from continuity.plan.from_request import plan_from_request
from continuity.plan.request import PlanRequest
from continuity.runner.agent_cluster import AgentTask, run_agent_group
from continuity.runner.agent_units import AgentUnitPlan
from continuity.runner.cluster import Cluster
from continuity.servers.wire import WireServer, serve_in_thread
from continuity.store import Store, collect_shared_garbage, open_backend
from continuity.traces.suites import build_suite
from rules.units import _units
from tests.agents.test_real import TRACE, _rig
from tests.agents.test_real import _run as _run_real
from tests.harness.test_replay import trace_named

pytest.importorskip("distributed")

AGENT = {"agent": "examples/agents/toy/v1.toml", "suite": "smoke", "probe_limit": 1,
         "arms": "native,continuity-store"}  # fmt: skip


def _agent_units(out: Path, **options: Any) -> tuple[str, dict[str, str]]:
    line = _units(**AGENT, out=str(out), store=str(out / "store"), **options)
    folder = out / "runs" / "agent-toy-v1"
    units = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
             for p in (folder / "units").glob("*.json")}  # fmt: skip
    return line, units


def test_an_agents_units_on_a_cluster_are_the_local_ones(tmp_path: Path) -> None:
    """Two workers over a shared store build the toy's units (the store arm's retained
    evidence too) byte for byte as locally; the adapters' logs come back; a client with
    an empty store of its own reuses every unit; the run's plan roots all of it."""
    _, local = _agent_units(tmp_path / "local")
    shared = str(tmp_path / "shared")
    line, built = _agent_units(tmp_path / "dask", executor="dask", workers=2, shared_store=shared)
    assert "2 units (2 run, 0 from the store)" in line and built == local and len(built) == 2
    logs = tmp_path / "dask" / "runs" / "agent-toy-v1" / "agent-logs"
    assert sorted(p.name for p in logs.glob("*.log")) == sorted(
        p.name for p in (tmp_path / "local" / "runs" / "agent-toy-v1" / "agent-logs").glob("*.log")
    )
    again, reused = _agent_units(
        tmp_path / "fresh", executor="dask", workers=1, shared_store=shared
    )
    assert "2 units (0 run, 2 from the store)" in again and reused == local
    collected = collect_shared_garbage(open_backend(shared), grace_seconds=0)
    assert (collected.removed_objects, collected.removed_actions) == (0, 0)


def test_a_worker_with_another_agent_is_refused(tmp_path: Path) -> None:
    """The worker works out the agent's identity itself: a task planned for other files
    (another fingerprint) is cluster_code_mismatch before any sample runs."""
    manifest = load_manifest(Path(str(AGENT["agent"])))
    plan = plan_from_request(PlanRequest.of({**AGENT, "suite": "original"}))
    planned = msgspec.structs.replace(identity(manifest), sources="0" * 64)
    unit_plan = msgspec.structs.replace(AgentUnitPlan.of(plan, manifest), agent=planned)
    store = Store(tmp_path / "store")
    item = next(i for i in build_suite(store, "original", out_dir=tmp_path).items
                if i.trace_id == TRACE)  # fmt: skip
    task = AgentTask(store_root=str(store.root), shared="", plan=unit_plan, trace_key=item.key,
                     trace=trace_named(TRACE), protected=[])  # fmt: skip
    with pytest.raises(ContinuityError) as caught:
        run_agent_group(task)
    assert caught.value.code == "cluster_code_mismatch" and "files" in caught.value.message
    assert not list(tmp_path.glob("agent-run-*"))  # refused before its folder was made


def test_a_real_agent_run_on_a_cluster_holds_in_the_shared_account(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """The toy's probes go to a real reader from two workers: the units' keys and
    answers are the local run's, and the run's cost-cap account is the shared store's."""
    app = WireServer(model="served-model-7")
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path / "local", url)
        local, _ = _run_real(rig, tmp_path / "local", clean_checkout, cost_cap="1.00")
        made = app.count()
        rig = _rig(tmp_path / "dask", url)
        cluster = Cluster(workers=2, shared=str(tmp_path / "shared"))
        there, spend = _run_real(rig, tmp_path / "dask", clean_checkout, cost_cap="1.00",
                                 cluster=cluster)  # fmt: skip
        assert app.count() == 2 * made == 4
    assert [(r.key, r.probes[0].answer) for r in there.records] == [
        (r.key, r.probes[0].answer) for r in local.records
    ]
    assert spend is not None and spend.settled_calls == 2
    assert any(
        n.endswith("cost-cap.json")
        for n in open_backend(str(tmp_path / "shared")).names("accounts/")
    )
    assert not (tmp_path / "dask" / "run" / ".spend" / "cost-cap.sqlite3").exists()
