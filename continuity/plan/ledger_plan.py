"""What a plan binds of the ledger arm: its extractor, its answering sequence and an
explicit reservation for every extraction.

A plan that selects ``continuity-ledger-cold`` binds a `LedgerPlan`: the extraction
model (the reader unless ``--extraction-model`` names another: never an automatic
cheaper model), the binding sequence of the three preparations (alternate, reader,
alternate: A -> R -> A), one reservation per extraction (a 128k-token bootstrap and two
64k incremental inputs, each with 4,096 output tokens) and the strict request-cap
policy (``--require-request-cap``). All of it enters the plan digest, the dry run's
workload and its estimate. A plan without the arm binds none, and its digest is what it
was before the arm existed.

`check_ledger_plan` runs before anything executes: a plan that names the arm without
this section (an old plan), with a single preparation, or with a reservation under the
confirmed budget is refused before the harness opens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from continuity.arms import LEDGER_ARM
from continuity.errors import LedgerError
from continuity.memory.upkeep_selection import BOOTSTRAP_CAPS, INCREMENTAL_CAPS

__all__ = [
    "LEDGER_PLAN_SCHEMA",
    "RESERVATIONS",
    "SEQUENCE",
    "LedgerPlan",
    "Reservation",
    "check_ledger_plan",
    "ledger_plan",
]

LEDGER_PLAN_SCHEMA = "continuity-ledger-plan-v1"
SEQUENCE = ("alternate", "reader", "alternate")


class Reservation(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: Literal["bootstrap", "incremental"]
    input_tokens: int
    output_tokens: int


RESERVATIONS = (
    Reservation("bootstrap", BOOTSTRAP_CAPS.input_tokens, BOOTSTRAP_CAPS.output_tokens),
    Reservation("incremental", INCREMENTAL_CAPS.input_tokens, INCREMENTAL_CAPS.output_tokens),
    Reservation("incremental", INCREMENTAL_CAPS.input_tokens, INCREMENTAL_CAPS.output_tokens),
)


class LedgerPlan(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    schema: str = LEDGER_PLAN_SCHEMA
    extraction_model: str
    sequence: tuple[str, ...]  # the answering model of each preparation
    roles: tuple[str, ...] = SEQUENCE
    reservations: tuple[Reservation, ...] = RESERVATIONS
    require_request_cap: bool = False


def ledger_plan(
    *, reader: str, alternate: str, extraction_model: str | None, require_request_cap: bool
) -> LedgerPlan:
    models = {"reader": reader, "alternate": alternate}
    return LedgerPlan(
        extraction_model=extraction_model or reader,
        sequence=tuple(models[role] for role in SEQUENCE),
        require_request_cap=require_request_cap,
    )


def check_ledger_plan(
    arms: Sequence[str], ledger: LedgerPlan | None, *, reader: str, alternate: str
) -> None:
    """Refuse, before anything runs, a plan whose ledger section cannot account for the
    ledger arm's extractions.

    Raises:
        LedgerError: ``ledger_plan_invalid`` (the arm without a current ledger section,
            a single-preparation plan, another binding sequence, or a ledger section
            without the arm); ``ledger_plan_under_reserved`` (a reservation below the
            confirmed 128k/64k/64k input and 4,096 output tokens).
    """
    if LEDGER_ARM not in arms:
        if ledger is not None:
            raise LedgerError(
                "the plan binds a ledger section but not the ledger arm",
                code="ledger_plan_invalid",
                location="plan.ledger",
            )
        return
    if ledger is None or ledger.schema != LEDGER_PLAN_SCHEMA:
        raise LedgerError(
            "the plan names continuity-ledger-cold without the three-preparation ledger "
            "section (an old plan); run doit dry_run again",
            code="ledger_plan_invalid",
            location="plan.ledger",
        )
    if len(ledger.reservations) != len(RESERVATIONS) or len(ledger.sequence) != len(SEQUENCE):
        raise LedgerError(
            f"the plan reserves {len(ledger.reservations)} extraction(s) over "
            f"{len(ledger.sequence)} preparation(s); the ledger arm needs three",
            code="ledger_plan_invalid",
            location="plan.ledger",
        )
    if tuple(ledger.roles) != SEQUENCE or tuple(ledger.sequence) != (alternate, reader, alternate):
        raise LedgerError(
            "the preparations must answer alternate, reader, alternate (A -> R -> A)",
            code="ledger_plan_invalid",
            location="plan.ledger",
        )
    for planned, needed in zip(ledger.reservations, RESERVATIONS, strict=True):
        if (
            planned.kind != needed.kind
            or planned.input_tokens < needed.input_tokens
            or planned.output_tokens < needed.output_tokens
        ):
            raise LedgerError(
                f"a {planned.kind} reservation of {planned.input_tokens:,} input and "
                f"{planned.output_tokens:,} output tokens; the confirmed budget is "
                f"{needed.kind} {needed.input_tokens:,} and {needed.output_tokens:,}",
                code="ledger_plan_under_reserved",
                location="plan.ledger",
            )
