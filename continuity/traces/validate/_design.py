"""The hard suite's design roles and the generated suites' neutral vocabulary.

`check_design_roles` finds the probe playing each design role (owner rules, the moved
date and revised amount, the account reference, the mid-result and head-of-result
identifiers, the secret) and checks where its answer sits against the harness's
windows and projection. `check_vocabulary` refuses relationship, health, religion and
politics words (`sensitive_word`).
"""

from __future__ import annotations

from collections.abc import Iterable

from continuity.privacy import CREDENTIAL_ASSIGNMENT
from continuity.traces.bounds import (
    RESULT_HEAD_BYTES,
    SUMMARY_RESULT_CHARS,
    is_text_message,
    projected_records,
)
from continuity.traces.schema import (
    ActiveConstraintExpectation,
    Fact,
    OwnerMessage,
    Probe,
    RedactionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
    ToolResult,
)
from continuity.traces.validate._context import Context
from continuity.traces.validate.codes import TraceCode

__all__ = ["CREDENTIAL_ASSIGNMENT", "check_design_roles", "check_vocabulary", "sensitive_word"]


# Relationship, health, religion and politics vocabulary the generated suites avoid:
# stems match any word starting with them, whole words only themselves.
_SENSITIVE_STEMS = (
    "divorc",
    "pregnan",
    "therap",
    "diagnos",
    "hospital",
    "funeral",
    "religio",
    "politic",
    "election",
    "sexual",
    "lawsuit",
    "bereave",
    "illness",
)
_SENSITIVE_WORDS = (
    "medical",
    "boyfriend",
    "girlfriend",
    "husband",
    "wife",
    "dating",
    "romance",
    "romantic",
    "church",
    "mosque",
    "synagogue",
)


def sensitive_word(text: str) -> str | None:
    """The first sensitive word in `text`, if any (case-insensitive).

    Uses `str.find` per term rather than one big case-insensitive regex: generated
    traces are ~1 MB each and this check is on the hot path of every build.
    """
    low = text.lower()
    for whole, terms in ((False, _SENSITIVE_STEMS), (True, _SENSITIVE_WORDS)):
        for term in terms:
            start = low.find(term)
            while start >= 0:
                end = start + len(term)
                before_ok = start == 0 or not low[start - 1].isalnum()
                after_ok = not whole or end == len(low) or not low[end].isalnum()
                if before_ok and after_ok:
                    stop = end
                    while stop < len(low) and low[stop].isalnum():
                        stop += 1
                    return text[start:stop]
                start = low.find(term, start + 1)
    return None


def _role_probe(ctx: Context, role: str, kind: type) -> tuple[int, Probe] | None:
    for p_index, probe in enumerate(ctx.trace.probes):
        if probe.design_role == role and isinstance(probe.expectation, kind):
            return p_index, probe
    code: TraceCode = "owner_rules_missing" if role == "owner_rules" else "category_missing"
    if role in ("moved_date", "revised_amount"):
        code = "correction_missing"
    ctx.add(code, "$.probes", f"no {kind.__name__} probe with design_role {role!r}")
    return None


def _record_of(ctx: Context, fact: Fact) -> ToolResult | None:
    """The first tool result among a fact's evidence."""
    for turn_id in fact.evidence:
        located = ctx.turns.get(turn_id)
        if located and isinstance(located.turn, ToolResult):
            return located.turn
    return None


def check_design_roles(ctx: Context) -> None:
    projected = set(projected_records(ctx.records))
    first_owner = next(
        (tid for tid, loc in ctx.turns.items() if isinstance(loc.turn, OwnerMessage)), None
    )

    found = _role_probe(ctx, "owner_rules", ActiveConstraintExpectation)
    if found:
        p_index, probe = found
        exp = probe.expectation
        assert isinstance(exp, ActiveConstraintExpectation)
        in_turn_one = [f for f in exp.required if first_owner in f.evidence]
        if exp.mode != "recall" or len(in_turn_one) < 3:
            ctx.add(
                "owner_rules_missing",
                f"$.probes[{p_index}].expectation",
                "turn 1 must state three owner rules, recalled by a recall probe",
            )

    for role, supersessions in (("moved_date", 2), ("revised_amount", 1)):
        found = _role_probe(ctx, role, SupersededCurrentExpectation)
        if found:
            p_index, probe = found
            exp = probe.expectation
            assert isinstance(exp, SupersededCurrentExpectation)
            if len(exp.superseded) != supersessions:
                ctx.add(
                    "correction_missing",
                    f"$.probes[{p_index}].expectation.superseded",
                    f"{role} is superseded {len(exp.superseded)} times; needs {supersessions}",
                )

    projected_ids = {ctx.records[i].turn_id for i in projected}
    checks = (
        ("account_reference", _account_reference),
        ("mid_result_identifier", _mid_result),
        ("head_identifier", _head_identifier),
    )
    for role, check in checks:
        located = _identifier_record(ctx, role)
        if located:
            check(ctx, *located, projected_ids)
    for p_index, probe in enumerate(ctx.trace.probes):
        if isinstance(probe.expectation, RedactionExpectation):
            _secret(ctx, p_index, probe.expectation.secret)


