"""`doit compare`'s pairing, statistics and refusals, on copies of a real offline run.

A "head" run is the shared report run (tests/report/conftest.py) with its unit files
edited as a different model would have answered: each edited unit is re-keyed (its
binding names another reader, as a real run on another model would) and re-sealed, so
it passes the aggregate's verification as a unit of its own, then graded by the real
scorer. Nothing is mocked.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from continuity.arms import ARMS
from continuity.errors import AggregateError, CompareError, UsageError
from continuity.plan.plan import build_plan
from continuity.probes.scorer_version import scorer_digest
from continuity.report.compare import compare_runs, paired_delta, significant_drops
from continuity.report.compare_results import COMPARE_SCHEMA, Comparison
from continuity.report.compare_runs import resolve_run
from continuity.report.stats import mcnemar_exact
from continuity.runner.manifest import read_run_manifest, write_run_manifest
from continuity.runner.units.build import ProbeResult, UnitRecord, seal, unit_key
from continuity.store import Store

# Wrong for the fixture trace's probes: invented values where an abstention is right or
# a value is asked for, and the names its active-constraint probe forbids. Its status
# probes find no status word in it, so the scorer leaves those unresolved.
WRONG = (
    "Thanks! Fernhill wholesale sold seventeen purple umbrellas: order QX-4417-ZZ9, "
    "9 February 2031 at 04:13, £9,999.99."
)
Edit = Callable[[UnitRecord], UnitRecord]


def copy_run(source: Path, target: Path) -> Path:
    shutil.copytree(source / "units", target / "units")
    return target


def rekeyed(record: UnitRecord, **changes: object) -> UnitRecord:
    """The record with `changes`, keyed as a unit run on another reader, and sealed."""
    binding = {"reader": {"kind": "scripted", "model": "head-reader"}, "judge": None}
    changed = msgspec.structs.replace(record, binding=binding, **changes)
    key = unit_key(
        changed.repeat,
        changed.trace_key,
        ARMS[changed.arm],
        changed.checkpoint,
        changed.probe_ids,
        changed.binding,
        changed.probe_protocol,
    )
    return seal(msgspec.structs.replace(changed, key=key))


def edit_units(run_dir: Path, edit: Edit) -> None:
    for path in sorted((run_dir / "units").glob("*.json")):
        record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
        path.write_bytes(msgspec.json.encode(edit(record)))


def repeat_units(run_dir: Path, shift: int) -> None:
    """Every unit of the run again, as repeat + `shift` (rekeyed and sealed)."""
    for path in sorted((run_dir / "units").glob("*.json")):
        record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
        copy = rekeyed(record, repeat=record.repeat + shift)
        name = path.name.replace(f"r{record.repeat}-", f"r{copy.repeat}-", 1)
        (run_dir / "units" / name).write_bytes(msgspec.json.encode(copy))


def wrong_where_correct(record: UnitRecord) -> UnitRecord:
    """Every answer the unit got right replaced by a wrong one (its recorded grades kept:
    the current scorer grades the new answers)."""

    def answer(probe: ProbeResult) -> ProbeResult:
        if probe.status == "valid" and probe.correct:
            return msgspec.structs.replace(probe, answer=WRONG)
        return probe

    return rekeyed(record, probes=[answer(p) for p in record.probes])


def make_runs(base_run: tuple[Path, Path], tmp_path: Path) -> tuple[Store, Path, Path]:
    """A private store (``<tmp>/store``), the shared run as base and an unedited copy as
    head (``<tmp>/out/runs/base`` and ``head``)."""
    store_root, run_dir = base_run
    store = Store(shutil.copytree(store_root, tmp_path / "store"))
    base = copy_run(run_dir, tmp_path / "out" / "runs" / "base")
    head = copy_run(run_dir, tmp_path / "out" / "runs" / "head")
    return store, base, head


@pytest.fixture
def runs(base_run: tuple[Path, Path], tmp_path: Path) -> tuple[Store, Path, Path]:
    return make_runs(base_run, tmp_path)


def test_identical_runs_pair_every_sample_with_zero_deltas(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    store, base, head = runs
    comparison, paths = compare_runs(store, base, head, tmp_path / "cmp")
    assert comparison.slots.paired > 0
    assert (comparison.slots.only_base, comparison.slots.only_head) == (0, 0)
    cells = [
        delta
        for arms in comparison.deltas.values()
        for cell in arms.values()
        for delta in (cell.overall, *cell.by_category.values())
    ]
    assert cells and all(d.delta_pp == 0.0 and d.base_only == d.head_only == 0 for d in cells)
    assert all(d.mcnemar_p == 1.0 and (d.ci_low, d.ci_high) == (0.0, 0.0) for d in cells)
    assert not any(d.significant for d in cells)
    assert comparison.flips == [] and comparison.regressed_probes == []
    assert significant_drops(comparison) == []
    assert set(comparison.arms) == {"native", "cold-rebuild", "continuity-store"}
    stored = msgspec.json.decode(paths["json"].read_bytes(), type=Comparison)
    assert stored == comparison and stored.schema == COMPARE_SCHEMA
    page = paths["html"].read_text()
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert "src=" not in page and "href=" not in page
    assert "no change" in paths["markdown"].read_text()


# No value, status word, term or decline the scorer reads: unresolved in every category
# but redaction and task constraints (which it cannot violate).
UNREADABLE = "Thanks, that is all sorted on my side."


def unresolved_where_correct(record: UnitRecord) -> UnitRecord:
    """Every answer the unit got right replaced by one the scorer leaves unresolved."""

    def answer(probe: ProbeResult) -> ProbeResult:
        if probe.status == "valid" and probe.correct:
            return msgspec.structs.replace(probe, answer=UNREADABLE)
        return probe

    return rekeyed(record, probes=[answer(p) for p in record.probes])


def test_unresolved_samples_are_dropped_from_every_pair_and_counted(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    store, base, head = runs
    edit_units(head, unresolved_where_correct)
    comparison, paths = compare_runs(store, base, head, tmp_path / "cmp")
    slots = comparison.slots
    assert slots.unresolved > 0 and slots.excluded == 0
    same, _ = compare_runs(store, base, base, tmp_path / "same")
    assert slots.paired + slots.unresolved == same.slots.paired  # every valid slot, once
    assert comparison.flips == []  # an unresolved sample never flips: it has no call
    markdown = paths["markdown"].read_text()
    assert f"{slots.unresolved:,} dropped as unresolved in one run or both" in markdown
    stored = msgspec.json.decode(paths["json"].read_bytes(), type=Comparison)
    assert stored.slots.unresolved == slots.unresolved


def test_an_injected_regression_flips_samples_and_is_significant(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    store, base, head = runs
    # The scripted reader gets 4 samples right per arm over the fixture's two repeats:
    # too few discordant pairs for an exact McNemar test at 0.05 (its least p is 2/2^n).
    # Repeats 3 and 4 (copies of 1 and 2) give 8 per arm.
    for run_dir in (base, head):
        repeat_units(run_dir, shift=2)
    edit_units(head, wrong_where_correct)
    comparison, paths = compare_runs(store, base, head, tmp_path / "cmp")
    flips = comparison.flips
    assert flips and {f.direction for f in flips} == {"regressed"}
    assert {f.head_answer for f in flips} == {WRONG}
    assert all(f.base_answer != WRONG for f in flips)
    suite = comparison.deltas["original"]
    for arm, cell in suite.items():
        overall = cell.overall
        assert overall.head_correct == 0 and overall.head_only == 0, arm
        assert overall.base_only == overall.base_correct == len([f for f in flips if f.arm == arm])
        assert overall.delta_pp is not None and overall.delta_pp < 0
        assert overall.mcnemar_p == mcnemar_exact(0, overall.base_only)
        assert overall.ci_high is not None and overall.ci_high < 0
    drops = significant_drops(comparison)
    assert drops and all(d.startswith("original/") for d in drops)
    worst = min(cell.overall.delta_pp or 0.0 for cell in suite.values())
    assert significant_drops(comparison, max_drop=-worst) == []  # a drop of exactly PP passes
    assert significant_drops(comparison, max_drop=-worst - 0.1) != []
    probes = comparison.regressed_probes
    assert probes and all(p.head_correct < p.base_correct for p in probes)
    assert {(p.trace_id, p.probe_id, p.arm) for p in probes} == {
        (f.trace_id, f.probe_id, f.arm) for f in flips
    }
    html = paths["html"].read_text()
    assert 'class="down-sig"' in html and "significant drop" in html
    assert WRONG in paths["markdown"].read_text()


def test_excluded_and_unpaired_slots_are_counted_not_compared(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    store, base, head = runs
    native = sorted((head / "units").glob("*-native.json"))
    gone = len(msgspec.json.decode(native[0].read_bytes(), type=UnitRecord).probes)
    native[0].unlink()  # one unit only in base

    def exclude_first(record: UnitRecord) -> UnitRecord:
        first = msgspec.structs.replace(
            record.probes[0], status="failed", correct=None, outcome=None
        )
        return rekeyed(record, probes=[first, *record.probes[1:]])

    edit_units(head, exclude_first)
    comparison, _ = compare_runs(store, base, head, tmp_path / "cmp")
    slots = comparison.slots
    assert (slots.only_base, slots.only_head) == (gone, 0)
    # The first probe of every head unit, unless base had already excluded it.
    assert 0 < slots.excluded <= len(list((head / "units").glob("*.json")))
    assert slots.paired + slots.excluded + slots.only_base == sum(
        len(msgspec.json.decode(p.read_bytes(), type=UnitRecord).probes)
        for p in (base / "units").glob("*.json")
    )
    assert slots.paired > 0 and comparison.flips == []


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (lambda r: rekeyed(r, probe_protocol="probe-protocol-v1"), "compare_protocol_mismatch"),
        (lambda r: rekeyed(r, trace_key="ab" * 32), "compare_trace_mismatch"),
    ],
    ids=["protocol", "trace"],
)
def test_incomparable_runs_are_refused_and_nothing_is_written(
    runs: tuple[Store, Path, Path], tmp_path: Path, edit: Edit, code: str
) -> None:
    store, base, head = runs
    edit_units(head, edit)
    with pytest.raises(CompareError) as caught:
        compare_runs(store, base, head, tmp_path / "cmp")
    assert caught.value.code == code and caught.value.location == "--head"
    if code == "compare_trace_mismatch":
        assert "harbor-market-stall" in caught.value.message
    assert not (tmp_path / "cmp").exists()


def test_original_grades_from_different_scorers_are_refused(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    """A head whose recorded grades the current scorer does not reproduce (one grade
    flipped, its answer kept) was graded by another scorer than the base's."""
    store, base, head = runs

    def regrade(record: UnitRecord) -> UnitRecord:
        probes = list(record.probes)
        i = next(i for i, p in enumerate(probes) if p.status == "valid")
        probes[i] = msgspec.structs.replace(probes[i], correct=not probes[i].correct)
        return rekeyed(record, probes=probes)

    edit_units(head, regrade)
    with pytest.raises(CompareError) as caught:
        compare_runs(store, base, head, tmp_path / "cmp", scorer="original")
    assert (caught.value.code, caught.value.location) == ("compare_scorer_mismatch", "--head")
    # Under the current scorer both runs are graded alike, and they are the same answers.
    comparison, _ = compare_runs(store, base, head, tmp_path / "cmp")
    assert comparison.flips == [] and comparison.scorer == "current"
    same, paths = compare_runs(store, base, base, tmp_path / "same", scorer="original")
    assert same.scorer_digest is None and "original grades" in same.base.grades
    # Neither run has a run.json naming its scorer: the heuristic ran, and says so.
    assert same.scorer_check.startswith("a run's run.json does not record its scorer")
    assert "checked by re-grading" in paths["markdown"].read_text()
    assert same.base.origin is None and "no run.json" in paths["markdown"].read_text()


