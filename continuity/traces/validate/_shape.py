"""Family shape: the counts, sizes and probe mix each trace family needs.

`check_shape` measures a trace against its family's `FamilyShape` (turns, sessions,
days, records, result sizes, oversized results, tool kinds, steers, probes, categories,
the token estimate, the cold-rebuild projection, the sent/drafted pair and an early
owner constraint). Codes: ``shape_out_of_range``, ``steer_missing``, ``category_missing``.
"""

from __future__ import annotations

from continuity.traces.bounds import (
    PROJECTION_MAX_BYTES,
    PROJECTION_MAX_RECORDS,
    RESULT_HEAD_BYTES,
    estimate_tokens,
    retained_bytes,
)
from continuity.traces.schema import (
    TOOL_KINDS,
    ActiveConstraintExpectation,
    CommitmentStatusExpectation,
    OwnerMessage,
    Steer,
)
from continuity.traces.validate._context import Context

__all__ = ["check_shape"]


def _range(ctx: Context, value: int, bounds: tuple[int, int] | None, what: str, where: str) -> None:
    if bounds and not bounds[0] <= value <= bounds[1]:
        ctx.add(
            "shape_out_of_range",
            where,
            f"{what} is {value:,}; the {ctx.trace.family} family needs {bounds[0]:,}-{bounds[1]:,}",
        )


def check_shape(ctx: Context) -> None:
    """Every rule of the trace family's shape, in a fixed order."""
    _counts(ctx)
    _results(ctx)
    _steers(ctx)
    _probe_mix(ctx)
    _fit(ctx)
    _sent_and_drafted(ctx)
    _early_constraint(ctx)


def _counts(ctx: Context) -> None:
    """Owner turns, sessions, tool records and distinct days."""
    shape = ctx.shape
    owner = sum(isinstance(located.turn, OwnerMessage) for located in ctx.turns.values())
    _range(ctx, owner, shape.owner_turns, "owner turns", "$.sessions")
    _range(ctx, len(ctx.trace.sessions), shape.sessions, "sessions", "$.sessions")
    _range(ctx, len(ctx.records), shape.tool_records, "tool records", "$.sessions")
    if shape.distinct_days is not None:
        days = len({s.date for s in ctx.trace.sessions})
        if days != shape.distinct_days:
            ctx.add(
                "shape_out_of_range",
                "$.sessions",
                f"the conversation spans {days} days; the family needs {shape.distinct_days}",
            )


def _results(ctx: Context) -> None:
    """Each result's size, the results over 16 KiB, and every tool kind present."""
    shape = ctx.shape
    if shape.result_bytes:
        low, high = shape.result_bytes
        for record, path in zip(ctx.records, ctx.record_paths, strict=True):
            size = len(record.output.encode("utf-8"))
            if not low <= size <= high:
                ctx.add(
                    "shape_out_of_range",
                    f"{path}.output",
                    f"result is {size:,} bytes; needs {low:,}-{high:,}",
                )
    if shape.oversized_results:
        over = sum(len(r.output.encode("utf-8")) > RESULT_HEAD_BYTES for r in ctx.records)
        _range(ctx, over, shape.oversized_results, "results over 16 KiB", "$.sessions")
    if shape.all_tool_kinds:
        missing = sorted(set(TOOL_KINDS) - {r.tool_kind for r in ctx.records})
        if missing:
            ctx.add("shape_out_of_range", "$.sessions", f"no tool results of kind {missing}")


def _steers(ctx: Context) -> None:
    shape = ctx.shape
    steers = [located.turn for located in ctx.turns.values() if isinstance(located.turn, Steer)]
    if shape.steers is not None:
        if len(steers) < shape.steers:
            ctx.add(
                "steer_missing",
                "$.sessions",
                f"{len(steers)} mid-turn steers; the family needs {shape.steers}",
            )
        elif len(steers) > shape.steers:
            ctx.add(
                "shape_out_of_range",
                "$.sessions",
                f"{len(steers)} mid-turn steers; the family needs {shape.steers}",
            )


def _probe_mix(ctx: Context) -> None:
    """The number of probes, and the categories the family needs or forbids."""
    shape = ctx.shape
    _range(ctx, len(ctx.trace.probes), shape.probes, "probes", "$.probes")
    present = {p.category for p in ctx.trace.probes}
    for category in shape.categories:
        if category not in present:
            ctx.add("category_missing", "$.probes", f"no {category} probe")
    for category in shape.forbidden_categories:
        if category in present:
            ctx.add(
                "shape_out_of_range",
                "$.probes",
                f"{category} probes belong to other families, not {ctx.trace.family}",
            )


def _fit(ctx: Context) -> None:
    """The estimated context at the probe, and the cold-rebuild projection fit."""
    shape = ctx.shape
    if shape.estimated_tokens:
        _range(
            ctx,
            estimate_tokens(ctx.trace),
            shape.estimated_tokens,
            "the estimated context at the probe (tokens)",
            "$.sessions",
        )
    if shape.fits_projection:
        total = sum(retained_bytes(r) for r in ctx.records)
        if len(ctx.records) > PROJECTION_MAX_RECORDS or total > PROJECTION_MAX_BYTES:
            ctx.add(
                "shape_out_of_range",
                "$.sessions",
                f"{len(ctx.records)} results / {total:,} retained bytes do not fit the "
                f"cold-rebuild projection ({PROJECTION_MAX_RECORDS} / "
                f"{PROJECTION_MAX_BYTES:,})",
            )


def _sent_and_drafted(ctx: Context) -> None:
    if ctx.shape.sent_and_drafted:
        statuses = {
            p.expectation.status
            for p in ctx.trace.probes
            if isinstance(p.expectation, CommitmentStatusExpectation)
        }
        if not {"SENT", "DRAFTED"} <= statuses:
            ctx.add(
                "category_missing",
                "$.probes",
                "needs a SENT and a DRAFTED commitment_status probe (sent versus drafted)",
            )


def _early_constraint(ctx: Context) -> None:
    if ctx.shape.early_constraint:
        first_session_owner = {
            tid
            for tid, loc in ctx.turns.items()
            if loc.session == 0 and isinstance(loc.turn, OwnerMessage)
        }
        early = any(
            isinstance(p.expectation, ActiveConstraintExpectation)
            and any(
                tid in first_session_owner
                for fact in (*p.expectation.required, *p.expectation.forbidden)
                for tid in fact.evidence
            )
            for p in ctx.trace.probes
        )
        if not early:
            ctx.add(
                "category_missing",
                "$.probes",
                "needs an active_constraint probe on an owner constraint from the first session",
            )
