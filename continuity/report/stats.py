"""The statistics the report uses, written out so they can be checked: mean and sample
standard deviation, an exact two-sided McNemar test, and a paired bootstrap interval
driven by the project's own PRNG (so reports are reproducible byte for byte)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from continuity.traces.prng import Rng

__all__ = ["mcnemar_exact", "mean", "paired_bootstrap", "sample_sd"]


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def sample_sd(values: Sequence[float]) -> float | None:
    """Standard deviation with n - 1 in the denominator; None below two values."""
    if len(values) < 2:
        return None
    centre = sum(values) / len(values)
    return math.sqrt(sum((v - centre) ** 2 for v in values) / (len(values) - 1))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for `b` and `c` discordant pairs (binomial, p=1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2.0 * tail)


def paired_bootstrap(
    arm: Sequence[bool],
    baseline: Sequence[bool],
    *,
    resamples: int = 2000,
    seed: int = 20_261_129,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of the accuracy difference (percentage points) over pairs
    resampled with replacement; None without pairs."""
    if not arm or len(arm) != len(baseline):
        return None
    rng = Rng(seed)
    n = len(arm)
    diffs = [int(a) - int(b) for a, b in zip(arm, baseline, strict=True)]
    samples = []
    for _ in range(resamples):
        total = 0
        for _ in range(n):
            total += diffs[rng.below(n)]
        samples.append(100.0 * total / n)
    samples.sort()
    low = samples[int((1 - level) / 2 * resamples)]
    high = samples[min(resamples - 1, int((1 + level) / 2 * resamples) - 1)]
    return low, high
