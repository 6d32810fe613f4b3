"""Concurrent and killed unit runs: units are deterministic bytes, and a killed run leaves
no evaluator-only value (a probe's expected `needles`) anywhere outside the store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from continuity.probes.availability import needles_for
from continuity.report.aggregate import aggregate_run
from continuity.runner.units.build import UnitRecord
from continuity.sampling.receipts import ProcessReceipt
from continuity.store import Store
from continuity.traces.schema import decode_trace
from continuity.traces.suites import build_suite

ROOT = Path(__file__).resolve().parents[2]
TRACE = "harbor-market-stall"
RESTART = "restart-switch-compact"
# One invocation of `build_units`, in a process of its own; it starts when `go` exists,
# so two of them start their units together.
SCRIPT = """
import json, sys, time
from pathlib import Path
from continuity.runner.units.build import build_units
from continuity.runner.units.execution import Execution
from continuity.store import Store

args = json.loads(sys.argv[1])
lookup = None
if args["lookup"]:
    from tests.lookup.test_lookup_run import frozen_run

    lookup = frozen_run()
go = Path(args["go"])
while not go.exists():
    time.sleep(0.01)
records, folder, built = build_units(
    Store(args["store"]),
    "original",
    arms=args["arms"],
    traces=args["traces"],
    probe_limit=args["probe_limit"],
    run_dir=Path(args["run"]),
    jobs=1,
    execution=Execution(lookup=lookup),
)
print(json.dumps({"built": built, "units": len(records)}))
"""


def _invocation(
    store: Path,
    run: Path,
    arms: str,
    go: Path,
    *,
    probe_limit: int = 2,
    start_new_session: bool = False,
    env: dict[str, str] | None = None,
    traces: str = TRACE,
    lookup: bool = False,
) -> subprocess.Popen[str]:
    args = {
        "store": str(store),
        "run": str(run),
        "arms": arms,
        "traces": traces,
        "probe_limit": probe_limit,
        "go": str(go),
        "lookup": lookup,
    }
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, json.dumps(args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=start_new_session,
        env=env,
    )


def _finish(process: subprocess.Popen[str]) -> dict[str, int]:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-2000:]
    result: dict[str, int] = json.loads(out.strip().splitlines()[-1])
    return result


def test_two_builds_of_one_unit_are_the_same_bytes(tmp_path: Path) -> None:
    go = tmp_path / "go"
    go.touch()
    first = _invocation(
        tmp_path / "a" / "store", tmp_path / "a" / "run", "restart-switch-compact", go
    )
    second = _invocation(
        tmp_path / "b" / "store", tmp_path / "b" / "run", "restart-switch-compact", go
    )
    assert _finish(first)["built"] == _finish(second)["built"] == 1
    (name,) = [p.name for p in (tmp_path / "a" / "run" / "units").glob("*.json")]
    files = [(tmp_path / side / "run" / "units" / name).read_bytes() for side in "ab"]
    assert files[0] == files[1]  # no pid, no time: the sealed unit is deterministic
    record = msgspec.json.decode(files[0], type=UnitRecord)
    assert all(p.evidence is not None and p.evidence.fresh_process for p in record.probes)
    # The restart arm's process evidence is kept beside the unit, and differs per build.
    receipts = []
    for side in "ab":
        entry = Store(tmp_path / side / "store").get_action(record.key)
        assert entry is not None
        receipts.append(msgspec.convert(entry.meta["processes"], list[ProcessReceipt]))
    assert [len(r) for r in receipts] == [2, 2]
    assert all(r.child_pid != r.parent_pid for side in receipts for r in side)
    assert {r.child_pid for r in receipts[0]} != {r.child_pid for r in receipts[1]}


def test_overlapping_concurrent_invocations_aggregate_like_one_clean_run(tmp_path: Path) -> None:
    store, run = tmp_path / "shared" / "store", tmp_path / "shared" / "runs" / "t"
    clean_store, clean_run = tmp_path / "clean" / "store", tmp_path / "clean" / "runs" / "t"
    go = tmp_path / "go"
    both = [
        _invocation(store, run, "native,cold-rebuild,continuity-store", go),
        _invocation(store, run, "cold-rebuild,continuity-store,restart-switch-compact", go),
    ]
    # The clean single run, on a store of its own, at the same time (the same code).
    alone = _invocation(
        clean_store, clean_run, "native,cold-rebuild,continuity-store,restart-switch-compact", go
    )
    go.touch()
    built = [_finish(p) for p in both]
    assert [b["units"] for b in built] == [3, 3]
    assert _finish(alone) == {"built": 4, "units": 4}
    _, paths, _ = aggregate_run(Store(store), run)  # no unit_tampered
    _, clean_paths, _ = aggregate_run(Store(clean_store), clean_run)
    assert sorted(p.name for p in (run / "units").iterdir()) == sorted(
        p.name for p in (clean_run / "units").iterdir()
    )
    for unit in (run / "units").iterdir():
        assert unit.read_bytes() == (clean_run / "units" / unit.name).read_bytes()
    assert paths["results"].read_bytes() == clean_paths["results"].read_bytes()


def test_overlapping_concurrent_lookup_invocations_aggregate_like_one_clean_run(
    tmp_path: Path,
) -> None:
    """Lookup mode: two invocations sharing a trace (both arms) fill one run at once. Every
    unit file is the clean run's bytes, the planned slots are the union of both
    selections, and the aggregate (latencies aside: they are wall times) is the clean
    run's."""
    store, run = tmp_path / "shared" / "store", tmp_path / "shared" / "runs" / "t"
    clean_store, clean_run = tmp_path / "clean" / "store", tmp_path / "clean" / "runs" / "t"
    go = tmp_path / "go"
    arms = "native-lookup,continuity-pack-cold"
    both = [
        _invocation(store, run, arms, go, probe_limit=1, traces=traces, lookup=True)
        for traces in (
            "brightline-return,harbor-market-stall",
            "harbor-market-stall,orchard-hall-booking",
        )
    ]
    alone = _invocation(
        clean_store,
        clean_run,
        arms,
        go,
        probe_limit=1,
        traces="brightline-return,harbor-market-stall,orchard-hall-booking",
        lookup=True,
    )
    go.touch()
    assert [_finish(p)["units"] for p in both] == [4, 4]
    assert _finish(alone) == {"built": 6, "units": 6}
    results, _, _ = aggregate_run(Store(store), run)  # no unit_tampered, no duplicate
    clean, _, _ = aggregate_run(Store(clean_store), clean_run)
    names = sorted(p.name for p in (clean_run / "units").iterdir())
    assert sorted(p.name for p in (run / "units").iterdir()) == names
    for name in names:
        assert (run / "units" / name).read_bytes() == (clean_run / "units" / name).read_bytes()
    slots = [json.loads((r / "lookup-slots.json").read_bytes())["slots"] for r in (run, clean_run)]
    assert sorted(slots[0], key=repr) == sorted(slots[1], key=repr)  # no planned slot lost
    for arm, cell in results.lookup.items():
        # Latency comes from each build's ProcessReceipts (kept beside the units).
        other = clean.lookup[arm]
        assert (cell.mean_latency_s or 0) > 0 and (other.mean_latency_s or 0) > 0
        assert msgspec.structs.replace(cell, mean_latency_s=None) == msgspec.structs.replace(
            other, mean_latency_s=None
        )
        assert cell.duplicate == 0
        assert cell.latency_unknown == 0 and cell.missing == 0


