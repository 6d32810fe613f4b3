"""The statistics the report uses, written out so they can be checked: mean and sample
standard deviation, an exact two-sided McNemar test, and a paired bootstrap interval
driven by the project's own PRNG (so reports are reproducible byte for byte)."""

from __future__ import annotations

import bisect
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


def _binomial_cdf(trials: int, p: float) -> list[float]:
    """Cumulative probabilities of Binomial(trials, p), computed in log space."""
    if trials == 0 or p <= 0.0:
        return [1.0] * (trials + 1)
    if p >= 1.0:
        return [0.0] * trials + [1.0]
    log_p, log_q = math.log(p), math.log1p(-p)
    total = 0.0
    cdf = []
    for k in range(trials + 1):
        total += math.exp(
            math.lgamma(trials + 1)
            - math.lgamma(k + 1)
            - math.lgamma(trials - k + 1)
            + k * log_p
            + (trials - k) * log_q
        )
        cdf.append(total)
    return [value / total for value in cdf]


def paired_bootstrap(
    arm: Sequence[bool],
    baseline: Sequence[bool],
    *,
    resamples: int = 2000,
    seed: int = 20_261_129,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of the accuracy difference (percentage points) over pairs
    resampled with replacement; None without pairs.

    Each pair contributes +1 (only the arm correct), -1 (only the baseline) or 0, so a
    resample of n pairs is fully described by how many +1 and -1 it drew. Those counts
    are drawn exactly, as a multinomial split into two conditional binomials (inverse
    CDF on the project's PRNG), instead of drawing n pairs one by one: the same
    distribution, at two draws per resample.
    """
    if not arm or len(arm) != len(baseline):
        return None
    n = len(arm)
    plus = sum(1 for a, b in zip(arm, baseline, strict=True) if a and not b)
    minus = sum(1 for a, b in zip(arm, baseline, strict=True) if b and not a)
    rng = Rng(seed)
    first = _binomial_cdf(n, plus / n)
    second: dict[int, list[float]] = {}
    samples = []
    for _ in range(resamples):
        k_plus = min(n, bisect.bisect_left(first, rng.next_u64() / 2**64))
        rest = n - k_plus
        if rest not in second:
            second[rest] = _binomial_cdf(rest, minus / (n - plus) if n > plus else 0.0)
        k_minus = min(rest, bisect.bisect_left(second[rest], rng.next_u64() / 2**64))
        samples.append(100.0 * (k_plus - k_minus) / n)
    samples.sort()
    low = samples[int((1 - level) / 2 * resamples)]
    high = samples[min(resamples - 1, int((1 + level) / 2 * resamples) - 1)]
    return low, high
