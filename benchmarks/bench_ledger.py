"""Benchmark for issue 16: what the ledger arm's preparation costs offline, against the
replay it prepares.

Run from the checkout root:

    python benchmarks/bench_ledger.py [--runs N]

For one original trace and hard seed 101, in fresh stores, each timed run measures:

1. the **replay**: `build_checkpoint` of the ledger arm's base checkpoint (the same
   replay as `continuity-store-compaction`: retained records on);
2. the **preparation**: `prepare_checkpoint` over it, three stages in three fresh child
   processes (A -> R -> A) with the scripted extractor, journal snapshots and integrity
   checks after every stage, and the prepared tree stored;
3. a **unit** of the ledger arm on the prepared checkpoint (every probe in a fresh
   process), against a unit of `continuity-pack-cold` on its own checkpoint, replayed
   before the timing starts (the arm the ledger extends).

Figures are medians over the runs; the last lines print the ratios (preparation / replay,
ledger unit / pack unit).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from continuity.arms import ARMS, LEDGER_ARM, replay_config_for  # noqa: E402
from continuity.harness.checkpoints import build_checkpoint  # noqa: E402
from continuity.preparation.prepare import prepare_checkpoint  # noqa: E402
from continuity.runner.ledger_run import ledger_run  # noqa: E402
from continuity.runner.units.build import run_unit  # noqa: E402
from continuity.store import Store  # noqa: E402
from continuity.traces.suites import build_suite  # noqa: E402
from continuity.traces.validate import load_trace  # noqa: E402


def _one(suite: str, seeds: list[int] | None, trace_id: str, work: Path) -> dict[str, float]:
    store = Store(work / "store")
    result = build_suite(store, suite, seeds, out_dir=work / "out")
    item = next(i for i in result.items if i.trace_id == trace_id)
    trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
    started = time.perf_counter()
    base = build_checkpoint(
        store,
        trace,
        trace_key=item.key,
        trace_digest=item.digest,
        config=replay_config_for(ARMS[LEDGER_ARM]),
    )
    replay = time.perf_counter() - started
    started = time.perf_counter()
    prepared = prepare_checkpoint(
        store,
        base,
        arm=LEDGER_ARM,
        binding=ledger_run().binding,
        repeat=1,
        enforcement="scripted_cap",
    )
    preparation = time.perf_counter() - started
    assert prepared.receipt.valid, prepared.receipt.integrity
    timings = {"replay": replay, "preparation": preparation}
    build_checkpoint(  # the pack arm's own replay, built before its unit is timed
        store,
        trace,
        trace_key=item.key,
        trace_digest=item.digest,
        config=replay_config_for(ARMS["continuity-pack-cold"]),
    )
    for arm in (LEDGER_ARM, "continuity-pack-cold"):
        started = time.perf_counter()
        record, status = run_unit(store, trace, item, ARMS[arm])
        timings[arm] = time.perf_counter() - started
        assert status == "built" and all(p.status == "valid" for p in record.probes), arm
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cases = (("original", None, "brightline-return"), ("hard", [101], "gen-grant-101"))
    for suite, seeds, trace_id in cases:
        samples: dict[str, list[float]] = {}
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as folder:
                for name, value in _one(suite, seeds, trace_id, Path(folder)).items():
                    samples.setdefault(name, []).append(value)
        medians = {name: statistics.median(values) for name, values in samples.items()}
        print(
            f"{trace_id}: replay {medians['replay']:.2f} s, preparation "
            f"{medians['preparation']:.2f} s ({medians['preparation'] / medians['replay']:.2f}x "
            f"the replay); ledger unit {medians[LEDGER_ARM]:.2f} s vs pack unit "
            f"{medians['continuity-pack-cold']:.2f} s "
            f"({medians[LEDGER_ARM] / medians['continuity-pack-cold']:.2f}x), "
            f"medians of {args.runs}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
