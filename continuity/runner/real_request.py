"""What one real invocation is asked, as one typed value.

A real run takes its measurement from the confirmed `Plan`; everything else it needs
(the confirmation, where credentials and output are, the part of the plan to run, how
many threads and calls at once, the spend cap, the timeouts) is a `RealRequest`. The
command (`continuity.commands.units`, `continuity.commands.agent_units`) builds one from
its typed request (`continuity.commands.units_request.real_request`), once; `run_real`,
`run_real_agent` and `open_real_run` read its fields and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from continuity.runner.cluster import Cluster

__all__ = [
    "DEFAULT_MAX_OBSERVED_INPUT_TOKENS",
    "DEFAULT_REQUEST_TIMEOUT",
    "RealRequest",
]

# limits.max_observed_input_tokens_per_invocation, unless --max-input-tokens says otherwise.
DEFAULT_MAX_OBSERVED_INPUT_TOKENS = 50_000_000
# --request-timeout: the longest wait for a server's next bytes (first ones included),
# long enough for a slow local prefill: SmolLM2-135M read 16k tokens in 294 s on two
# loaded cores; a larger model on the same machine is slower still.
DEFAULT_REQUEST_TIMEOUT = 1800.0


@dataclass(frozen=True, kw_only=True)
class RealRequest:
    """One real invocation's settings (the plan is separate and confirmed).

    `confirm`: the plan digest the user confirmed. `traces` and `only_repeats` select
    part of the plan (they never change a unit's key). `jobs`: runner threads (None:
    `continuity.runner.parallel.real_jobs`). `concurrency`: calls at once per model.
    `cost_cap` (USD text, whole cents) caps the run's spend; `raise_cap` may change a
    stored cap. `checkout` and `environ` are what the guards inspect (None: this
    checkout, this process's environment). `capture`: where the ledger's upkeep output
    is kept. `upkeep_timeout`: how long a ledger stage child may take. `cluster`: run
    the units as Dask tasks there (None: this process's threads); with its shared
    store, the run's cost-cap account and ledger live in that store.
    """

    confirm: str | None
    credentials: str | None = None
    output: str | None = None
    traces: str | None = None
    only_repeats: Sequence[int] | None = None
    jobs: int | None = None
    concurrency: int = 4
    max_observed_input_tokens: int = DEFAULT_MAX_OBSERVED_INPUT_TOKENS
    explain_cache: bool = False
    checkout: Path | None = None
    environ: Mapping[str, str] | None = None
    capture: str | None = None
    pricing: str | None = None
    upkeep_timeout: float = 900.0
    cost_cap: str | None = None
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    raise_cap: bool = False
    cluster: Cluster | None = None
