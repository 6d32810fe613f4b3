"""`PlanRequest`: the plan options of every task that builds a plan, typed once.

`rules/plan.py` declares them as ``PLAN_PARAMS`` (with their command-line parsers);
`tests/test_requests.py` holds the two lists to the same names and defaults. `plan_from_request`
(`continuity.plan.plan`) reads a request, never doit's options.
"""

from __future__ import annotations

from continuity.requests import SuiteRequest

__all__ = ["HoldoutRequest", "PlanRequest", "PricedRequest"]


class HoldoutRequest(SuiteRequest, frozen=True, kw_only=True):
    """A frozen external holdout's source triple and its preregistered selection
    (``--selection-seed`` -1 and ``--per-group`` 0 mean not given)."""

    manifest: str = ""
    manifest_sha256: str = ""
    statistical_spec: str = ""
    selection_seed: int = -1
    per_group: int = 0


class PlanRequest(HoldoutRequest, frozen=True, kw_only=True):
    """The options a plan binds (its digest covers what they select), and the
    credentials path it never binds. "" or 0 is the option's default."""

    arms: str = "all"
    repeats: int = 1
    probe_limit: int = 0
    models: str = "current"
    reader: str = ""
    effort: str = "low"
    alternate: str = ""
    judge: str = ""
    judge_effort: str = "low"
    provider: str = "scripted"
    base_url: str = ""
    credentials: str = ""
    context_window: int = 0
    max_output_tokens: int = 0
    probe_mode: str = "recall-only"
    policy: str = ""
    policy_sha256: str = ""
    lookup_reader: str = ""
    pricing: str = ""
    extraction_model: str = ""
    require_request_cap: bool = False
    agent: str = ""
    no_sandbox: bool = False
    switch_model: str = ""


class PricedRequest(PlanRequest, frozen=True, kw_only=True):
    """`doit dry_run` and `doit estimate`: a plan and the cost limit it must stay under
    (0: none)."""

    cost_limit: float = 0.0
