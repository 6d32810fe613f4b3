"""How a run's units execute: one value in place of four flags.

`Execution` says whether units call a real endpoint (`real`), run in lookup mode
(`lookup`, which is what makes the probe mode lookup-allowed-v1), how the ledger arm
keeps its ledger (`ledger`) and, offline, which plan judge the scripted judge plays
(`judge`). `OFFLINE` is the default: scripted models, recall-only, the ledger arm's
offline binding, no judge. The command builds it once from the plan; `build_units` and
`run_unit` read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from continuity.arms import ProbeMode
from continuity.errors import RealModeError
from continuity.runner.ledger_run import LedgerRun
from continuity.runner.lookup_run import LookupRun
from continuity.runner.units.record import RealRun

__all__ = ["OFFLINE", "Execution"]


@dataclass(frozen=True, kw_only=True)
class Execution:
    """How units execute. `real`: a confirmed real invocation's endpoints and ledger
    (None: offline). `lookup`: lookup mode's sizing and soul. `ledger`: the ledger
    arm's binding (None: the offline default). `judge`: offline only, the plan's judge
    model, played by the scripted judge (a real run's judge is `real.judge`).

    Raises:
        RealModeError: ``lookup_real_refused`` for lookup mode with a real endpoint
            (lookup-allowed-v1 is offline preparation only).
    """

    real: RealRun | None = None
    lookup: LookupRun | None = None
    ledger: LedgerRun | None = None
    judge: str | None = None

    def __post_init__(self) -> None:
        if self.real is not None and self.lookup is not None:
            raise RealModeError(
                "lookup-allowed-v1 is offline preparation only; it never calls a real model",
                code="lookup_real_refused",
                location="--probe-mode",
            )

    @property
    def mode(self) -> Literal["offline", "real"]:
        return "offline" if self.real is None else "real"

    @property
    def probe_mode(self) -> ProbeMode:
        return "recall-only" if self.lookup is None else "lookup-allowed-v1"


OFFLINE = Execution()
