"""A real run's units on a Dask cluster (`continuity.runner.cluster`), against the
loopback wire server: a real ``LocalCluster`` of worker processes over a shared store,
where the run's cost-cap account and invocation ledger live, so every worker holds its
requests there before it sends them."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import RealModeError, RunIncomplete
from continuity.runner.cluster import Cluster
from continuity.runner.cost_account import POINTER
from continuity.runner.units.record import UnitRecord
from continuity.servers.wire import WireServer, serve_in_thread
from continuity.store import open_backend
from tests.runner.test_real import Rig
from tests.runner.test_real_cost_cap import spend, within_cap

pytest.importorskip("distributed")

ARMS = {"arms": "native,compaction-1", "judge": "none"}


def _units(folder: Path) -> dict[str, Any]:
    """Each unit's key and each probe's status, answer and outcome (its token counts
    are the server's: the wire server's prompt cache reads the prefix shared with
    whichever request came just before, and a unit's probes run side by side)."""
    units = {}
    for path in sorted(folder.glob("*.json")):
        record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
        units[path.name] = (record.key, [(p.status, p.answer, p.outcome) for p in record.probes])
    return units


def test_a_capped_real_run_on_a_cluster_holds_in_the_shared_account(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """The same plan run locally and on a LocalCluster over a shared store: the same
    units (keys, answers, outcomes), the same calls settled, and the run's account and
    ledger in the shared store only."""
    shared = str(tmp_path / "shared")
    app = WireServer()
    runs = []
    with serve_in_thread(app) as url:
        for name, cluster in (("local", None), ("cluster", Cluster(workers=2, shared=shared))):
            rig = Rig(tmp_path / name, clean_checkout, url, "openai-chat", **ARMS)
            runs.append((rig, rig.run(cost_cap="1.00", cluster=cluster), app.count()))
    (local, here, made_here), (rig, there, made_there) = runs
    assert made_there == 2 * made_here > 0  # a store of its own: every call made again
    assert _units(rig.output / "units") == _units(local.output / "units")
    assert there.spend is not None and here.spend is not None
    within_cap(there.spend)
    assert (there.spend.settled_calls, there.spend.retained_calls) == (here.spend.settled_calls, 0)
    names = open_backend(shared).names("accounts/")
    assert [n.rsplit("/", 1)[1] for n in names if n.endswith("cost-cap.json")] == ["cost-cap.json"]
    assert any("/ledger-" in n for n in names)
    assert not (rig.output / ".spend" / "cost-cap.sqlite3").exists()  # the shared store's
    pointer = (rig.output / ".spend" / POINTER).read_text().strip()
    assert pointer.startswith("shared:") and pointer.endswith("/cost-cap.json")
    assert not list((rig.output / ".ledger").glob("*"))


def test_a_run_keeps_its_account_whatever_its_executor(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """A run capped on a cluster resumes locally against the same shared account (its
    pointer in --out), never a fresh one; a run whose account is the local file is
    refused a shared store (cost_cap_account_local), before any call."""
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path / "a", clean_checkout, url, "openai-chat", **ARMS)
        cluster = Cluster(workers=1, shared=str(tmp_path / "shared"))
        first = rig.run(cost_cap="1.00", cluster=cluster)
        assert first.spend is not None
        again = rig.run()  # locally, no --cost-cap: the run's cap, in the shared account
        assert again.spend is not None and Decimal(again.spend.cap or 0) == Decimal(1)
        assert again.spend.settled_calls == first.spend.settled_calls > 0  # all reused
        local = Rig(tmp_path / "b", clean_checkout, url, "openai-chat", **ARMS)
        local.run(cost_cap="1.00")
        made = app.count()
        with pytest.raises(RealModeError) as caught:
            local.run(cluster=Cluster(workers=1, shared=str(tmp_path / "shared")))
        assert app.count() == made
    assert caught.value.code == "cost_cap_account_local"
    assert caught.value.location == "--shared-store"


def test_workers_holding_in_one_shared_account_stop_together_at_the_cap(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """Two workers, each group's calls held in the run's shared account before they are
    sent: the run stops with cost_cap_reached, committed spend within the cap, and the
    account (read by the client) counts every request the server saw."""
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-responses", arms="native", judge="none")
        with pytest.raises(RunIncomplete) as caught:
            # four traces (four groups), two live turns each; a hold is about $0.033 and
            # a settled call at most $0.004, so a few calls fit and the rest never start
            rig.run(
                cost_cap="0.04", traces=None, cluster=Cluster(workers=2, shared=str(tmp_path / "s"))
            )
        made = app.count()
    assert 1 <= made < 8
    assert caught.value.code == "run_stopped" and "cost_cap_reached" in caught.value.message
    totals = spend(rig)
    within_cap(totals)
    assert totals.settled_calls == made
