"""Paired comparisons with the baseline arm (native), one suite at a time.

Every "delta vs native" the report prints is paired: it is computed over the samples
both arms answered validly (same suite, repeat, trace and probe), and carries that count.
An unpaired difference of means would compare different trace sets whenever an arm
runs on part of a suite only (``ceiling`` runs on long traces only) or loses different
samples to exclusion; the paired one cannot.

The baseline is native, or, in a run of an outside agent without it, the agent's own
native arm (`baseline_arm`, the one place that choice is made). The delta is
``100 * (arm correct - native correct) / pairs``: the same figure in the
accuracy tables (overall and per category) and in the paired table, where it comes with
the discordant counts, an exact McNemar p-value and a paired bootstrap interval (cached
in the store under the digest of the paired outcomes).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import msgspec

from continuity.digest import KeySpec, code_digest, digest_bytes
from continuity.report.results import AccuracyCell, CategoryDelta, Paired
from continuity.report.stats import mcnemar_exact, paired_bootstrap
from continuity.report.summary import UnitSummary
from continuity.store import Store

__all__ = [
    "BASELINE_ARMS",
    "BOOTSTRAP_SALT",
    "SampleKey",
    "baseline_arm",
    "bootstrap_interval",
    "paired_with_native",
    "valid_outcomes",
]

BOOTSTRAP_SALT = "paired-bootstrap-v1"
SampleKey = tuple[int, str, str]  # (repeat, trace id, probe id)
# The arms a suite's deltas pair with, first present first: the reference reader's
# native arm, else an outside agent's own native arm.
BASELINE_ARMS = ("native", "agent-native")


def baseline_arm(arms: Iterable[str]) -> str | None:
    """The arm a suite that ran `arms` pairs every other arm with: the first of
    `BASELINE_ARMS` among them; None when it ran neither (no paired delta)."""
    ran = set(arms)
    return next((arm for arm in BASELINE_ARMS if arm in ran), None)


def valid_outcomes(units: list[UnitSummary]) -> dict[SampleKey, tuple[str, bool]]:
    """(category, correct) of every resolved sample of one arm in one suite (an
    unresolved one has no right/wrong call to pair)."""
    return {
        (s.repeat, s.trace_id, r.probe_id): (r.category, bool(r.correct))
        for s in units
        for r in s.rows
        if r.resolved
    }


def bootstrap_interval(
    store: Store, arm_vector: list[bool], base_vector: list[bool]
) -> tuple[float, float] | None:
    """`paired_bootstrap` of `arm_vector` against `base_vector` (same length; the interval
    of arm minus base, in percentage points), cached in the store under the digest of the
    pairs; None without pairs."""
    key = KeySpec(
        kind="paired-bootstrap",
        salt=BOOTSTRAP_SALT,
        code=code_digest(["continuity.report.stats", "continuity.traces.prng"]),
        # The pairs as two byte strings of 0/1 (equal lengths): a cheap, unambiguous
        # pre-image for a thousand booleans.
        params={"pairs": digest_bytes(bytes(arm_vector) + b"|" + bytes(base_vector))},
    ).key()
    cached = store.load_output(key)
    if cached is not None:
        interval = msgspec.json.decode(cached)
        return (interval[0], interval[1]) if interval else None
    interval = paired_bootstrap(arm_vector, base_vector)
    store.record_action(
        key, kind="paired-bootstrap", output=store.put_blob(msgspec.json.encode(interval))
    )
    return interval


def _delta(pairs: list[tuple[bool, bool]]) -> float | None:
    if not pairs:
        return None
    return 100 * (sum(a for a, _ in pairs) - sum(n for _, n in pairs)) / len(pairs)


def _compare(
    store: Store,
    arm: dict[SampleKey, tuple[str, bool]],
    native: dict[SampleKey, tuple[str, bool]],
    categories: list[str],
) -> Paired:
    keys = sorted(arm.keys() & native.keys())
    pairs = [(arm[k][1], native[k][1]) for k in keys]
    by_category: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for k in keys:
        by_category[arm[k][0]].append((arm[k][1], native[k][1]))
    b = sum(1 for a, n in pairs if a and not n)
    c = sum(1 for a, n in pairs if n and not a)
    interval = bootstrap_interval(store, [a for a, _ in pairs], [n for _, n in pairs])
    return Paired(
        pairs=len(pairs),
        both_correct=sum(1 for a, n in pairs if a and n),
        arm_only=b,
        native_only=c,
        both_wrong=sum(1 for a, n in pairs if not a and not n),
        mcnemar_p=mcnemar_exact(b, c),
        delta_pp=_delta(pairs),
        ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None,
        by_category={
            category: CategoryDelta(
                pairs=len(by_category[category]), delta_pp=_delta(by_category[category])
            )
            for category in categories
        },
    )


def _native_deltas(
    native: dict[SampleKey, tuple[str, bool]], categories: list[str]
) -> tuple[CategoryDelta, dict[str, CategoryDelta]]:
    """Native against itself: 0.0 over its valid samples (None where it has none)."""
    by_category = {}
    for category in categories:
        n = sum(1 for cat, _ in native.values() if cat == category)
        by_category[category] = CategoryDelta(pairs=n, delta_pp=0.0 if n else None)
    return CategoryDelta(pairs=len(native), delta_pp=0.0 if native else None), by_category


def _with_deltas(
    cells: dict[str, AccuracyCell],
    overall: CategoryDelta | None,
    by_category: dict[str, CategoryDelta],
) -> dict[str, AccuracyCell]:
    """`cells` with the paired delta and its pair count of each (None and 0 without a
    comparison)."""
    out = {}
    for name, cell in cells.items():
        part = overall if name == "overall" else by_category.get(name)
        out[name] = msgspec.structs.replace(
            cell,
            delta_pp=part.delta_pp if part else None,
            delta_n=part.pairs if part else 0,
        )
    return out


def paired_with_native(
    store: Store,
    by_arm: dict[str, list[UnitSummary]],
    categories: list[str],
    accuracy: dict[str, dict[str, AccuracyCell]],
) -> tuple[dict[str, Paired], dict[str, dict[str, AccuracyCell]]]:
    """The paired comparison of every arm of one suite with that suite's baseline arm
    (`baseline_arm`: native, or for a run of an outside agent that agent's native arm,
    ``agent-native``; empty without either), and the suite's accuracy cells with the
    paired delta and its pair count in each (``delta_pp`` and ``delta_n``; the baseline
    against itself is 0.0 over its valid samples; without a baseline in the suite both
    are None and 0)."""
    base = baseline_arm(by_arm)
    native = valid_outcomes(by_arm[base]) if base is not None else None
    paired: dict[str, Paired] = {}
    with_deltas: dict[str, dict[str, AccuracyCell]] = {}
    for arm, cells in accuracy.items():
        if native is None:
            with_deltas[arm] = _with_deltas(cells, None, {})
        elif arm == base:
            with_deltas[arm] = _with_deltas(cells, *_native_deltas(native, categories))
        else:
            comparison = paired[arm] = _compare(
                store, valid_outcomes(by_arm[arm]), native, categories
            )
            overall = CategoryDelta(pairs=comparison.pairs, delta_pp=comparison.delta_pp)
            with_deltas[arm] = _with_deltas(cells, overall, comparison.by_category)
    return paired, with_deltas