def test_runs_with_no_common_valid_slot_are_refused(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    store, base, head = runs
    for path in (base / "units").glob("*.json"):
        if not path.name.endswith("-native.json"):
            path.unlink()
    for path in (head / "units").glob("*-native.json"):
        path.unlink()
    with pytest.raises(CompareError) as caught:
        compare_runs(store, base, head, tmp_path / "cmp")
    assert caught.value.code == "compare_no_pairs"
    assert not (tmp_path / "cmp").exists()


def test_an_unknown_scorer_and_a_tampered_unit_are_refused_with_their_codes(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    store, base, head = runs
    with pytest.raises(UsageError) as unknown:
        compare_runs(store, base, head, tmp_path / "cmp", scorer="newest")
    assert (unknown.value.code, unknown.value.location) == ("scorer_unknown", "--scorer")
    unit = sorted((head / "units").glob("*.json"))[0]
    record = msgspec.json.decode(unit.read_bytes(), type=UnitRecord)
    unit.write_bytes(msgspec.json.encode(msgspec.structs.replace(record, repeat=9)))
    with pytest.raises(AggregateError) as tampered:
        compare_runs(store, base, head, tmp_path / "cmp")
    assert tampered.value.code == "unit_tampered"
    unit.write_text("not json")
    with pytest.raises(AggregateError) as malformed:
        compare_runs(store, base, head, tmp_path / "cmp")
    assert malformed.value.code == "unit_malformed"


def test_a_run_is_named_or_a_directory_and_a_missing_one_lists_the_runs(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    _, base, _ = runs
    out = tmp_path / "out"
    assert resolve_run("base", out, "--base") == base
    assert resolve_run(str(base), out, "--head") == base
    for text, code in (("nosuch", "run_unknown"), ("", "run_unknown")):
        with pytest.raises(CompareError) as caught:
            resolve_run(text, out, "--base")
        assert (caught.value.code, caught.value.location) == (code, "--base")
        assert "base, head" in caught.value.message  # the runs that hold units
    (out / "runs" / "empty" / "units").mkdir(parents=True)
    with pytest.raises(CompareError) as empty:
        resolve_run("empty", out, "--head")
    assert (empty.value.code, empty.value.location) == ("run_empty", "--head")


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 0, 1.0),
        (3, 3, 1.0),
        (0, 5, 0.0625),  # 2 * 1/32
        (0, 6, 0.03125),  # 2 * 1/64
        (1, 9, 0.021484375),  # 2 * (1 + 10)/1024
        (2, 8, 0.109375),  # 2 * (1 + 10 + 45)/1024
        (10, 0, 0.001953125),  # 2 * 1/1024
    ],
)
def test_mcnemar_exact_matches_the_binomial(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-12)
    assert mcnemar_exact(c, b) == pytest.approx(p, rel=1e-12)


