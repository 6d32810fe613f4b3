"""A pytest plugin for `bench_suite.py --list-slow`: appends every test's setup and call
time to the file named by $CONTINUITY_DURATIONS (tab-separated: seconds, phase,
outcome, node id). Loaded with ``-p benchmarks._durations``."""

from __future__ import annotations

import os

import pytest

__all__ = ["pytest_runtest_logreport"]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    target = os.environ.get("CONTINUITY_DURATIONS")
    if target and report.when in ("setup", "call"):
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(f"{report.duration:.3f}\t{report.when}\t{report.outcome}\t")
            handle.write(f"{report.nodeid}\n")
