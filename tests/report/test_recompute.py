"""Every number in summary.md, recomputed from the unit files alone.

This test reads the unit JSON with the standard library and does its own arithmetic; it
shares no code with the aggregator. The run is real and spans two suites (an original
trace and a hard one, where `ceiling` runs); some grades are then changed (and the units
re-sealed) so that accuracies, paired deltas, flips and discordant pairs are not all
zero. The report is read with ``--scorer original``: the unit files' own grades.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import msgspec

from continuity.report.aggregate import aggregate_run
from continuity.runner.units.build import UnitRecord, seal
from continuity.store import Store

Sample = tuple[int, str, dict[str, Any]]  # (repeat, trace id, probe)


def _vary(folder: Path, store: Store) -> None:
    """Mark some valid answers correct, differently per suite, arm and repeat (in the
    unit files and the store's copies, as a re-seal would; the aggregate refuses a unit
    whose file and stored copy disagree)."""
    for index, path in enumerate(sorted((folder / "units").glob("*.json"))):
        record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
        every = 2 if record.family == "hard" else 3
        probes = []
        for n, probe in enumerate(record.probes):
            if probe.status == "valid" and (n + index + record.repeat) % every == 0:
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
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
            if not header:
                header = cells
                tables[title] = []
            else:
                tables[title].append(dict(zip(header, cells, strict=True)))
    return tables


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _sd(values: list[float]) -> str:
    return f"{100 * statistics.stdev(values):.1f}" if len(values) > 1 else "-"


class Units:
    """The unit files, read as plain JSON."""

    def __init__(self, folder: Path) -> None:
        self.units = [json.loads(p.read_text()) for p in sorted((folder / "units").glob("*.json"))]
        self.repeats = sorted({u["repeat"] for u in self.units})

    def probes(self, suite: str, arm: str, valid: bool = True) -> list[Sample]:
        return [
            (u["repeat"], u["trace_id"], p)
            for u in self.units
            if u["family"] == suite and u["arm"] == arm
            for p in u["probes"]
            if (p["status"] == "valid") == valid
        ]

    def accuracy(self, rows: list[Sample]) -> tuple[float | None, list[tuple[int, int, int]]]:
        per = []
        for repeat in self.repeats:
            scored = [p for r, _, p in rows if r == repeat and _resolved(p)]
            per.append((repeat, sum(bool(p["correct"]) for p in scored), len(scored)))
        values = [c / n for _, c, n in per if n]
        return (sum(values) / len(values) if values else None), per

    def pairs(self, suite: str, arm: str, category: str | None = None) -> list[tuple[bool, bool]]:
        native = {
            (r, t, p["probe_id"]): bool(p["correct"])
            for r, t, p in self.probes(suite, "native")
            if _resolved(p)
        }
        return [
            (bool(p["correct"]), native[(r, t, p["probe_id"])])
            for r, t, p in self.probes(suite, arm)
            if (r, t, p["probe_id"]) in native
            and category in (None, p["category"])
            and _resolved(p)
        ]


def _resolved(probe: dict[str, object]) -> bool:
    """A valid sample with a right/wrong call (the scorer's or the judge's)."""
    return probe["outcome"] != "unresolved" and probe["correct"] is not None


def _coverage(rows: list[Sample]) -> tuple[str, str, str]:
    """The coverage cell, the judge's share and the compact cell's coverage part."""
    resolved = [p for _, _, p in rows if _resolved(p)]
    judged = sum(1 for p in resolved if p.get("decided_by") == "judge")
    coverage = _pct(len(resolved) / len(rows) if rows else None)
    share = _pct(judged / len(resolved)) if resolved else "-"
    compact = f"coverage {coverage}" + (f"; judge {share}" if judged else "")
    return f"{coverage} ({len(resolved)}/{len(rows)})", share, compact


def _delta(pairs: list[tuple[bool, bool]]) -> str:
    if not pairs:
        return "-"
    return f"{100 * (sum(a for a, _ in pairs) - sum(n for _, n in pairs)) / len(pairs):.1f}"


def _check_accuracy(tables: dict[str, list[dict[str, str]]], u: Units) -> None:
    for row in tables["Accuracy per arm"]:
        mean_value, per = u.accuracy(u.probes(row["suite"], row["arm"]))
        pairs = u.pairs(row["suite"], row["arm"])
        assert row["n"] == str(sum(n for _, _, n in per))
        coverage, share, _ = _coverage(u.probes(row["suite"], row["arm"]))
        assert (row["coverage"], row["judge"]) == (coverage, share)
        assert row["accuracy"] == _pct(mean_value)
        assert row["SD (pp)"] == _sd([c / n for _, c, n in per if n])
        assert row["per repeat"] == " ".join(
            f"r{r} {_pct(c / n if n else None)} ({n})" for r, c, n in per
        )
        assert (row["delta vs native (pp)"], row["paired n"]) == (_delta(pairs), str(len(pairs)))
    for row in tables["Accuracy per arm and category"]:
        categories = {p["category"] for _, _, p in u.probes(row["suite"], row["arm"], True)} | {
            p["category"] for _, _, p in u.probes(row["suite"], row["arm"], False)
        }
        for category, cell in row.items():
            if category in ("suite", "arm"):
                continue
            rows = [x for x in u.probes(row["suite"], row["arm"]) if x[2]["category"] == category]
            mean_value, per = u.accuracy(rows)
            n = sum(n for _, _, n in per)
            expected = f"{_pct(mean_value)} ({n}; {_coverage(rows)[2]})"
            assert cell == (expected if category in categories else "-")
    for row in tables["Accuracy per arm and category, in full"]:
        rows = [
            x for x in u.probes(row["suite"], row["arm"]) if x[2]["category"] == row["category"]
        ]
        mean_value, per = u.accuracy(rows)
        pairs = u.pairs(row["suite"], row["arm"], row["category"])
        assert row["n"] == str(sum(n for _, _, n in per))
        assert (row["coverage"], row["judge"]) == _coverage(rows)[:2]
        assert row["accuracy"] == _pct(mean_value)
        assert row["SD (pp)"] == _sd([c / n for _, c, n in per if n])
        assert row["per repeat"] == " ".join(
            f"r{r} {_pct(c / n if n else None)} ({n})" for r, c, n in per
        )
        assert (row["delta vs native (pp)"], row["paired n"]) == (_delta(pairs), str(len(pairs)))


def _check_counts(tables: dict[str, list[dict[str, str]]], u: Units) -> None:
    def counts(row: dict[str, str]) -> dict[str, int]:
        return {k: int(v) for k, v in row.items() if k not in ("suite", "arm")}

    for row in tables["Outcomes"]:
        seen = Counter(p["outcome"] for _, _, p in u.probes(row["suite"], row["arm"]))
        assert counts(row) == {k: seen.get(k, 0) for k in counts(row)}
    for row in tables["Excluded samples"]:
        assert "inventory_infeasible" in row
        seen = Counter(p["status"] for _, _, p in u.probes(row["suite"], row["arm"], False))
        assert counts(row) == {k: seen.get(k, 0) for k in counts(row)}
    for row in tables["Availability and loss attribution"]:
        valid = [p for _, _, p in u.probes(row["suite"], row["arm"])]
        expected = Counter(p["availability"]["fact"] for p in valid)
        expected["superseded_present"] = sum(p["availability"]["superseded_present"] for p in valid)
        expected.update(p["loss"] for p in valid if p["loss"])
        assert counts(row) == {k: expected.get(k, 0) for k in counts(row)}
    for row in tables["Flip rate"]:
        seen_by: dict[tuple[str, str], list[bool]] = defaultdict(list)
        for _, trace, p in u.probes(row["suite"], row["arm"]):
            seen_by[(trace, p["probe_id"])].append(bool(p["correct"]))
        repeated = [v for v in seen_by.values() if len(v) > 1]
        flips = sum(1 for v in repeated if len(set(v)) > 1)
        assert (row["probes in 2+ repeats"], row["flips"]) == (str(len(repeated)), str(flips))
        assert row["rate"] == _pct(flips / len(repeated) if repeated else None)


def _check_tool_use(tables: dict[str, list[dict[str, str]]], u: Units) -> None:
    def rates(row: dict[str, str], valid: list[dict[str, Any]]) -> None:
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

    assert tables["Tool use"], "the store arm's tool use is reported"
    for row in tables["Tool use"]:
        valid = [p for _, _, p in u.probes(row["suite"], row["arm"])]
        rates(row, valid)
        assert row["with a call"] == str(sum(1 for p in valid if p["history_calls"] > 0))
    for row in tables["Tool use by category"]:
        rates(
            row,
            [
                p
                for _, _, p in u.probes(row["suite"], row["arm"])
                if p["category"] == row["category"]
            ],
        )


def _check_paired(tables: dict[str, list[dict[str, str]]], u: Units) -> None:
    assert {(r["suite"], r["arm"]) for r in tables["Paired comparison with native"]} == {
        ("original", "cold-rebuild"),
        ("original", "continuity-store"),
        ("hard", "ceiling"),
    }
    for row in tables["Paired comparison with native"]:
        pairs = u.pairs(row["suite"], row["arm"])
        b = sum(1 for a, n in pairs if a and not n)
        c = sum(1 for a, n in pairs if n and not a)
        p_value = (
            1.0
            if b + c == 0
            else min(1.0, 2 * sum(math.comb(b + c, i) for i in range(min(b, c) + 1)) / 2 ** (b + c))
        )
        assert (row["pairs"], row["arm only"], row["native only"]) == (
            str(len(pairs)),
            str(b),
            str(c),
        )
        assert row["both correct"] == str(sum(1 for a, n in pairs if a and n))
        assert row["both wrong"] == str(sum(1 for a, n in pairs if not a and not n))
        assert row["McNemar p"] == f"{p_value:.4f}"
        assert row["delta (pp)"] == _delta(pairs)


PRESSURE = {  # arm -> the evidence figures its rule checks (the seed's threshold table)
    "native": {"probe_input_tokens": lambda e: e["probe_input_tokens"]},
    "cold-rebuild": {
        "replayed_messages": lambda e: e["reseed"] and e["reseed"]["text_messages"],
        "dropped_records": lambda e: e["reseed"] and e["reseed"]["dropped_records"],
    },
    "continuity-store": {
        "replayed_messages": lambda e: e["reseed"] and e["reseed"]["text_messages"],
        "dropped_records": lambda e: e["reseed"] and e["reseed"]["dropped_records"],
    },
    "ceiling": {
        "compaction_tokens_before": lambda e: e["compaction"] and e["compaction"]["tokens_before"]
    },
}


def _check_pressure(tables: dict[str, list[dict[str, str]]], u: Units) -> None:
    rows = {(r["suite"], r["arm"], r["figure"]): r for r in tables["Observed pressure"]}
    expected_keys = {
        (suite, arm, figure)
        for suite, arm in {(x["family"], x["arm"]) for x in u.units}
        for figure in PRESSURE[arm]
    }
    assert set(rows) == expected_keys
    for (suite, arm, figure), row in rows.items():
        values = [
            v
            for _, _, p in u.probes(suite, arm)
            if p["evidence"] is not None
            for v in [PRESSURE[arm][figure](p["evidence"])]
            if v is not None
        ]
        assert row["n"] == str(len(values)) and values
        assert (row["min"], row["max"]) == (str(min(values)), str(max(values)))


def _check_spend(tables: dict[str, list[dict[str, str]]], u: Units) -> None:
    for row in tables["Spend (tokens)"]:
        if row["arm"] == "judge (separately)":
            continue
        every = [(u["family"], p) for u in u.units if u["arm"] == row["arm"] for p in u["probes"]]
        for field in ("input", "cache_read", "cache_write", "output"):
            # Totals include the compaction requests; compaction_* is the "of which".
            assert row[field] == str(
                sum(p["usage"][field] + p["compaction_usage"][field] for _, p in every)
            )
            assert row[f"compaction_{field}"] == str(
                sum(p["compaction_usage"][field] for _, p in every)
            )
        assert row["suites"] == ", ".join(
            s for s in ("original", "hard") if s in {f for f, _ in every}
        )
        # Offline: every probe sample is a live turn, and nothing is billed.
        assert row["live turns"] == str(len(every))
        assert row["list price (USD)"] == "-"


def test_summary_numbers_recompute_from_units(mixed: tuple[Store, Path]) -> None:
    store, folder = mixed
    _vary(folder, store)
    _, paths, _ = aggregate_run(store, folder, scorer="original")
    tables = _tables(paths["summary"].read_text())
    u = Units(folder)
    _check_accuracy(tables, u)
    _check_counts(tables, u)
    _check_tool_use(tables, u)
    _check_paired(tables, u)
    _check_pressure(tables, u)
    _check_spend(tables, u)
    header = paths["summary"].read_text().split("\n## ", 1)[0]
    assert f"{len(u.units)} units; arms: native, cold-rebuild, ceiling, continuity-store;" in header
    assert "suites: original, hard;" in header


def test_judge_agreement_recomputes_from_units(mixed: tuple[Store, Path]) -> None:
    store, folder = mixed
    _, paths, _ = aggregate_run(store, folder, scorer="original")
    tables = _tables(paths["summary"].read_text())
    pairs: list[tuple[str, str, bool, bool]] = []  # (suite, category, judge, scorer)
    disagreements = set()
    for path in sorted((folder / "units").glob("*.json")):
        unit = json.loads(path.read_text())
        valid = {p["probe_id"]: p for p in unit["probes"] if p["status"] == "valid"}
        for v in unit["judge"]:
            if v["probe_id"] not in valid or v.get("outcome") == "unreadable":
                continue
            probe = valid[v["probe_id"]]
            if probe["correct"] is None or "decided_by" in probe:
                continue  # the scorer gave no verdict: the judge decided it, or nobody did
            pairs.append((unit["family"], probe["category"], v["passed"], bool(probe["correct"])))
            if v["passed"] != bool(probe["correct"]):
                unit_id = f"r{unit['repeat']}/{unit['trace_id']}/{unit['arm']}"
                disagreements.add((unit["family"], unit_id, v["probe_id"]))
    assert pairs, "the offline scripted judge graded answers"
    # Next actions go to the judge beside the scorer; the hard suite has none, so only
    # the original suite has pairs (each suite's rows count its own, never pooled).
    assert {s for s, _, _, _ in pairs} == {"original"}
    rows = {(r["suite"], r["category"]): r for r in tables["Judge agreement"]}
    assert set(rows) == {(s, c) for s, c, _, _ in pairs} | {(s, "all") for s, _, _, _ in pairs}
    for (suite, category), row in rows.items():
        mine = [(j, p) for s, c, j, p in pairs if s == suite and category in ("all", c)]
        agree = sum(1 for j, p in mine if j == p)
        assert (row["pairs"], row["agree"]) == (str(len(mine)), str(agree))
        assert row["agreement"] == _pct(agree / len(mine))
        assert row["judge pass"] == str(sum(1 for j, _ in mine if j))
        assert row["proxy pass"] == str(sum(1 for _, p in mine if p))
    listed = {(r["suite"], r["unit"], r["probe"]) for r in tables["Judge disagreements"]}
    assert listed == disagreements


def test_scorer_change_recomputes_per_suite_from_units(mixed: tuple[Store, Path]) -> None:
    """Under the current scorer (which regrades the varied answers), the scorer-change
    table has one row per suite and arm: its n and original accuracy recompute from the
    unit files, its current accuracy from the same report's per-repeat accuracy split,
    and every listed change names the outcome the unit file holds."""
    store, folder = mixed
    _vary(folder, store)
    _, paths, _ = aggregate_run(store, folder)  # the current scorer
    tables = _tables(paths["summary"].read_text())
    u = Units(folder)
    rows = {(r["suite"], r["arm"]): r for r in tables["Scorer change vs original grades"]}
    assert set(rows) == {(x["family"], x["arm"]) for x in u.units}  # never pooled
    assert {s for s, _ in rows} == {"original", "hard"}
    accuracy = {(r["suite"], r["arm"]): r for r in tables["Accuracy per arm"]}
    for (suite, arm), row in rows.items():
        valid = u.probes(suite, arm)
        assert row["n"] == str(len(valid))
        assert row["original"] == _pct(sum(bool(p["correct"]) for _, _, p in valid) / len(valid))
        split = re.findall(r"r\d+ ([\d.]+)% \((\d+)\)", accuracy[(suite, arm)]["per repeat"])
        right = sum(round(float(a) * int(n) / 100) for a, n in split)
        assert row["current"] == _pct(right / sum(int(n) for _, n in split))
    outcomes = {
        (x["family"], x["arm"], x["repeat"], x["trace_id"], p["probe_id"]): p["outcome"]
        for x in u.units
        for p in x["probes"]
    }
    listed = tables.get("Outcomes changed by the current scorer", [])
    assert 0 < len(listed) < 200, "the varied grades differ; the list is not cut"
    for change in listed:
        key = (change["suite"], change["arm"], int(change["repeat"]), change["trace"])
        assert change["original"] == (outcomes[(*key, change["probe"])] or "-")
    for (suite, arm), row in rows.items():
        mine = [c for c in listed if (c["suite"], c["arm"]) == (suite, arm)]
        assert row["outcomes changed"] == str(len(mine))