def test_the_paired_bootstrap_is_deterministic(tmp_path: Path) -> None:
    pairs = [(True, False)] * 7 + [(False, True)] * 2 + [(True, True)] * 11 + [(False, False)] * 20
    first = paired_delta(Store(tmp_path / "one"), pairs)
    again = paired_delta(Store(tmp_path / "two"), pairs)  # computed afresh, not cached
    cached = paired_delta(Store(tmp_path / "one"), pairs)
    assert first == again == cached
    assert first.delta_pp == pytest.approx(100 * (13 - 18) / 40)
    low, delta, high = first.ci_low, first.delta_pp, first.ci_high
    assert low is not None and delta is not None and high is not None
    assert low <= delta <= high
    assert (first.base_only, first.head_only) == (7, 2)
    assert first.mcnemar_p == pytest.approx(2 * (1 + 9 + 36) / 512)


def _manifest(run: Path, reader: str = "openai-codex:gpt-6-luna") -> Path:
    """Give `run` a run.json as doit units writes it (this checkout's commit and scorer)."""
    return write_run_manifest(
        run, build_plan("original", reader=reader), started="2026-03-01T10:00:00Z"
    )


def _set_scorers(path: Path, *digests: str) -> None:
    """Record `digests` as the scorers of the manifest's invocations (one each)."""
    stored = json.loads(path.read_text())
    first = stored["invocations"][0]
    stored["invocations"] = [first | {"scorer_digest": d} for d in digests]
    path.write_text(json.dumps(stored))


