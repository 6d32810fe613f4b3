"""``budget.json``: a fixed-budget sizing of a holdout source, and reading one.

A fixed-budget sizing (schema ``continuity-lookup-fixed-budget-v1``, written by
``doit lookup_budget --fixed-budget-sha256``, `continuity.runner.fixed_budget.sizing`) records
one `FixedSlot` per role x selected conversation x probe, and binds what it was measured
under:

- ``holdout``: the source and its selection (the `continuity.holdout.HoldoutBinding`
  fields: manifest and spec sha256, freeze digest, ``seeded-sha256-rank-v1``, seed,
  per-group count, the selected ids and the selection digest);
- ``reader``: the scripted reader binding and its two models;
- ``lookup_protocol`` and ``probe_protocol``, and ``classifier_code``, the code digest of
  `continuity.lookup.fixed_budget_classify.CLASSIFIER_MODULES`;
- ``code``: the checkout's commit and dirty flag, and the code digest of what measured;
- ``budget``: the raw sha256 of the frozen policy the budget is taken from, its calls
  and bytes, the rounds and the configured deadlines;
- ``roles``: each role's arm, checkout, soul (file and both digests) and the renderer it
  was measured with.

It is content-free: ids, counts, sizes, classes and hashes; never a question, an
answer, retrieved text or narrative.

`load_fixed_budget` is what other commands call: it verifies the file's raw sha256, its
schema and bindings (another protocol is ``lookup_policy_protocol_mismatch``, other
classifier code ``lookup_policy_code_mismatch``), and recomputes every slot's derived
metrics and class from its recorded ones (`derive`): an edited metric or class is
refused (``lookup_policy_metrics_mismatch``, ``lookup_policy_class_mismatch``, at
``<file>:$.slots[i].<field>``), so an edited class never passes and an edited metric
gives the class that metric gives.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import msgspec

from continuity.digest import code_digest
from continuity.errors import InputError, LookupError_
from continuity.inputs import read_user_bytes
from continuity.lookup.budget import BYTE_CAP, CALL_CAP
from continuity.lookup.fixed_budget_classify import (
    CLASSIFIER_MODULES,
    Derived,
    FixedClass,
    InitialAdmission,
    SlotKind,
    SlotStatus,
    derive,
    envelope_metrics,
)
from continuity.lookup.policy import LOOKUP_PROTOCOL
from continuity.lookup.state import Cause
from continuity.probes.protocol import PROBE_PROTOCOL

__all__ = [
    "FIXED_BUDGET_MAX_BYTES",
    "FIXED_BUDGET_SCHEMA",
    "CodeBinding",
    "FixedBudget",
    "FixedSlot",
    "FixedTerms",
    "ReaderBinding",
    "RoleBinding",
    "SourceBinding",
    "check_source_binding",
    "fixed_budget_bytes",
    "fixed_budget_classifier_code",
    "fixed_budget_sha256",
    "load_fixed_budget",
    "slot_classes",
    "slot_with_derived",
    "source_binding",
]

FIXED_BUDGET_SCHEMA = "continuity-lookup-fixed-budget-v1"
# A LoCoMo sizing (six roles x four conversations x every probe) is a few MB.
FIXED_BUDGET_MAX_BYTES = 256 * 1024 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")


class _Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class SourceBinding(_Strict, frozen=True, kw_only=True):
    """The holdout source and selection a sizing was measured on (the fields of
    `continuity.holdout.HoldoutBinding`, which this layer cannot import)."""

    schema: str
    manifest_sha256: str
    spec_sha256: str
    freeze_digest: str
    algorithm: str
    seed: int
    per_group: int
    selected: tuple[str, ...]
    selection_digest: str


class ReaderBinding(_Strict, frozen=True, kw_only=True):
    """The scripted reader binding: its name, its reader and its alternate model."""

    binding: str
    reader: str
    alternate: str


class CodeBinding(_Strict, frozen=True, kw_only=True):
    """The checkout that measured (its commit, ``unknown`` outside git, and whether its
    work tree differed from it) and the code digest of what the measurement ran."""

    commit: str
    dirty: bool | None
    measurement_code: str


class FixedTerms(_Strict, frozen=True, kw_only=True):
    """The fixed budget: the raw sha256 and file name of the frozen policy it is taken
    from, its calls and bytes, the rounds, and the configured deadlines (seconds)."""

    policy_sha256: str
    policy_file: str
    calls: int
    bytes: int
    rounds: int
    probe_deadline_seconds: float
    cleanup_seconds: float
    turn_seconds: float
    watchdog_seconds: float


class RoleBinding(_Strict, frozen=True, kw_only=True):
    """A role as measured: its arm, checkout (R0/Rpack) and soul (file and digests).
    ``measured_code`` is the checkout whose renderer measured it (this checkout's pack
    carries the retrieval guidance, so Rpack for every role); ``guidance_allowance_tokens``
    is the allowance the estimator adds for that guidance in an Rpack pack role, which an
    R0 pack role's observed context overstates."""

    name: str
    arm: str
    code: str
    soul_file: str
    soul_sha256: str
    soul_core_sha256: str
    measured_code: str
    guidance_allowance_tokens: int