def _needles(store: Store, out: Path) -> list[str]:
    items = build_suite(store, "original", out_dir=out).items
    item = next(i for i in items if i.trace_id == TRACE)
    trace = decode_trace(store.get_blob(item.digest))
    values = []
    for probe in trace.probes:
        needles = needles_for(probe.expectation, trace)
        values.extend(needles.fact + needles.superseded)
    return sorted({v for v in values if len(v) >= 4})


def _group(pgid: int) -> Iterator[tuple[int, bytes]]:
    """The processes of process group `pgid`, with their command lines."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[2]) == pgid:
            yield int(entry.name), cmdline


def _holding(folder: Path, markers: list[bytes], since: float) -> list[Path]:
    """Files below `folder` changed since `since` that hold any of `markers`."""
    found = []
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = Path(dirpath) / name
            if _holding_file(path, markers, since):
                found.append(path)
    return found


def test_a_killed_unit_run_leaves_no_expected_value_outside_the_store(tmp_path: Path) -> None:
    started = time.time() - 1
    store = tmp_path / "store"
    needles = _needles(Store(store), tmp_path / "out")
    assert needles
    markers = [n.encode() for n in needles] + [b'"needles"']
    system_tmp = tmp_path / "system-tmp"  # the run's TMPDIR: where tempfile would write
    system_tmp.mkdir()
    go = tmp_path / "go"
    go.touch()
    run = _invocation(
        store,
        tmp_path / "out" / "runs" / "t",
        "native,continuity-store",
        go,
        probe_limit=14,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(system_tmp)},
    )
    try:
        deadline = time.monotonic() + 300
        while not any(b"continuity.sampling.worker" in c for _, c in _group(run.pid)):
            assert run.poll() is None, run.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the unit worker never started"
            time.sleep(0.02)
        time.sleep(0.3)  # mid-unit: its probe children are running
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.communicate()
    assert run.returncode == -signal.SIGKILL
    assert _holding(system_tmp, markers, started) == []
    # Nothing else was written where this test owns the files. The killed processes'
    # temp directory (`tempfile.gettempdir()` in each of them) is `system_tmp`, scanned
    # above; the shared /tmp is not scanned: other processes on the machine write there.
    assert {p.name for p in tmp_path.iterdir()} <= {"store", "out", "system-tmp", "go"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_process_whose_parent_died_first_kills_itself(tmp_path: Path) -> None:
    """The race `die_with_parent` closes: its parent is gone before the request (here,
    a pid that is not its parent), so it kills itself as the kernel would have."""
    script = "import sys; from continuity.parent_death import die_with_parent; "
    script += "print(die_with_parent(int(sys.argv[1])), flush=True)"
    gone = subprocess.run(
        [sys.executable, "-c", script, "1"], cwd=ROOT, capture_output=True, text=True
    )
    assert gone.returncode == -signal.SIGKILL and gone.stdout == ""
    kept = subprocess.run(
        [sys.executable, "-c", script, str(os.getpid())], cwd=ROOT, capture_output=True, text=True
    )
    assert kept.returncode == 0 and kept.stdout.strip() == str(sys.platform.startswith("linux"))


def _holding_file(path: Path, markers: list[bytes], since: float) -> bool:
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_mtime < since:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    return any(m in data for m in markers)
