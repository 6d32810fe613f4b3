"""`UnitsRequest`: ``doit units``'s options, typed once at the edge, and the
`RealRequest` a real run reads from it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from continuity.errors import UsageError
from continuity.plan.limits import MAX_REPEATS
from continuity.plan.request import PlanRequest
from continuity.runner.real_request import (
    DEFAULT_MAX_OBSERVED_INPUT_TOKENS,
    DEFAULT_REQUEST_TIMEOUT,
    RealRequest,
)
from continuity.traces.keys import parse_numbers

if TYPE_CHECKING:
    from continuity.runner.cluster import Cluster

__all__ = ["UnitsRequest", "cluster_of", "parse_repeats", "real_request"]


class UnitsRequest(PlanRequest, frozen=True, kw_only=True):
    """`doit units`: the plan, what of it to run now, where, and (real mode) how.
    "" and 0 are the option's default (`rules/units.py` declares each one)."""

    real: bool = False
    confirm_plan: str = ""
    repeat: str = ""
    concurrency: int = 4
    max_input_tokens: int = 0
    cost_cap: str = ""
    raise_cap: bool = False
    explain_cache: bool = False
    request_timeout: float = 0.0
    trace: str = ""
    jobs: int = 0
    run: str = "offline"
    executor: str = "local"
    scheduler: str = ""
    workers: int = 0
    shared_store: str = ""
    lookup_role: str = ""
    registration_digest: str = ""
    aggregate_only: bool = False
    capture_upkeep_output: str = ""


def parse_repeats(request: UnitsRequest) -> list[int] | None:
    """``--repeat``: the repeats to run now (None: every repeat of the plan).

    Raises:
        UsageError: ``repeat_unknown``.
    """
    chosen = request.repeat
    if not chosen:
        return None
    refused = UsageError(
        f"cannot read repeats {chosen[:40]!r}; use N, A-B or a comma-separated list "
        f"of repeat numbers 1 to {MAX_REPEATS}",
        code="repeat_unknown",
        location="--repeat",
    )
    try:
        return list(parse_numbers(chosen, MAX_REPEATS))
    except UsageError:
        raise refused from None


def real_request(request: UnitsRequest) -> RealRequest:
    """The settings of a ``doit units --real`` (or ``--agent ... --real``) invocation:
    empty texts and zero numbers mean "the default".

    Raises:
        UsageError: ``repeat_unknown`` (`parse_repeats`).
    """
    return RealRequest(
        confirm=request.confirm_plan or None,
        credentials=request.credentials or None,
        output=request.out or None,
        traces=request.trace or None,
        only_repeats=parse_repeats(request),
        jobs=request.jobs or None,  # None: every checkpoint at once
        concurrency=request.concurrency or 4,
        max_observed_input_tokens=request.max_input_tokens or DEFAULT_MAX_OBSERVED_INPUT_TOKENS,
        explain_cache=request.explain_cache,
        capture=request.capture_upkeep_output or None,
        pricing=request.pricing or None,
        cost_cap=request.cost_cap or None,
        request_timeout=request.request_timeout or DEFAULT_REQUEST_TIMEOUT,
        raise_cap=request.raise_cap,
        cluster=cluster_of(request),
    )


def cluster_of(request: UnitsRequest) -> Cluster | None:
    """Where ``--executor`` runs the units (None: this process's threads).

    Raises:
        UsageError: ``option_invalid`` for another executor, or a cluster option
            without ``--executor dask``.
    """
    from continuity.runner.cluster import Cluster
    from continuity.runner.samples import DEFAULT_JOBS

    if request.executor not in ("local", "dask"):
        raise UsageError(
            f"--executor is local or dask, not {request.executor!r}",
            code="option_invalid",
            location="--executor",
        )
    if request.executor == "local":
        for name in ("scheduler", "workers", "shared_store"):
            if getattr(request, name):
                raise UsageError(
                    f"--{name.replace('_', '-')} needs --executor dask",
                    code="option_invalid",
                    location=f"--{name.replace('_', '-')}",
                )
        return None
    if request.scheduler and request.workers:
        raise UsageError(
            "--workers sizes a LocalCluster; a --scheduler's workers are the ones you started",
            code="option_invalid",
            location="--workers",
        )
    return Cluster(
        scheduler=request.scheduler,
        workers=request.workers or request.jobs or DEFAULT_JOBS,
        shared=request.shared_store,
    )