class FixedSlot(_Strict, frozen=True, kw_only=True):
    """One role x conversation x probe: what was recorded, then what it gives.

    Recorded: the kind (``reference`` path or full-budget ``envelope``), whether its probe
    child ran (``measured``) or failed (its error code in ``failure``), the deadline and
    meter-exhaustion flags, the first request's UTF-8 JSON bytes, the pack arm's cold
    estimate, and the path's (or envelope's) discovered/verified flags, calls, bytes and
    responses. Derived (recomputed on every read): the initial context in tokens and its
    admission, the largest response, the conservative peak request, the repeated-input
    admission total, the class and its cause.
    """

    role: str
    trace_id: str
    probe_id: str
    arm: str
    suite: str
    kind: SlotKind
    status: SlotStatus
    failure: str | None
    deadline_exceeded: bool
    exhausted: Cause | None
    first_request_bytes: int
    cold_tokens: int
    discovered: bool
    verified: bool
    calls: int
    bytes: int
    responses: list[int]
    initial_context_tokens: int
    initial_admission: InitialAdmission | None
    largest_response: int
    peak_request_tokens: int
    admission_tokens: int
    classification: FixedClass
    cause: str | None


class FixedBudget(_Strict, frozen=True, kw_only=True):
    """``budget.json``: the bindings and every slot (see the module doc)."""

    schema: str = FIXED_BUDGET_SCHEMA
    lookup_protocol: str
    probe_protocol: str
    classifier_code: str
    holdout: SourceBinding
    reader: ReaderBinding
    code: CodeBinding
    budget: FixedTerms
    roles: list[RoleBinding]
    slots: list[FixedSlot]
    note: str = ""

    @property
    def calls(self) -> int:
        return self.budget.calls

    @property
    def bytes(self) -> int:
        return self.budget.bytes


def source_binding(binding: msgspec.Struct) -> SourceBinding:
    """A `continuity.holdout.HoldoutBinding` (or anything with its fields) as the
    `SourceBinding` a sizing binds."""
    return msgspec.convert(msgspec.to_builtins(binding), SourceBinding)


def check_source_binding(bound: SourceBinding, given: SourceBinding, where: str) -> None:
    """The source and selection given are the ones the sizing binds (the selection seed
    is preregistered: given identically to budget, estimate, registration and plan).

    Raises:
        LookupError_: ``lookup_policy_holdout_mismatch`` at the first differing field.
    """
    for field in msgspec.structs.fields(SourceBinding):
        if getattr(bound, field.name) != getattr(given, field.name):
            raise LookupError_(
                f"the sizing binds {field.name} {str(getattr(bound, field.name))[:80]}, the "
                f"options give {str(getattr(given, field.name))[:80]}: the selection seed is "
                "preregistered, given identically to budget, estimate, registration and plan",
                code="lookup_policy_holdout_mismatch",
                location=f"{where}:$.holdout.{field.name}",
            )


