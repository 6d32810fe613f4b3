"""Paired deltas per suite, the baseline they pair with, the observed pressure range, and
the probe-protocol rule."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from continuity.errors import AggregateError
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.report.aggregate import aggregate_run, combine
from continuity.report.collect import load_summaries
from continuity.report.findings import findings
from continuity.report.findings_render import largest_line
from continuity.report.paired import baseline_arm
from continuity.report.render import render_html, render_markdown
from continuity.report.results import Spend
from continuity.runner.units.build import UnitRecord, seal
from continuity.store import Store


def _regrade(folder: Path, store: Store, change: object) -> None:
    """Apply `change(record, index, probe) -> probe` to every probe and re-seal (file and
    the store's copy agree, as after a legitimate re-seal)."""
    assert callable(change)
    for path in sorted((folder / "units").glob("*.json")):
        record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
        probes = [change(record, n, p) for n, p in enumerate(record.probes)]
        data = msgspec.json.encode(seal(msgspec.structs.replace(record, probes=probes)))
        store.record_action(record.key, kind="unit", output=store.put_blob(data))
        path.write_bytes(data)


def _grade(record: UnitRecord, n: int, probe: object) -> object:
    """Native right on every original probe, on a third of the hard ones; ceiling right
    on half of the hard ones: a pooled native baseline is far from the hard one."""
    correct = {
        ("original", "native"): True,
        ("hard", "native"): n % 3 == 0,
        ("hard", "ceiling"): n % 2 == 0,
    }.get((record.family, record.arm), False)
    return msgspec.structs.replace(
        probe,  # type: ignore[type-var]
        correct=correct,
        outcome="correct" if correct else "fabricated",
    )


def test_the_ceiling_headline_delta_is_the_paired_delta(mixed: tuple[Store, Path]) -> None:
    store, folder = mixed
    _regrade(folder, store, _grade)
    results, paths, _ = aggregate_run(store, folder, scorer="original")
    assert results.suites == ["original", "hard"]
    # ceiling ran on the hard suite only; no table has a ceiling row elsewhere.
    assert "ceiling" not in results.accuracy["original"]
    cell = results.accuracy["hard"]["ceiling"]["overall"]
    paired = results.paired["hard"]["ceiling"]
    assert cell.delta_pp == paired.delta_pp and cell.delta_n == paired.pairs
    # Independently: ceiling 3/6 right per repeat, native 2/6 (probes 0 and 3).
    assert paired.pairs == 12 and paired.delta_pp == pytest.approx(100 * (6 - 4) / 12)
    # The trace-mix artefact a pooled native mean would have produced.
    native_rows = [
        (s, c) for s in results.suites for c in [results.accuracy[s]["native"]["overall"]]
    ]
    pooled = sum((c.mean or 0) * c.n for _, c in native_rows) / sum(c.n for _, c in native_rows)
    assert cell.mean is not None and cell.delta_pp is not None
    assert abs(100 * (cell.mean - pooled) - cell.delta_pp) > 10
    for category, cat_cell in results.accuracy["hard"]["ceiling"].items():
        if category != "overall":
            assert cat_cell.delta_pp == paired.by_category[category].delta_pp
            assert cat_cell.delta_n == paired.by_category[category].pairs
    # The headline table shows the paired delta and its n, one row per suite and arm.
    summary = paths["summary"].read_text()
    head = summary.split("## Accuracy per arm\n", 1)[1].split("\n## ", 1)[0]
    assert "| suite | arm | n | accuracy |" in head and "| paired n |" in head
    assert "| hard | ceiling | 12 | 50.0% |" in head and "| 16.7 | 12 |" in head
    rows = [line for line in head.splitlines() if line.startswith("| ") and "suite" not in line]
    assert len(rows) == len({tuple(r.split("|")[1:3]) for r in rows}) == 5


def test_an_excluded_sample_leaves_its_pair(mixed: tuple[Store, Path]) -> None:
    store, folder = mixed

    def exclude_one(record: UnitRecord, n: int, probe: object) -> object:
        graded = _grade(record, n, probe)
        if (record.family, record.arm, record.repeat, n) == ("hard", "native", 1, 0):
            return msgspec.structs.replace(
                graded,  # type: ignore[type-var]
                status="pressure_unverified",
                correct=None,
                outcome=None,
            )
        return graded

    _regrade(folder, store, exclude_one)
    results, _, _ = aggregate_run(store, folder, scorer="original")
    paired = results.paired["hard"]["ceiling"]
    # One pair fewer; native's lost sample was a right answer, ceiling's was right too.
    assert paired.pairs == 11
    assert paired.delta_pp == pytest.approx(100 * (5 - 3) / 11)
    assert results.accuracy["hard"]["ceiling"]["overall"].delta_n == 11
    assert results.excluded["hard"]["native"]["pressure_unverified"] == 1
    assert results.excluded["hard"]["native"]["inventory_infeasible"] == 0


def test_the_pressure_range_is_the_figure_each_arm_checks(mixed: tuple[Store, Path]) -> None:
    store, folder = mixed
    results, paths, _ = aggregate_run(store, folder, scorer="original")
    units = [
        msgspec.json.decode(p.read_bytes(), type=UnitRecord)
        for p in sorted((folder / "units").glob("*.json"))
    ]
    ceiling = [
        p.evidence.compaction.tokens_before
        for u in units
        if u.arm == "ceiling"
        for p in u.probes
        if p.status == "valid" and p.evidence and p.evidence.compaction
    ]
    figure = results.pressure["hard"]["ceiling"]["compaction_tokens_before"]
    assert (figure.min, figure.max, figure.n) == (min(ceiling), max(ceiling), 12)
    assert figure.threshold == 200_000 and figure.min is not None and figure.min >= 200_000
    assert set(results.pressure["hard"]["native"]) == {"probe_input_tokens"}
    assert set(results.pressure["original"]["cold-rebuild"]) == {
        "replayed_messages",
        "dropped_records",
    }
    assert "## Observed pressure" in paths["summary"].read_text()
    assert "Observed pressure" in paths["report"].read_text()


def test_units_of_different_probe_protocols_are_refused(mixed: tuple[Store, Path]) -> None:
    store, folder = mixed
    summaries, _ = load_summaries(store, folder / "units")
    assert {s.probe_protocol for s in summaries} == {PROBE_PROTOCOL}
    mixed_protocols = [
        msgspec.structs.replace(s, probe_protocol="") if s.arm == "native" else s for s in summaries
    ]
    with pytest.raises(AggregateError) as err:
        combine(store, "mixed", mixed_protocols)
    assert err.value.code == "unit_protocol_mixed"
    assert "probe-protocol-v1" in str(err.value) and PROBE_PROTOCOL in str(err.value)


def test_an_older_protocol_is_named_and_called_not_comparable(mixed: tuple[Store, Path]) -> None:
    store, folder = mixed
    summaries, _ = load_summaries(store, folder / "units")
    current = combine(store, "mixed", summaries)
    assert current.probe_protocols == [PROBE_PROTOCOL] and current.protocol_note is None
    assert f"Probe protocol: {PROBE_PROTOCOL}." in render_markdown(current)
    older = combine(
        store, "old", [msgspec.structs.replace(s, probe_protocol="") for s in summaries]
    )
    assert older.probe_protocols == ["probe-protocol-v1"]
    for text in (render_markdown(older), render_html(older)):
        assert "Probe protocol: probe-protocol-v1." in text
        assert "not comparable" in text


def test_the_baseline_is_the_arm_the_run_ran_and_findings_name_it(
    mixed: tuple[Store, Path],
) -> None:
    """One choice of baseline (`baseline_arm`) for the paired deltas and the findings: an
    outside agent's run pairs with agent-native; a run without a baseline arm has no
    paired delta and says so; a suite that ran only its baseline has nothing to pair."""
    store, folder = mixed
    _regrade(folder, store, _grade)
    summaries, _ = load_summaries(store, folder / "units")
    assert baseline_arm(["ceiling", "agent-native", "native"]) == "native"
    assert baseline_arm(["agent-native", "agent-memory"]) == "agent-native"
    assert baseline_arm(["ceiling", "cold-rebuild"]) is None

    agent = [
        msgspec.structs.replace(s, arm="agent-native") if s.arm == "native" else s
        for s in summaries
    ]
    results = combine(store, "agent", agent)
    paired = results.paired["hard"]["ceiling"]
    assert paired.pairs == 12 and paired.delta_pp == pytest.approx(100 * (6 - 4) / 12)
    assert results.accuracy["hard"]["agent-native"]["overall"].delta_pp == 0.0
    hard = findings(results).suites[1]
    assert hard.baseline == "agent-native" and hard.largest is not None
    assert (hard.largest.arm, hard.largest.baseline) == ("ceiling", "agent-native")
    assert largest_line(hard.largest, hard.baseline).startswith(
        "Largest paired delta vs agent-native: ceiling, +16.7 pp"
    )

    without = combine(store, "none", [s for s in summaries if s.arm != "native"])
    assert not any(without.paired.values())  # no suite has a paired comparison
    cells = [
        c for by_arm in without.accuracy.values() for by in by_arm.values() for c in by.values()
    ]
    assert all(c.delta_pp is None and c.delta_n == 0 for c in cells)
    for suite in findings(without).suites:
        assert suite.baseline is None and suite.largest is None
        assert largest_line(suite.largest, suite.baseline) == (
            "No paired delta: the suite ran no baseline arm (native, or agent-native for an "
            "outside agent) to pair with."
        )
    real = Spend(
        input=0,
        cache_read=0,
        cache_write=0,
        output=0,
        model_calls=1,  # a model answered: the reading leads with the paired delta
        cost_usd=None,
        cost_known_usd=0.0,
        unpriced_calls=0,
    )
    real_reading = findings(msgspec.structs.replace(without, spend={"ceiling": real})).reading
    assert real_reading.startswith("On the model's answers, no arm was paired with a baseline")

    alone = combine(store, "alone", [s for s in summaries if s.arm == "native"])
    for suite in findings(alone).suites:
        assert suite.baseline == "native" and suite.largest is None
        line = largest_line(suite.largest, suite.baseline)
        assert line == "No paired delta: no other arm was paired with native."
