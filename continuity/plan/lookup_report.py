"""The lookup estimate's edges: its inputs read from files, its text, its JSON file.

`lookup_estimate` reads what `continuity.plan.lookup_estimate.estimate_lookup` prices:
the sizing policy (path and sha256, default the frozen one), the pricing catalog, the
workload's traces (generated or read from ``fixtures/``, filtered by trace id) and the
frozen souls and pack guidance the allowances are measured from. It reads no
credential and opens no connection. `registered_workload` turns a compare
registration's workload and roles (already verified by the caller) into the estimate's
workload; `format_lookup_estimate` is the report; `write_lookup_estimate` writes
``<out>/estimates/lookup-<blake3 prefix>.json`` (schema
`continuity.plan.lookup_estimate.ESTIMATE_SCHEMA`).

A holdout source is estimated from its fixed-budget sizing by
`continuity.runner.fixed_budget.estimate` (beside the sizing it reads); the holdout
section of the text is rendered here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Protocol

import msgspec
from msgspec import UNSET

from continuity.digest import digest_bytes
from continuity.errors import LookupError_, SoulError, UsageError
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
from continuity.lookup.policy import LookupPolicy, default_policy_path, load_policy, policy_sha256
from continuity.lookup.reader import binding_models
from continuity.lookup.soul import known_soul_name, read_known_soul
from continuity.memory.pack import PACK_RETRIEVAL_GUIDANCE
from continuity.outputs import write_output
from continuity.plan.lookup_estimate import (
    CACHE_PERCENTS,
    HIGH_END_MODEL,
    HoldoutEstimate,
    LevelPrice,
    LookupEstimate,
    Profile,
    configured_deadlines,
    estimate_lookup,
)
from continuity.plan.lookup_slots import (
    Allowances,
    EstimateRole,
    EstimateSource,
    LookupWorkload,
    plan_slots,
)
from continuity.plan.pilot_estimate import pilot_lines
from continuity.plan.plan import build_plan
from continuity.plan.pricing import describe_source, load_catalog, model_price, price_source
from continuity.plan.workload import load_plan_traces
from continuity.tables import text_table
from continuity.traces.schema import Trace

__all__ = [
    "RegisteredRole",
    "RegisteredWorkload",
    "format_lookup_estimate",
    "guidance_allowances",
    "lookup_estimate",
    "registered_policy",
    "registered_workload",
    "workload_traces",
    "write_lookup_estimate",
]


class RegisteredWorkload(Protocol):
    """The workload a compare registration binds (`continuity.roles.register.Workload`)."""

    @property
    def suites(self) -> Sequence[str]: ...
    @property
    def traces(self) -> Sequence[str]: ...
    @property
    def probe_limit(self) -> int | None: ...
    @property
    def repeats(self) -> int: ...
    @property
    def reader_binding(self) -> str: ...


class RegisteredRole(Protocol):
    """A registered role (`continuity.roles.table.Role`)."""

    @property
    def name(self) -> str: ...
    @property
    def arm(self) -> str: ...
    @property
    def code(self) -> str: ...
    @property
    def soul_file(self) -> str: ...


def registered_workload(
    work: RegisteredWorkload,
    roles: Sequence[RegisteredRole],
    source: EstimateSource,
    *,
    binding: str | None = None,
) -> LookupWorkload:
    """The estimate's workload: `work`'s corpus and every role, read as registered
    (`binding` replaces the reader binding of a workload-only estimate)."""
    return LookupWorkload(
        suites=list(work.suites),
        traces=list(work.traces),
        probe_limit=work.probe_limit,
        repeats=work.repeats,
        reader_binding=binding or work.reader_binding,
        roles=[
            EstimateRole(name=r.name, arm=r.arm, code=r.code, soul_file=r.soul_file) for r in roles
        ],
        source=source,
    )


def registered_policy(checkout: str, budget: Mapping[str, str]) -> tuple[Path, str]:
    """The policy file a registration bound, in its registered R0 `checkout` (R0 and
    Rpack share it: it is no guidance path), and the sha256 it must have.

    Raises:
        LookupError_: ``lookup_policy_invalid`` when the registration binds no single
            policy file at a relative path inside the checkout.
    """
    where = "registration:$.digests.budget"
    if len(budget) != 1:
        raise LookupError_(
            f"the registration binds {len(budget)} policy files, not one", location=where
        )
    ((path, sha256),) = budget.items()
    relative = PurePosixPath(path)
    if relative.is_absolute() or ".." in relative.parts:
        raise LookupError_(f"{path[:80]!r} is not inside the checkout", location=where)
    return Path(checkout) / relative, sha256


def workload_traces(work: LookupWorkload) -> dict[str, list[Trace]]:
    """The workload's traces by suite, only the named ones when it names any.

    Raises:
        UsageError: ``suite_unknown``; ``trace_unknown`` (at ``--trace``) for a named
            trace that is in none of the suites.
    """
    chosen = set(work.traces)
    found: dict[str, list[Trace]] = {}
    for suite in work.suites:
        traces = load_plan_traces(build_plan(suite))
        found[suite] = [t for t in traces if not chosen or t.trace_id in chosen]
    missing = chosen - {t.trace_id for traces in found.values() for t in traces}
    if missing:
        raise UsageError(
            f"not in the suites {', '.join(work.suites)}: {', '.join(sorted(missing))}",
            code="trace_unknown",
            location="--trace",
        )
    return found


def guidance_allowances(roles: Sequence[EstimateRole], policy: LookupPolicy) -> Allowances:
    """Each role soul's extra bytes over the soul the policy binds (normalised cores,
    the text appended to the system prompt), and the pack's retrieval guidance with the
    line break that joins it into the pack.

    Raises:
        SoulError: ``lookup_soul_mismatch`` when the policy binds no known soul;
            ``lookup_soul_missing`` / ``lookup_soul_mismatch`` from `read_known_soul`.
    """
    base_name = known_soul_name(policy.soul_sha256, policy.soul_core_sha256)
    if base_name is None:
        raise SoulError(
            "the sizing policy binds no known soul, so no allowance can be measured",
            code="lookup_soul_mismatch",
            location="policy.soul_sha256",
        )
    base = len(read_known_soul(base_name).core.encode("utf-8"))
    extra = {
        name: max(0, len(read_known_soul(name).core.encode("utf-8")) - base)
        for name in sorted({role.soul_file for role in roles})
    }
    return Allowances(
        soul_bytes=extra, guidance_bytes=len(PACK_RETRIEVAL_GUIDANCE.encode("utf-8")) + 1
    )


def lookup_estimate(
    work: LookupWorkload,
    *,
    pricing: Path | None = None,
    policy_path: Path | None = None,
    policy_hash: str | None = None,
    screening: str | None = None,
    high_end: str | None = None,
    watchdog_seconds: float,
) -> LookupEstimate:
    """Read the inputs and estimate (no credential, no network).

    Raises:
        LookupError_: the sizing policy's codes (`load_policy`).
        PricingError: ``pricing_invalid``.
        UsageError: ``suite_unknown``, ``trace_unknown``, ``lookup_reader_unknown``.
        SoulError: as `guidance_allowances`.
    """
    policy = load_policy(policy_path, policy_hash)
    source = policy_path or default_policy_path()
    raw = policy_sha256(read_user_bytes(source, limit=DOCUMENT_MAX_BYTES, what="the policy"))
    catalog = load_catalog(pricing)
    reader, other = binding_models(work.reader_binding)
    allowances = guidance_allowances(work.roles, policy)
    slots = plan_slots(work, workload_traces(work), policy, allowances)
    profiles: list[tuple[Profile, str]] = [
        ("main", reader),
        ("screening", screening or other),
        ("high-end", high_end or HIGH_END_MODEL),
    ]
    return estimate_lookup(
        work,
        slots,
        policy,
        policy_sha256=raw,
        allowances=allowances,
        models=[(p, m, model_price(catalog, m)) for p, m in profiles],
        deadlines=configured_deadlines(watchdog_seconds),
        prices=price_source(pricing),
    )


def write_lookup_estimate(result: LookupEstimate, out: Path) -> Path:
    """``<out>/estimates/lookup-<blake3 prefix of its bytes>.json``, written atomically."""
    data = msgspec.json.format(msgspec.json.encode(result)) + b"\n"
    path = out / "estimates" / f"lookup-{digest_bytes(data)[:16]}.json"
    write_output(path, data)
    return path


def _usd(cell: LevelPrice) -> str:
    if cell.usd is not None:
        return f"{cell.usd:,.2f}"
    return f"unknown ({cell.unpriced_calls:,} unpriced; known {cell.known_subtotal:,.2f})"


def _header(result: LookupEstimate) -> list[str]:
    work = result.workload
    source = work.source
    where = (
        f"registration sha256 {source.sha256}"
        if source.kind == "registration"
        else "workload-only (no checkout, build or registration)"
    )
    if result.holdout is not None:
        where = (
            f"holdout source (manifest {result.holdout.holdout.manifest_sha256[:16]}) "
            f"from its fixed-budget sizing, {where}"
        )
    return [
        f"estimate: lookup-allowed-v1, {where}",
        f"  suites {','.join(work.suites)}; traces {','.join(work.traces) or 'all'}; "
        f"probe limit {work.probe_limit or 'none'}; repeats {work.repeats}; reader binding "
        f"{work.reader_binding}; roles {','.join(r.name for r in work.roles)}",
        "  offline run: nothing to price (lookup-allowed-v1 never calls a model offline); "
        "below, the same slots priced for a real reader under labelled assumptions "
        "(heuristics: not predictions, invoices or authorization)",
        f"  policy sha256 {result.policy_sha256[:16]}: {result.call_budget} calls, "
        f"{result.byte_budget:,} bytes a slot; {result.slots:,} slots",
    ]


def _roles(result: LookupEstimate) -> list[str]:
    rows = [
        {
            "role": r.role,
            "arm": r.arm,
            "planned": f"{r.planned:,}",
            "priced": f"{r.priced:,}",
            "skipped": ", ".join(f"{k} {v}" for k, v in r.skipped.items()) or "0",
            "unknown": f"{r.unknown:,}",
            "first request": f"{r.first_request_min:,}-{r.first_request_max:,}",
            "S1": f"{r.soul_allowance:,}",
            "Rpack": f"{r.guidance_allowance:,}",
        }
        for r in result.roles
    ]
    columns = list(rows[0]) if rows else []
    return [
        "slots by role (first request in tokens, floors and allowances applied; unknown "
        "feasibility is priced, and blocks a run):",
        *("  " + line for line in text_table(rows, columns).splitlines()),
    ]


def _levels(result: LookupEstimate) -> list[str]:
    rows = [
        {
            "lookups": str(level.lookup_calls),
            "returned": f"{level.returned} ({level.returned_bytes:,} B)",
            "rounds": str(level.rounds_per_slot),
            "calls": f"{level.calls:,}",
            "input tokens": f"{level.input_tokens:,}",
            "peak": f"{level.peak_input_tokens:,}",
            "call inputs": ", ".join(f"{k}: {v:,}" for k, v in level.histogram.items() if v),
        }
        for level in result.levels
    ]
    columns = list(rows[0]) if rows else []
    return [
        "call inputs per sensitivity row (assumptions; the same for every model):",
        *("  " + line for line in text_table(rows, columns).splitlines()),
    ]


def _profiles(result: LookupEstimate) -> list[str]:
    lines = ["profiles (USD at list price, each model alone, never pooled):"]
    for profile in result.profiles:
        cells = {(c.lookup_calls, c.returned, c.cache_percent): c for c in profile.prices}
        rows = []
        for level in result.levels:
            row = {"lookups": str(level.lookup_calls), "returned": level.returned}
            first = cells[(level.lookup_calls, level.returned, CACHE_PERCENTS[0])]
            for percent in CACHE_PERCENTS:
                row[f"cache {percent}%"] = _usd(
                    cells[(level.lookup_calls, level.returned, percent)]
                )
            row["calls above a tier"] = f"{first.tiered_calls:,}"
            row["unpriced calls"] = f"{first.unpriced_calls:,}"
            rows.append(row)
        lines.append(f"  {profile.profile}: {profile.model}")
        lines += ["    " + line for line in text_table(rows, list(rows[0])).splitlines()]
    return lines


def _readiness(result: LookupEstimate) -> list[str]:
    ready = result.readiness
    env = ready.envelope
    rows = [
        {"component": name, "status": c.status, "detail": c.detail}
        for name, c in (
            ("output cap", ready.output_cap),
            ("input envelope", ready.input_envelope),
            ("pricing", ready.pricing),
        )
    ]

    def limit(value: int | None) -> str:
        return f"{value:,}" if value else "unknown"

    return [
        f"readiness of the main reader {ready.reader}: {'ready' if ready.ready else 'not ready'} "
        f"({ready.note})",
        *("  " + line for line in text_table(rows, ["component", "status", "detail"]).splitlines()),
        f"  envelope: {env.turns_per_slot} turns a slot, {env.output_tokens_per_turn} output "
        f"tokens a turn, peak request {env.peak_input_tokens:,} tokens, up to "
        f"{env.input_tokens_per_slot:,} input tokens a slot; context window "
        f"{limit(env.context_window)}, output limit {limit(env.output_limit)}",
    ]


def _money(value: Decimal | None, places: int = 2, missing: str = "blocked") -> str:
    """An amount for reading (the JSON keeps it exact); `missing` when there is none."""
    return missing if value is None else f"{value:,.{places}f}"


def _holdout(found: HoldoutEstimate) -> list[str]:
    """The holdout section: binding, sizing, output limit, per-role scenarios and C."""
    bound, terms, priced = found.holdout, found.budget, found.pricing
    limit = (
        f"{found.output_limit:,} ({found.output_limit_source}: {found.output_limit_note})"
        if found.output_limit
        else found.output_limit_note
    )
    # With pricing approved, a role without an eligible slot has no per-trial amount.
    none = "blocked" if priced.status == "blocked" else "-"
    rows = [
        {
            "role": r.role,
            "planned": f"{r.planned:,}",
            "eligible": f"{r.eligible:,}",
            "infeasible": f"{r.inventory_infeasible:,}",
            "unknown": f"{r.unknown:,}",
            "expected": _money(r.expected_usd),
            "expected/trial": _money(r.expected_per_trial_usd, 6, none),
            "reservation": _money(r.reservation_usd),
            "reservation/trial": _money(r.reservation_per_trial_usd, 6, none),
            "lookup overhead": _money(r.lookup_overhead_usd),
            "tier crossings": f"{r.expected_tier_crossings:,} / {r.reservation_tier_crossings:,}",
        }
        for r in priced.roles
    ]
    status = (
        f"priced at {priced.model}"
        if priced.status == "priced"
        else f"blocked ({priced.code}): {'; '.join(priced.reasons)}"
    )
    return [
        f"holdout: {bound.algorithm} seed {bound.seed}, {bound.per_group} per group: "
        f"{', '.join(bound.selected)} (selection {bound.selection_digest[:16]}, freeze "
        f"{bound.freeze_digest[:16]})",
        f"  fixed-budget sizing sha256 {found.budget_sha256}: {terms.calls} calls, "
        f"{terms.bytes:,} bytes, {terms.rounds} rounds ({terms.policy_file}); measured at "
        f"{found.measured_commit[:12]}; slots by class: "
        + ", ".join(f"{k} {v:,}" for k, v in found.classes.items()),
        "  slots sized on their observed first request (each role measured with its own soul "
        "and the pack's retrieval guidance: no S1 or Rpack allowance is added)",
        f"  per-call output limit: {limit}",
        f"  expected and reservation scenarios (USD at list price, exact): {status}",
        *("    " + line for line in text_table(rows, list(rows[0]) if rows else []).splitlines()),
        f"  total: expected {_money(priced.expected_usd)}, reservation "
        f"{_money(priced.reservation_usd)}; proposed cap C = ceil-to-cents(1.25 x eligible "
        f"reservations) = {_money(priced.cap_usd)}; C / expected "
        f"{_money(priced.cap_over_expected, 4)}",
        f"  {priced.note}",
    ]


def format_lookup_estimate(result: LookupEstimate) -> str:
    """The estimate as the user reads it."""
    d = result.deadlines
    return "\n".join(
        [
            *_header(result),
            *_roles(result),
            *_levels(result),
            *_profiles(result),
            *(_holdout(result.holdout) if result.holdout is not None else []),
            *_readiness(result),
            *(pilot_lines(result.pilot) if result.pilot is not UNSET else []),
            f"configured deadlines (configuration, not measured latency): {d.probe_seconds:g} s "
            f"probe, {d.cleanup_seconds:g} s cleanup, {d.turn_seconds:g} s turn, "
            f"{d.watchdog_seconds:g} s watchdog",
            f"  {describe_source(result.prices)}",
            "assumptions: " + "; ".join(f"{k}: {v}" for k, v in result.assumptions.items()),
        ]
    )
