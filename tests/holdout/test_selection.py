"""`seeded-sha256-rank-v1` against a hand-computed ranking, its option checks, the
binding, the selected traces and the workload rules of a holdout."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec
import pytest

from continuity.errors import HoldoutError
from continuity.holdout import (
    FrozenHoldout,
    HoldoutBinding,
    References,
    check_holdout_repeats,
    check_overlap,
    check_per_group,
    freeze_source,
    holdout_binding,
    load_frozen,
    parse_selection_seed,
    refuse_explicit_traces,
    select,
    select_frozen,
    selected_traces,
    validate_source,
)
from continuity.holdout.overlap import write_report
from continuity.holdout.references import Reference
from continuity.holdout.selection import MAX_SEED, rank
from continuity.store import Store
from tests.holdout.toy import FAMILIES, write_source

GROUPS = {family_id: group for family_id, group, _, _ in FAMILIES}

# sha256("17:<id>"), worked out by hand once (hashlib.sha256(b"17:toy-south-2").hexdigest()
# and so on) and sorted: the first 16 hex digits of each, lowest first.
SEED_17 = [
    ("642818583c827b6c", "toy-south-2"),
    ("7e0d0ede17b8d1dd", "toy-south-3"),
    ("9ed5d0e42ccd88dc", "toy-north-1"),
    ("b475bef22689e150", "toy-north-2"),
    ("dfb507db1bbbb848", "toy-north-3"),
    ("f2c54938c867e143", "toy-south-1"),
]
SEED_2026 = [
    ("04a06d3d058e92c1", "toy-south-3"),
    ("2e1e8fcf5df81f31", "toy-north-1"),
    ("b139ae514e4d586d", "toy-north-2"),
    ("b925c4ccbf9cee66", "toy-north-3"),
    ("bad448fdfb8fe059", "toy-south-2"),
    ("eaad342ee172af7a", "toy-south-1"),
]


@pytest.mark.parametrize(("seed", "table"), [(17, SEED_17), (2026, SEED_2026)])
def test_the_hand_computed_hashes_hold(seed: int, table: list[tuple[str, str]]) -> None:
    for prefix, family_id in table:
        assert hashlib.sha256(f"{seed}:{family_id}".encode()).hexdigest()[:16] == prefix
    assert rank(seed, list(GROUPS)) == [family_id for _, family_id in table]


def test_seed_17_takes_the_two_best_ranked_of_each_group() -> None:
    selection = select(GROUPS, ["north", "south"], seed=17, per_group=2)
    assert selection.algorithm == "seeded-sha256-rank-v1"
    assert selection.selected == ("toy-north-1", "toy-north-2", "toy-south-2", "toy-south-3")
    assert selection.by_group == (
        ("north", ("toy-north-1", "toy-north-2")),
        ("south", ("toy-south-2", "toy-south-3")),
    )
    assert selection.spares == ("toy-north-3", "toy-south-1")


def test_seed_2026_one_per_group_in_the_specs_group_order() -> None:
    selection = select(GROUPS, ["south", "north"], seed=2026, per_group=1)
    assert selection.selected == ("toy-south-3", "toy-north-1")
    assert selection.by_group == (("south", ("toy-south-3",)), ("north", ("toy-north-1",)))
    assert selection.spares == ("toy-north-2", "toy-north-3", "toy-south-1", "toy-south-2")


def test_the_selection_ignores_input_order_and_has_a_stable_digest() -> None:
    shuffled = dict(sorted(GROUPS.items(), reverse=True))
    one = select(GROUPS, ["north", "south"], seed=17, per_group=2)
    two = select(shuffled, ["north", "south"], seed=17, per_group=2)
    assert one == two and one.selection_digest == two.selection_digest
    assert len(one.selection_digest) == 64
    other = select(GROUPS, ["north", "south"], seed=18, per_group=2)
    assert other.selection_digest != one.selection_digest


@pytest.mark.parametrize(("text", "seed"), [("0", 0), ("17", 17), (" 007 ", 7), (2026, 2026)])
def test_a_seed_is_a_whole_number(text: str | int, seed: int) -> None:
    assert parse_selection_seed(text) == seed
    assert parse_selection_seed(str(MAX_SEED)) == MAX_SEED


@pytest.mark.parametrize("value", [None, "", "  "])
def test_a_seed_must_be_given(value: str | None) -> None:
    with pytest.raises(HoldoutError) as err:
        parse_selection_seed(value)
    assert (err.value.code, err.value.location) == (
        "holdout_selection_seed_required",
        "--selection-seed",
    )


@pytest.mark.parametrize(
    "value", ["x", "1.5", "-1", "+3", "1e3", "0x10", "\u0663", "1_0", str(MAX_SEED + 1), -4, True]
)
def test_a_seed_that_is_not_a_whole_number_is_invalid(value: str | int) -> None:
    with pytest.raises(HoldoutError) as err:
        parse_selection_seed(value)
    assert (err.value.code, err.value.location) == (
        "holdout_selection_seed_invalid",
        "--selection-seed",
    )


@pytest.mark.parametrize("per_group", [0, -1, 4, True])
def test_per_group_is_positive_and_at_most_the_smallest_group(per_group: int) -> None:
    with pytest.raises(HoldoutError) as err:
        check_per_group(per_group, {"north": 3, "south": 4})
    assert (err.value.code, err.value.location) == ("holdout_per_group_invalid", "--per-group")
    assert check_per_group(3, {"north": 3, "south": 4}) == 3


# -- on a frozen source -------------------------------------------------------------------


@pytest.fixture
def frozen(store: Store, tmp_path: Path) -> FrozenHoldout:
    source = write_source(tmp_path / "src")
    plain = References((Reference("prompt/plain", (("$", "Answer plainly."),)),))
    (tmp_path / "overlap").mkdir()
    report = write_report(
        check_overlap(validate_source(source), plain), tmp_path / "overlap", "toy"
    )
    freeze_source(store, source, str(report), references=plain)
    return load_frozen(store, source)


def test_a_frozen_selection_uses_the_specs_per_group_by_default(frozen: FrozenHoldout) -> None:
    assert select_frozen(frozen, "17") == select(GROUPS, ["north", "south"], seed=17, per_group=2)
    assert select_frozen(frozen, 17, 3).spares == ()
    with pytest.raises(HoldoutError) as err:
        select_frozen(frozen, 17, 4)
    assert err.value.code == "holdout_per_group_invalid"
    with pytest.raises(HoldoutError) as err:
        select_frozen(frozen, None)
    assert err.value.code == "holdout_selection_seed_required"


def test_the_binding_names_source_freeze_and_selection(frozen: FrozenHoldout) -> None:
    selection = select_frozen(frozen, 17)
    binding = holdout_binding(frozen, selection)
    assert binding == HoldoutBinding(
        manifest_sha256=frozen.record.manifest_sha256,
        spec_sha256=frozen.record.spec_sha256,
        freeze_digest=frozen.freeze_digest,
        algorithm="seeded-sha256-rank-v1",
        seed=17,
        per_group=2,
        selected=("toy-north-1", "toy-north-2", "toy-south-2", "toy-south-3"),
        selection_digest=selection.selection_digest,
    )
    assert msgspec.json.decode(msgspec.json.encode(binding), type=HoldoutBinding) == binding


def test_a_selection_that_is_not_the_rules_is_refused(store: Store, frozen: FrozenHoldout) -> None:
    swapped = msgspec.structs.replace(
        select_frozen(frozen, 17),
        selected=("toy-north-3", "toy-north-2", "toy-south-2", "toy-south-3"),
    )
    for call in (
        lambda: holdout_binding(frozen, swapped),
        lambda: selected_traces(store, frozen, swapped),
    ):
        with pytest.raises(HoldoutError) as err:
            call()
        assert err.value.code == "holdout_selection_mismatch"


def test_selected_traces_resolve_through_their_keys(store: Store, frozen: FrozenHoldout) -> None:
    selection = select_frozen(frozen, 17)
    traces = selected_traces(store, frozen, selection)
    assert [t.family_id for t in traces] == list(selection.selected)
    assert [t.group for t in traces] == ["north", "north", "south", "south"]
    for trace in traces:
        entry = store.get_action(trace.key)
        assert entry is not None and entry.kind == "trace"
        assert entry.output.digest == trace.digest
        data = store.get_blob(trace.digest)
        assert hashlib.sha256(data).hexdigest() == trace.sha256 and len(data) == trace.size
        assert trace.trace_id == trace.family_id
    assert not {t.family_id for t in traces} & set(selection.spares)


def test_a_missing_action_is_recorded_again_and_a_lost_blob_refused(
    store: Store, frozen: FrozenHoldout
) -> None:
    selection = select_frozen(frozen, 17)
    first = selected_traces(store, frozen, selection)[0]
    store.action_path(first.key).unlink()
    assert selected_traces(store, frozen, selection)[0] == first
    assert store.get_action(first.key) is not None
    store.action_path(first.key).unlink()
    store.object_path(first.digest).unlink()
    with pytest.raises(HoldoutError) as err:
        selected_traces(store, frozen, selection)
    assert err.value.code == "holdout_not_frozen"


@pytest.mark.parametrize("option", ["--trace", "--traces", "--lookup-traces"])
def test_explicit_trace_selections_are_refused(option: str) -> None:
    with pytest.raises(HoldoutError) as err:
        refuse_explicit_traces(option)
    assert (err.value.code, err.value.location) == ("holdout_trace_selection_refused", option)


@pytest.mark.parametrize("repeats", [0, 2, 3, True])
def test_lookup_on_a_holdout_runs_exactly_one_repeat(repeats: int) -> None:
    check_holdout_repeats(1)
    with pytest.raises(HoldoutError) as err:
        check_holdout_repeats(repeats)
    assert (err.value.code, err.value.location) == ("holdout_repeats_invalid", "--repeats")
