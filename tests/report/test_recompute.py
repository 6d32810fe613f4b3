"""Every number in summary.md, recomputed from the unit files alone.

This test reads the unit JSON with the standard library and does its own arithmetic; it
shares no code with the aggregator. The run is real; some answers are then changed (and
the units re-sealed) so that accuracies, deltas, flips and discordant pairs are not all
zero.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import msgspec

from continuity.report.aggregate import aggregate_run
from continuity.runner.units import UnitRecord, seal
from continuity.store import Store


def _vary(folder: Path, store: Store) -> None:
    """Mark some valid answers correct, differently per arm and repeat (in the unit files
    and the store's copies, as a re-score would; the aggregate refuses a unit whose file
    and stored copy disagree)."""
    for index, path in enumerate(sorted((folder / "units").glob("*.json"))):
        record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
        probes = []
        for n, probe in enumerate(record.probes):
            if probe.status == "valid" and (n + index + record.repeat) % 3 == 0:
                probe = msgspec.structs.replace(probe, correct=True, outcome="correct")
            probes.append(probe)
        data = msgspec.json.encode(seal(msgspec.structs.replace(record, probes=probes)))
        store.record_action(record.key, kind="unit", output=store.put_blob(data))
        path.write_bytes(data)


def _tables(markdown: str) -> dict[str, list[dict[str, str]]]:
    tables: dict[str, list[dict[str, str]]] = {}
    title = ""
    header: list[str] = []
    for line in markdown.splitlines():
        if line.startswith("## "):
            title, header = line[3:], []
        elif line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not header:
                header = cells
                tables[title] = []
            else:
                tables[title].append(dict(zip(header, cells, strict=True)))
    return tables


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def test_summary_numbers_recompute_from_units(run: tuple[Store, Path], tmp_path: Path) -> None:
    shared, folder = run
    store = Store(shutil.copytree(shared.root, tmp_path / "store"))  # this test writes to it
    _vary(folder, store)
    _, paths, _ = aggregate_run(store, folder)
    tables = _tables(paths["summary"].read_text())
    units = [json.loads(p.read_text()) for p in sorted((folder / "units").glob("*.json"))]
    arms = [row["arm"] for row in tables["Accuracy per arm"]]
    repeats = sorted({u["repeat"] for u in units})

    def probes(arm: str, valid: bool = True) -> list[tuple[int, str, dict[str, Any]]]:
        return [
            (u["repeat"], u["trace_id"], p)
            for u in units
            if u["arm"] == arm
            for p in u["probes"]
            if (p["status"] == "valid") == valid
        ]

    def accuracy(rows: list[tuple[int, str, dict[str, Any]]]) -> tuple[float | None, list[Any]]:
        per = []
        for repeat in repeats:
            scored = [p for r, _, p in rows if r == repeat]
            per.append((repeat, sum(bool(p["correct"]) for p in scored), len(scored)))
        values = [c / n for _, c, n in per if n]
        return (sum(values) / len(values) if values else None), per

    native_mean, _ = accuracy(probes("native"))
    for row in tables["Accuracy per arm"]:
        mean_value, per = accuracy(probes(row["arm"]))
        values = [c / n for _, c, n in per if n]
        assert row["n"] == str(sum(n for _, _, n in per))
        assert row["accuracy"] == _pct(mean_value)
        assert row["SD (pp)"] == (
            f"{100 * statistics.stdev(values):.1f}" if len(values) > 1 else "-"
        )
        assert row["per repeat"] == " ".join(
            f"r{r} {_pct(c / n if n else None)} ({n})" for r, c, n in per
        )
        assert row["delta vs native (pp)"] == f"{100 * (mean_value - native_mean):.1f}"  # type: ignore[operator]

    for row in tables["Accuracy per arm and category"]:
        for category, cell in row.items():
            if category == "arm":
                continue
            rows = [x for x in probes(row["arm"]) if x[2]["category"] == category]
            assert cell == f"{_pct(accuracy(rows)[0])} ({len(rows)})"

    native_by_category = {
        c: accuracy([x for x in probes("native") if x[2]["category"] == c])[0]
        for c in {p["category"] for _, _, p in probes("native")}
    }
    for row in tables["Accuracy per arm and category, in full"]:
        rows = [x for x in probes(row["arm"]) if x[2]["category"] == row["category"]]
        mean_value, per = accuracy(rows)
        values = [c / n for _, c, n in per if n]
        assert row["n"] == str(len(rows))
        assert row["accuracy"] == _pct(mean_value)
        assert row["SD (pp)"] == (
            f"{100 * statistics.stdev(values):.1f}" if len(values) > 1 else "-"
        )
        assert row["per repeat"] == " ".join(
            f"r{r} {_pct(c / n if n else None)} ({n})" for r, c, n in per
        )
        base = native_by_category.get(row["category"])
        assert row["delta vs native (pp)"] == (
            "-" if mean_value is None or base is None else f"{100 * (mean_value - base):.1f}"
        )

    for row in tables["Outcomes"]:
        counts = Counter(p["outcome"] for _, _, p in probes(row["arm"]))
        assert {k: int(v) for k, v in row.items() if k != "arm"} == {
            k: counts.get(k, 0) for k in row if k != "arm"
        }

    for row in tables["Excluded samples"]:
        counts = Counter(p["status"] for _, _, p in probes(row["arm"], valid=False))
        assert {k: int(v) for k, v in row.items() if k != "arm"} == {
            k: counts.get(k, 0) for k in row if k != "arm"
        }

    for row in tables["Availability and loss attribution"]:
        valid = [p for _, _, p in probes(row["arm"])]
        expected = Counter(p["availability"]["fact"] for p in valid)
        expected["superseded_present"] = sum(p["availability"]["superseded_present"] for p in valid)
        expected.update(p["loss"] for p in valid if p["loss"])
        assert {k: int(v) for k, v in row.items() if k != "arm"} == {
            k: expected.get(k, 0) for k in row if k != "arm"
        }

    for row in tables["Flip rate"]:
        seen: dict[tuple[str, str], list[bool]] = defaultdict(list)
        for _, trace, p in probes(row["arm"]):
            seen[(trace, p["probe_id"])].append(bool(p["correct"]))
        repeated = [v for v in seen.values() if len(v) > 1]
        flips = sum(1 for v in repeated if len(set(v)) > 1)
        assert (row["probes in 2+ repeats"], row["flips"]) == (str(len(repeated)), str(flips))
        assert row["rate"] == _pct(flips / len(repeated) if repeated else None)

    for row in tables["Tool use"]:
        valid = [p for _, _, p in probes(row["arm"])]
        called = [p for p in valid if p["history_calls"] > 0]
        uncalled = [p for p in valid if p["history_calls"] == 0]
        assert (row["samples"], row["with a call"]) == (str(len(valid)), str(len(called)))
        assert row["call rate"] == _pct(len(called) / len(valid) if valid else None)
        assert row["accuracy with call"] == _pct(
            sum(bool(p["correct"]) for p in called) / len(called) if called else None
        )
        assert row["accuracy without call"] == _pct(
            sum(bool(p["correct"]) for p in uncalled) / len(uncalled) if uncalled else None
        )

    for row in tables["Tool use by category"]:
        valid = [p for _, _, p in probes(row["arm"]) if p["category"] == row["category"]]
        called = [p for p in valid if p["history_calls"] > 0]
        uncalled = [p for p in valid if p["history_calls"] == 0]
        assert row["samples"] == str(len(valid))
        assert row["call rate"] == _pct(len(called) / len(valid) if valid else None)
        assert row["accuracy with call"] == _pct(
            sum(bool(p["correct"]) for p in called) / len(called) if called else None
        )
        assert row["accuracy without call"] == _pct(
            sum(bool(p["correct"]) for p in uncalled) / len(uncalled) if uncalled else None
        )

    native = {(r, t, p["probe_id"]): bool(p["correct"]) for r, t, p in probes("native")}
    for row in tables["Paired comparison with native"]:
        pairs = [
            (bool(p["correct"]), native[(r, t, p["probe_id"])])
            for r, t, p in probes(row["arm"])
            if (r, t, p["probe_id"]) in native
        ]
        b = sum(1 for a, n in pairs if a and not n)
        c = sum(1 for a, n in pairs if n and not a)
        k = min(b, c)
        p_value = (
            1.0
            if b + c == 0
            else min(1.0, 2 * sum(math.comb(b + c, i) for i in range(k + 1)) / 2 ** (b + c))
        )
        assert (row["pairs"], row["arm only"], row["native only"]) == (
            str(len(pairs)),
            str(b),
            str(c),
        )
        assert row["both correct"] == str(sum(1 for a, n in pairs if a and n))
        assert row["both wrong"] == str(sum(1 for a, n in pairs if not a and not n))
        assert row["McNemar p"] == f"{p_value:.4f}"
        assert row["delta (pp)"] == f"{100 * (b - c) / len(pairs):.1f}"

    fields = {
        "input": "input",
        "cache_read": "cache_read",
        "cache_write": "cache_write",
        "output": "output",
    }
    for row in tables["Spend (tokens)"]:
        if row["arm"] not in arms:
            continue
        every = [p for _, _, p in probes(row["arm"])] + [
            p for _, _, p in probes(row["arm"], valid=False)
        ]
        for column, field in fields.items():
            # Totals include the compaction requests; compaction_* is the "of which".
            assert row[column] == str(
                sum(p["usage"][field] + p["compaction_usage"][field] for p in every)
            )
            assert row[f"compaction_{column}"] == str(
                sum(p["compaction_usage"][field] for p in every)
            )
        # Offline: every probe sample is a live turn, and nothing is billed.
        assert row["live turns"] == str(len(every))
        assert row["list price (USD)"] == "-"
    header = paths["summary"].read_text().split("\n## ", 1)[0]
    assert f"{len(units)} units; arms: {', '.join(arms)};" in header


def test_judge_agreement_recomputes_from_units(run: tuple[Store, Path]) -> None:
    store, folder = run
    _, paths, _ = aggregate_run(store, folder)
    row = _tables(paths["summary"].read_text())["Judge agreement"][0]
    pairs = []
    for path in sorted((folder / "units").glob("*.json")):
        unit = json.loads(path.read_text())
        proxy = {
            p["probe_id"]: bool(p["correct"]) for p in unit["probes"] if p["status"] == "valid"
        }
        pairs += [
            (v["passed"], proxy[v["probe_id"]]) for v in unit["judge"] if v["probe_id"] in proxy
        ]
    agree = sum(1 for j, p in pairs if j == p)
    assert (row["pairs"], row["agree"]) == (str(len(pairs)), str(agree))
    assert row["judge pass"] == str(sum(1 for j, _ in pairs if j))
    assert row["proxy pass"] == str(sum(1 for _, p in pairs if p))
    assert pairs, "the next-action probes were judged"
