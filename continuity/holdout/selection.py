"""Selection ``seeded-sha256-rank-v1``: which frozen families a preregistered seed picks.

The rule (`select`, pure): sort the frozen family ids; rank them by the sha256 (hex) of
``"{seed}:{family_id}"``, ascending (equal hashes, which sha256 makes impossible in
practice, fall back to the id); then, groups in the statistical spec's order, take the
first ``per_group`` ranked families of each group. Every other family is a sealed spare:
nothing it holds is exposed, only its id and hashes, and it never replaces a selected
family whatever the outcome.

The seed is an integer the user gives explicitly (``--selection-seed N``), identically to
budget, estimate, registration and plan; ``--per-group`` (default: the spec's, which
defaults to 2) is a positive integer no larger than the smallest group.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from continuity.errors import HoldoutError
from continuity.holdout.freeze import FrozenHoldout
from continuity.holdout.schema import SELECTION_ALGORITHM, Selection

__all__ = [
    "MAX_SEED",
    "PER_GROUP_OPTION",
    "SEED_OPTION",
    "check_per_group",
    "parse_selection_seed",
    "rank",
    "select",
    "select_frozen",
]

SEED_OPTION = "--selection-seed"
PER_GROUP_OPTION = "--per-group"
MAX_SEED = 10**18 - 1  # at most 18 digits: every seed has one spelling, str(int)


def parse_selection_seed(value: str | int | None, *, option: str = SEED_OPTION) -> int:
    """The preregistered seed: a whole number from 0 to `MAX_SEED`, given explicitly.

    Raises:
        HoldoutError: ``holdout_selection_seed_required`` (None, empty or blank),
            ``holdout_selection_seed_invalid`` (anything but the decimal digits of such a
            number, or a bool).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        raise HoldoutError(
            "a holdout selection needs a preregistered --selection-seed N (an integer, the "
            "same for budget, estimate, registration and plan); there is no default",
            code="holdout_selection_seed_required",
            location=option,
        )
    text = value.strip() if isinstance(value, str) else None
    if isinstance(value, bool) or (text is not None and not (text.isascii() and text.isdigit())):
        raise HoldoutError(
            f"{str(value)[:40]!r} is not a whole number from 0 to {MAX_SEED}",
            code="holdout_selection_seed_invalid",
            location=option,
        )
    seed = int(text) if text is not None else int(value)
    if not 0 <= seed <= MAX_SEED:
        raise HoldoutError(
            f"{str(value)[:40]} is outside 0 to {MAX_SEED}",
            code="holdout_selection_seed_invalid",
            location=option,
        )
    return seed


def check_per_group(
    per_group: int, group_sizes: Mapping[str, int], *, option: str = PER_GROUP_OPTION
) -> int:
    """`per_group` when it is a positive integer no larger than the smallest group.

    Raises:
        HoldoutError: ``holdout_per_group_invalid``.
    """
    smallest = min(group_sizes.values(), default=0)
    if isinstance(per_group, bool) or not 1 <= per_group <= smallest:
        name = min(group_sizes, key=lambda g: group_sizes[g], default="-")
        raise HoldoutError(
            f"--per-group {per_group} must be from 1 to {smallest} (group {name} holds "
            f"{smallest} families)",
            code="holdout_per_group_invalid",
            location=option,
        )
    return per_group


def rank(seed: int, family_ids: Sequence[str]) -> list[str]:
    """The family ids in ``seeded-sha256-rank-v1`` order for `seed`."""

    def key(family_id: str) -> tuple[str, str]:
        return hashlib.sha256(f"{seed}:{family_id}".encode()).hexdigest(), family_id

    return sorted(sorted(family_ids), key=key)


def select(
    family_groups: Mapping[str, str], groups: Sequence[str], *, seed: int, per_group: int
) -> Selection:
    """The ``seeded-sha256-rank-v1`` selection (pure): `family_groups` maps each frozen
    family id to its group, `groups` is the spec's group order."""
    ranked = rank(seed, list(family_groups))
    by_group = tuple(
        (group, tuple([f for f in ranked if family_groups[f] == group][:per_group]))
        for group in groups
    )
    selected = tuple(f for _, chosen in by_group for f in chosen)
    spares = tuple(sorted(set(family_groups) - set(selected)))
    return Selection(
        algorithm=SELECTION_ALGORITHM,
        seed=seed,
        per_group=per_group,
        selected=selected,
        by_group=by_group,
        spares=spares,
    )


def select_frozen(
    frozen: FrozenHoldout, seed: str | int | None, per_group: int | None = None
) -> Selection:
    """The selection of a loaded freeze: `seed` checked by `parse_selection_seed`,
    `per_group` (None: the spec's) by `check_per_group`.

    Raises:
        HoldoutError: ``holdout_selection_seed_required``,
            ``holdout_selection_seed_invalid``, ``holdout_per_group_invalid``.
    """
    chosen_seed = parse_selection_seed(seed)
    count = frozen.spec.selection.per_group if per_group is None else per_group
    check_per_group(count, frozen.group_sizes())
    return select(
        {f.family_id: f.group for f in frozen.families},
        [g.name for g in frozen.spec.groups],
        seed=chosen_seed,
        per_group=count,
    )