def test_original_grades_are_checked_by_the_scorers_run_json_records(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    """Both runs name their scorer in run.json: the same one passes (even where the
    re-grading heuristic would refuse: the record wins), a different one, between the
    runs or within one, is refused with the run it names; --scorer current ignores
    what they recorded (both are re-graded by one scorer)."""
    store, base, head = runs
    _manifest(base)
    head_manifest = _manifest(head)

    def regrade(record: UnitRecord) -> UnitRecord:
        probes = list(record.probes)
        i = next(i for i, p in enumerate(probes) if p.status == "valid")
        probes[i] = msgspec.structs.replace(probes[i], correct=not probes[i].correct)
        return rekeyed(record, probes=probes)

    edit_units(head, regrade)  # the heuristic alone refuses this pair (test above)
    same, paths = compare_runs(store, base, head, tmp_path / "same", scorer="original")
    assert same.scorer_check == (
        f"both runs' run.json record scorer {scorer_digest()[:16]} for every invocation"
    )
    assert same.scorer_check in paths["markdown"].read_text()
    _set_scorers(head_manifest, "f" * 64)
    with pytest.raises(CompareError) as between:
        compare_runs(store, base, head, tmp_path / "cmp", scorer="original")
    assert (between.value.code, between.value.location) == ("compare_scorer_mismatch", "--head")
    assert scorer_digest()[:16] in between.value.message and "f" * 16 in between.value.message
    _set_scorers(head_manifest, scorer_digest(), "e" * 64)
    with pytest.raises(CompareError) as within:
        compare_runs(store, base, head, tmp_path / "cmp", scorer="original")
    assert (within.value.code, within.value.location) == ("compare_scorer_mismatch", "--head")
    assert "head run's invocations were graded by 2 scorer versions" in within.value.message
    current, _ = compare_runs(store, base, head, tmp_path / "cmp")
    assert current.scorer == "current" and current.flips == []
    assert current.scorer_check.startswith("both runs graded by this checkout's scorer")
    assert not (tmp_path / "cmp" / "compare.md").read_text().count("re-grading")


def test_a_run_without_a_recorded_scorer_falls_back_to_the_heuristic(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    """One run names its scorer and the other has no run.json (or a v1 one, whose
    scorer is unknown): the re-grading heuristic decides, and the document says so."""
    store, base, head = runs
    _manifest(base)
    comparison, _ = compare_runs(store, base, head, tmp_path / "cmp", scorer="original")
    assert comparison.scorer_check.startswith("a run's run.json does not record its scorer")
    _set_scorers(_manifest(head), scorer_digest())
    stored = json.loads((head / "run.json").read_text())
    stored["invocations"][0]["scorer_digest"] = None  # as a converted v1 manifest reads
    (head / "run.json").write_text(json.dumps(stored))
    comparison, _ = compare_runs(store, base, head, tmp_path / "cmp", scorer="original")
    assert comparison.scorer_check.startswith("a run's run.json does not record its scorer")
    assert comparison.head.origin is not None
    assert comparison.head.origin.scorers == ["unknown"]


def test_each_run_is_named_by_its_directory_and_its_run_json(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    store, base, head = runs
    _manifest(base)
    _manifest(head, reader="openai:gpt-4.1")
    _manifest(head, reader="openai:gpt-4.1")  # a second invocation of the same plan
    comparison, paths = compare_runs(store, base, head, tmp_path / "cmp")
    origin = comparison.head.origin
    assert origin is not None and comparison.base.origin is not None
    manifest = read_run_manifest(head)
    assert manifest is not None
    assert origin.readers == ["openai:gpt-4.1 (effort low)"] and origin.invocations == 2
    assert origin.plan_digests == [manifest.latest.plan_digest]
    assert origin.commits == [manifest.latest.commit]
    assert (origin.started, origin.finished) == (manifest.started, manifest.finished)
    stored = msgspec.json.decode(paths["json"].read_bytes(), type=Comparison)
    assert stored.head.origin == origin and stored.head.path == str(head)
    for page in (paths["markdown"].read_text(), paths["html"].read_text()):
        assert str(base) in page and str(head) in page
        assert "reader openai:gpt-4.1 (effort low)" in page
        assert f"plan {manifest.latest.plan_digest[:12]}…" in page
        assert f"commit {manifest.latest.commit[:12]}" in page
        assert f"{manifest.started} to {manifest.finished} (2 invocations)" in page


def test_category_names_wrap_at_their_underscores_in_compare_html(
    runs: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    store, base, head = runs
    comparison, paths = compare_runs(store, base, head, tmp_path / "cmp")
    categories = {
        name for arms in comparison.deltas.values() for c in arms.values() for name in c.by_category
    }
    snake = sorted(name for name in categories if "_" in name)
    assert snake  # the fixture's trace has snake_case categories
    page = paths["html"].read_text()
    for name in snake:
        assert f"<td>{name.replace('_', '_<wbr>')}</td>" in page
        assert f"<td>{name}</td>" not in page
