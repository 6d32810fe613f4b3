"""Per-family shape rules, as the seed states them ("Suites", "Original suite",
"Hard suite (generated)")."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from continuity.traces.schema import CATEGORIES, IMPORTED_CATEGORIES

__all__ = ["FAMILY_SHAPES", "HARD_DESIGN_ROLES", "FamilyShape", "Range"]

Range = tuple[int, int]

# The generator invariants a hard trace's probes must exercise (see `validate`).
HARD_DESIGN_ROLES: tuple[str, ...] = (
    "owner_rules",
    "account_reference",
    "mid_result_identifier",
    "head_identifier",
    "moved_date",
    "revised_amount",
)


class FamilyShape(msgspec.Struct, frozen=True, kw_only=True):
    owner_turns: Range | None = None
    sessions: Range | None = None
    distinct_days: int | None = None
    tool_records: Range | None = None
    result_bytes: Range | None = None
    oversized_results: Range | None = None
    all_tool_kinds: bool = False
    steers: int | None = None
    probes: Range | None = None
    categories: tuple[str, ...] = ()
    forbidden_categories: tuple[str, ...] = ()
    estimated_tokens: Range | None = None
    fits_projection: bool = False
    sent_and_drafted: bool = False
    early_constraint: bool = False
    design_roles: tuple[str, ...] = ()
    neutral_vocabulary: bool = False


_SEVEN = tuple(c for c in CATEGORIES if c != "redaction")

_HARD = FamilyShape(
    owner_turns=(84, 116),
    sessions=(7, 10),
    tool_records=(64, 96),
    result_bytes=(8 * 1024, 64 * 1024),
    oversized_results=(2, 3),
    all_tool_kinds=True,
    steers=3,
    probes=(13, 20),
    categories=CATEGORIES,
    estimated_tokens=(212_000, 232_000),
    sent_and_drafted=True,
    early_constraint=True,
    design_roles=HARD_DESIGN_ROLES,
    neutral_vocabulary=True,
    forbidden_categories=IMPORTED_CATEGORIES,
)

FAMILY_SHAPES: Mapping[str, FamilyShape] = {
    "original": FamilyShape(
        owner_turns=(36, 38),
        distinct_days=5,
        tool_records=(24, 32),
        all_tool_kinds=True,
        steers=1,
        probes=(13, 13),
        categories=_SEVEN,
        forbidden_categories=("redaction", *IMPORTED_CATEGORIES),
        fits_projection=True,
        sent_and_drafted=True,
        early_constraint=True,
    ),
    "hard": _HARD,
    "hard-distractors": _HARD,
    # The local-model smoke (`fixtures/smoke/`): one short conversation a small CPU
    # model reads in seconds, with the mechanics every real run needs (tool calls and
    # results, a mid-turn steer, a superseding correction, a drafted item) and the four
    # value categories, so a real server sees every message shape the harness sends.
    "smoke": FamilyShape(
        owner_turns=(2, 12),
        sessions=(1, 3),
        tool_records=(2, 12),
        steers=1,
        probes=(4, 8),
        categories=("tool_identifier", "superseded_current", "commitment_status", "abstention"),
        forbidden_categories=("redaction", *IMPORTED_CATEGORIES),
        estimated_tokens=(500, 6_000),
        fits_projection=True,
    ),
    # Imported conversations (an external corpus, `continuity.traces.locomo`) keep the
    # universal rules (fictional, well formed, evidence that resolves, identifiers only in
    # tool output) and their own: at least one session and one probe, and no redaction
    # probe (a secret needs the generator's credential-placement rules). Free recall
    # (human-written answers) belongs to imported families only.
    "imported": FamilyShape(
        sessions=(1, 10_000),
        probes=(1, 100_000),
        forbidden_categories=("redaction",),
    ),
}
