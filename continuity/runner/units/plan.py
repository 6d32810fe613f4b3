"""One unit of a run, as the runner plans it: a trace, an arm and a repeat."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from continuity.arms import Arm
from continuity.traces.schema import Trace

if TYPE_CHECKING:
    from continuity.traces.suites import SuiteItem

__all__ = ["UnitPlan"]


class UnitPlan(msgspec.Struct, frozen=True):
    """One unit of a run: a trace of the suite (its suite item and the loaded trace),
    an arm and a repeat."""

    item: SuiteItem
    trace: Trace
    arm: Arm
    repeat: int