def slot_classes(budget: FixedBudget) -> dict[tuple[str, str, str], str]:
    """Every slot's class by (role, trace id, probe id)."""
    return {(s.role, s.trace_id, s.probe_id): s.classification for s in budget.slots}


def fixed_budget_classifier_code() -> str:
    """The code digest of the fixed-budget classifier, as ``budget.json`` binds it."""
    return code_digest(CLASSIFIER_MODULES)


def fixed_budget_bytes(budget: FixedBudget) -> bytes:
    """The file's bytes (indented JSON, a final newline): what its sha256 covers."""
    return msgspec.json.format(msgspec.json.encode(budget)) + b"\n"


def fixed_budget_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_DERIVED = tuple(msgspec.structs.fields(Derived))


def slot_with_derived(slot: FixedSlot, calls: int, budget_bytes: int) -> FixedSlot:
    """`slot` with its derived fields computed from its recorded ones."""
    derived = derive(slot, calls, budget_bytes)
    return msgspec.structs.replace(slot, **{f.name: getattr(derived, f.name) for f in _DERIVED})


def load_fixed_budget(path: Path, sha256: str | None) -> FixedBudget:
    """The sizing at `path`, whose raw bytes must hash to `sha256`, with its bindings
    checked against this checkout's lookup and probe protocols and classifier code, and
    every slot recomputed.

    Raises:
        LookupError_: ``lookup_policy_sha256_required`` (no or an empty sha256),
            ``lookup_policy_sha256_mismatch``, ``lookup_policy_invalid`` (unreadable,
            another schema, malformed, out-of-range terms, an unknown role or a
            duplicate slot), ``lookup_policy_protocol_mismatch``,
            ``lookup_policy_code_mismatch``, ``lookup_policy_metrics_mismatch``,
            ``lookup_policy_class_mismatch``.
    """
    where = str(path)
    wanted = (sha256 or "").strip().lower()
    if not wanted:
        raise LookupError_(
            "a fixed-budget sizing needs the sha256 of its bytes (--lookup-policy-sha256)",
            code="lookup_policy_sha256_required",
            location="--lookup-policy-sha256",
        )
    data = _read(path)
    actual = fixed_budget_sha256(data)
    if actual != wanted:
        raise LookupError_(
            f"the sizing's sha256 is {actual}, not {wanted[:64]}",
            code="lookup_policy_sha256_mismatch",
            location=where,
        )
    budget = _decode(data, where)
    _check_bindings(budget, where)
    _check_terms(budget.budget, where)
    names = {role.name: role for role in budget.roles}
    if len(names) != len(budget.roles):
        raise LookupError_("a role is listed twice", location=f"{where}:$.roles")
    seen: set[tuple[str, str, str]] = set()
    for index, slot in enumerate(budget.slots):
        at = f"{where}:$.slots[{index}]"
        role = names.get(slot.role)
        if role is None or role.arm != slot.arm:
            raise LookupError_(f"role {slot.role[:40]!r} is not a bound role", location=at)
        identity = (slot.role, slot.trace_id, slot.probe_id)
        if identity in seen:
            raise LookupError_("the slot is listed twice", location=at)
        seen.add(identity)
        _check_slot(slot, budget.budget, at)
    return budget


def _read(path: Path) -> bytes:
    try:
        return read_user_bytes(path, limit=FIXED_BUDGET_MAX_BYTES, what="the sizing")
    except OSError as exc:
        raise LookupError_(
            f"cannot read the sizing: {exc.strerror or type(exc).__name__}", location=str(path)
        ) from None
    except InputError as exc:  # over the limit, or a directory, device or FIFO
        raise LookupError_(exc.message, location=str(path)) from None


