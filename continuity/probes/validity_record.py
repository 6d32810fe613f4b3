"""What the scorer's calibration record holds: each suite's current figure and each
held-out suite's frozen blind first measurement (written by
`continuity.probes.validity`, rendered by `continuity.probes.validity_doc`)."""

from __future__ import annotations

import msgspec

from continuity.probes.calibration import Agreement

__all__ = ["BlindMeasurement", "ScorerRecord", "SuiteRecord"]


class SuiteRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One suite's current figure: the suite (path and digest), its size, the agreement."""

    name: str
    suite: str
    suite_sha256: str
    cases: int
    agreement: Agreement


class ScorerRecord(msgspec.Struct, frozen=True, kw_only=True):
    """`fixtures/calibration/scorer-agreement.json`: the current scorer on every suite."""

    schema: str = "continuity-scorer-agreement-v2"
    suites: tuple[SuiteRecord, ...]

    def suite(self, name: str) -> SuiteRecord:
        for entry in self.suites:
            if entry.name == name:
                return entry
        raise KeyError(name)


class BlindMeasurement(msgspec.Struct, frozen=True, kw_only=True):
    """The held-out suite's first measurement, taken before anyone working on the scorer
    had read its cases. Historical: written once, never by `record`."""

    suite: str
    suite_sha256: str
    cases: int
    scorer_commit: str
    suite_commit: str
    agreement: Agreement