def _identifier_record(
    ctx: Context, role: str
) -> tuple[str, ToolIdentifierExpectation, ToolResult] | None:
    """The probe playing `role`, its expectation and the record holding its answer."""
    found = _role_probe(ctx, role, ToolIdentifierExpectation)
    if found is None:
        return None
    p_index, probe = found
    assert isinstance(probe.expectation, ToolIdentifierExpectation)
    record = _record_of(ctx, probe.expectation.answer)
    if record is None:
        return None
    return f"$.probes[{p_index}].expectation.answer", probe.expectation, record


def _account_reference(
    ctx: Context, path: str, exp: ToolIdentifierExpectation, record: ToolResult, projected: set[str]
) -> None:
    after = ctx.turns[record.turn_id].order
    later_text = sum(
        1 for loc in ctx.turns.values() if loc.order > after and is_text_message(loc.turn)
    )
    if record.turn_id in projected:
        ctx.add(
            "placement_invalid",
            path,
            "the account reference's record is inside the cold-rebuild tool projection",
        )
    if later_text < 64:
        ctx.add(
            "placement_invalid",
            path,
            f"only {later_text} text messages follow the account reference; it must sit "
            "outside the canonical last-64 window",
        )


def _mid_result(
    ctx: Context, path: str, exp: ToolIdentifierExpectation, record: ToolResult, projected: set[str]
) -> None:
    offset = record.output.find(exp.answer.value)
    end = offset + len(exp.answer.value)
    if offset < SUMMARY_RESULT_CHARS or end > len(record.output) - SUMMARY_RESULT_CHARS:
        ctx.add(
            "placement_invalid",
            path,
            f"the identifier sits at {offset:,} of {len(record.output):,} chars; it must "
            f"be outside the first and last {SUMMARY_RESULT_CHARS:,}",
        )


def _head_identifier(
    ctx: Context, path: str, exp: ToolIdentifierExpectation, record: ToolResult, projected: set[str]
) -> None:
    data = record.output.encode("utf-8")
    value = exp.answer.value.encode("utf-8")
    offset = data.find(value)
    problems = []
    if len(data) <= RESULT_HEAD_BYTES:
        problems.append("its result is not over 16 KiB")
    if offset < 0 or offset + len(value) > RESULT_HEAD_BYTES:
        problems.append("it is not inside the first 16 KiB")
    if record.turn_id not in projected:
        problems.append("its record is not among the newest projected records")
    if "booking pack" not in record.output[:400].lower():
        problems.append("its result is not the booking pack")
    if not exp.superseded:
        problems.append("it has no superseded decoy")
    for problem in problems:
        ctx.add("placement_invalid", path, f"head-of-result identifier: {problem}")


def _secret(ctx: Context, p_index: int, secret: Fact) -> None:
    path = f"$.probes[{p_index}].expectation.secret"
    if len(secret.value) < 8:
        ctx.add("placement_invalid", path, "a secret needs at least 8 characters")
    record = _record_of(ctx, secret)
    if record and not CREDENTIAL_ASSIGNMENT.search(record.output):
        ctx.add(
            "placement_invalid",
            path,
            "the secret's tool result has no textual credential assignment",
        )


def check_vocabulary(ctx: Context) -> None:
    texts: Iterable[tuple[str, str]] = [(loc.path, loc.text) for loc in ctx.turns.values()] + [
        (f"$.probes[{i}].text", p.text) for i, p in enumerate(ctx.trace.probes)
    ]
    for path, text in texts:
        word = sensitive_word(text)
        if word:
            ctx.add(
                "vocabulary_not_neutral",
                path,
                f"generated suites avoid sensitive vocabulary; found {word!r}",
            )