class _Schema(msgspec.Struct):
    schema: str = ""


def _decode(data: bytes, where: str) -> FixedBudget:
    try:
        schema = msgspec.json.decode(data, type=_Schema).schema
    except msgspec.MsgspecError as exc:
        raise LookupError_(str(exc)[:240], location=where) from None
    if schema != FIXED_BUDGET_SCHEMA:
        raise LookupError_(
            f"schema {schema[:60]!r}, not {FIXED_BUDGET_SCHEMA} (a fixed-budget sizing "
            "is the budget.json of doit lookup_budget --fixed-budget-sha256)",
            location=f"{where}:$.schema",
        )
    try:
        return msgspec.json.decode(data, type=FixedBudget)
    except msgspec.MsgspecError as exc:
        raise LookupError_(str(exc)[:240], location=where) from None


def _check_bindings(budget: FixedBudget, where: str) -> None:
    bound = (budget.lookup_protocol, budget.probe_protocol)
    protocols = (LOOKUP_PROTOCOL, PROBE_PROTOCOL)
    if bound != protocols:
        raise LookupError_(
            f"the sizing was measured under {bound[0][:40]} / {bound[1][:40]}, not "
            f"{protocols[0]} / {protocols[1]}: measure a new one",
            code="lookup_policy_protocol_mismatch",
            location=where,
        )
    if budget.classifier_code != fixed_budget_classifier_code():
        raise LookupError_(
            f"the sizing's classes came from classifier code {budget.classifier_code[:16]}, "
            f"this checkout's is {fixed_budget_classifier_code()[:16]}: measure a new one",
            code="lookup_policy_code_mismatch",
            location=where,
        )


def _check_terms(terms: FixedTerms, where: str) -> None:
    if not 1 <= terms.calls <= CALL_CAP or not 1 <= terms.bytes <= BYTE_CAP:
        raise LookupError_("budget out of range", location=f"{where}:$.budget")
    if terms.rounds < terms.calls + 1:
        raise LookupError_(
            f"{terms.rounds} rounds cannot hold {terms.calls} calls and an answer",
            location=f"{where}:$.budget.rounds",
        )
    if not _SHA256.fullmatch(terms.policy_sha256):
        raise LookupError_("not a sha256", location=f"{where}:$.budget.policy_sha256")


def _check_slot(slot: FixedSlot, terms: FixedTerms, at: str) -> None:
    """Recompute a slot from its recorded metrics (an envelope's are the budget's)."""
    if min(slot.calls, slot.bytes, slot.first_request_bytes, slot.cold_tokens, *slot.responses) < 0:
        raise LookupError_("a negative metric", location=at)
    if slot.kind == "envelope":
        expected = envelope_metrics(terms.calls, terms.bytes, terms.rounds)
        recorded = (slot.calls, slot.bytes, slot.responses)
        if recorded != expected or not (slot.discovered and slot.verified):
            raise LookupError_(
                "an envelope slot's calls, bytes and responses are the budget's full-budget "
                "envelope",
                code="lookup_policy_metrics_mismatch",
                location=f"{at}.responses",
            )
    derived = derive(slot, terms.calls, terms.bytes)
    for field in _DERIVED:
        if field.name in ("classification", "cause"):
            continue
        stored, computed = getattr(slot, field.name), getattr(derived, field.name)
        if stored != computed:
            raise LookupError_(
                f"{field.name} is stored as {stored}, its metrics give {computed}",
                code="lookup_policy_metrics_mismatch",
                location=f"{at}.{field.name}",
            )
    if (slot.classification, slot.cause) != (derived.classification, derived.cause):
        raise LookupError_(
            f"the slot is stored as {slot.classification} ({slot.cause}), its metrics give "
            f"{derived.classification} ({derived.cause})",
            code="lookup_policy_class_mismatch",
            location=f"{at}.classification",
        )
