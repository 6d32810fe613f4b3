"""The report's statistics against values worked out by hand."""

from __future__ import annotations

import math

from continuity.report.stats import mcnemar_exact, mean, paired_bootstrap, sample_sd


def test_mean_and_sample_sd() -> None:
    assert mean([]) is None and mean([0.5, 0.75]) == 0.625
    assert sample_sd([0.5]) is None
    assert math.isclose(sample_sd([0.5, 0.75]) or 0, math.sqrt(0.03125))


def test_exact_mcnemar() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 5) == 2 / 32
    assert math.isclose(mcnemar_exact(10, 2), 2 * (1 + 12 + 66) / 4096)
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(2, 10) == mcnemar_exact(10, 2)


def test_bootstrap_is_deterministic_and_brackets_the_delta() -> None:
    arm = [True] * 30 + [False] * 10
    base = [True] * 20 + [False] * 20
    first = paired_bootstrap(arm, base)
    assert first == paired_bootstrap(arm, base)
    assert first is not None and first[0] <= 25.0 <= first[1]
    assert paired_bootstrap([], []) is None
    assert paired_bootstrap([True, True], [True, True]) == (0.0, 0.0)


def test_bootstrap_matches_naive_resampling() -> None:
    import random

    arm = [True] * 45 + [False] * 25 + [True] * 10 + [False] * 20
    base = [True] * 45 + [True] * 25 + [False] * 10 + [False] * 20
    interval = paired_bootstrap(arm, base, resamples=4000)
    assert interval is not None
    rnd = random.Random(7)  # the naive method, as a reference only
    naive = sorted(
        100
        * sum(int(arm[i]) - int(base[i]) for i in (rnd.randrange(100) for _ in range(100)))
        / 100
        for _ in range(4000)
    )
    assert abs(interval[0] - naive[100]) <= 2.0 and abs(interval[1] - naive[3899]) <= 2.0
    assert interval[0] < -15.0 < interval[1]  # the observed delta
