"""Benchmark for issue 5: a full aggregate against re-aggregating after one unit changed.

Run from the checkout root:  python benchmarks/bench_aggregate.py [--runs N] [--repeats N]

It runs real units for one original trace on every arm (the scripted offline reader),
then, to reach a realistic run size cheaply, relabels copies of them as further repeats
(each copy re-keyed and re-sealed, so it passes the aggregator's verification like any
unit). The named baseline is the full aggregate with an empty summary cache; the
measured case changes one unit's answers and aggregates again with the cache warm.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import msgspec

from continuity.arms import ARMS
from continuity.report.aggregate import aggregate_run
from continuity.runner.units.build import UnitRecord, build_units, seal, unit_filename, unit_key
from continuity.store import Store
from continuity.traces.suites import build_suite


def _relabel(record: UnitRecord, repeat: int, flip: int) -> UnitRecord:
    probes = [
        msgspec.structs.replace(p, correct=True, outcome="correct")
        if p.status == "valid" and (i + repeat + flip) % 4 == 0
        else p
        for i, p in enumerate(record.probes)
    ]
    key = unit_key(
        repeat,
        record.trace_key,
        ARMS[record.arm],
        record.checkpoint,
        record.probe_ids,
        record.binding,
        record.probe_protocol,
    )
    return seal(msgspec.structs.replace(record, repeat=repeat, key=key, probes=probes))


def main(runs: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = Store(root / "store")
        records, _, _ = build_units(
            store,
            "original",
            arms="all",
            traces="harbor-market-stall",
            run_dir=root / "runs" / "seed",
        )
        # A store holding only the suite's traces: each attempt's summary cache starts
        # from a copy of it (no units, no summaries).
        build_suite(Store(root / "traces"), "original", out_dir=root / "out")
        run = root / "runs" / "bench"
        units = run / "units"
        units.mkdir(parents=True)
        for record in records:
            for repeat in range(1, repeats + 1):
                copy = _relabel(record, repeat, 0)
                (units / unit_filename(copy)).write_bytes(msgspec.json.encode(copy))
        count = len(list(units.glob("*.json")))
        full, incremental = [], []
        for attempt in range(runs):
            # An empty summary cache over a store that holds the run's traces (the
            # current scorer grades recorded answers against them).
            shutil.copytree(root / "traces", root / f"cache-{attempt}")
            fresh = Store(root / f"cache-{attempt}")
            started = time.perf_counter()
            aggregate_run(fresh, run)
            full.append(time.perf_counter() - started)
            target = sorted(units.glob("*.json"))[attempt % count]
            record = msgspec.json.decode(target.read_bytes(), type=UnitRecord)
            first = msgspec.structs.replace(
                record.probes[0], answer=f"changed {attempt}", correct=not record.probes[0].correct
            )
            changed = seal(msgspec.structs.replace(record, probes=[first, *record.probes[1:]]))
            target.write_bytes(msgspec.json.encode(changed))
            started = time.perf_counter()
            _, _, read = aggregate_run(fresh, run)
            incremental.append(time.perf_counter() - started)
            assert read == 1
            shutil.rmtree(root / f"cache-{attempt}")
        full_s, inc_s = statistics.median(full), statistics.median(incremental)
    print(
        f"## Aggregate ({runs} runs, medians; {count} units of {len(records[0].probes)} probes)\n"
    )
    print("| measurement | median | baseline (same run) | ratio | goal |")
    print("|---|---:|---:|---:|---|")
    print(
        f"| re-aggregate after one unit changed | {inc_s * 1000:.0f} ms | full aggregate, "
        f"empty cache: {full_s * 1000:.0f} ms | {inc_s / full_s:.3f}x | <= 0.1x |"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    main(args.runs, args.repeats)
