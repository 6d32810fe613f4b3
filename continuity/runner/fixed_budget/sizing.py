"""``doit lookup_budget --fixed-budget-sha256``: a fixed-budget sizing of a holdout source.

A feasibility-only path that never derives limits. The budget is a frozen policy's:
`fixed_budget_policy` finds the frozen policy file whose raw bytes hash to the given
sha256 (``fixtures/lookup/budget-*.json``, or the file ``--policy`` names) and loads it
with every check `continuity.lookup.policy.load_policy` makes; its calls and bytes (8 and
126,976 for ``budget-v4.json``), `FIXED_ROUNDS` rounds and the unchanged deadlines are
the fixed budget.

Each role x selected conversation x probe is one slot (six roles: 6 x 4 x 15 = 360 for
four 15-probe conversations). `continuity.runner.fixed_budget.measure` measures them in
real probe children in a private scratch store, keyed in the user's store; here they are
assembled into ``budget.json`` (`continuity.lookup.fixed_budget.FixedBudget`), each slot
with its derived metrics and class, and written with a ``summary.md`` into a new output
directory (written beside it, then renamed into place), kept in the store under
``refs/lookup/fixed-budgets/<sha256>``. Nothing of the holdout's content reaches either:
ids, sizes, counts, classes and hashes only.

A present but empty ``--fixed-budget-sha256`` is refused before anything else is looked
at (`check_fixed_budget_sha256`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from continuity.arms import ARMS
from continuity.digest import code_digest
from continuity.errors import LookupError_, UsageError
from continuity.holdout import (
    HoldoutBinding,
    HoldoutSource,
    SelectedTrace,
    holdout_binding,
    load_frozen,
    select_frozen,
    selected_traces,
)
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
from continuity.lookup.budget import BYTE_CAP, CALL_CAP
from continuity.lookup.fixed_budget import (
    CodeBinding,
    FixedBudget,
    FixedSlot,
    FixedTerms,
    ReaderBinding,
    RoleBinding,
    SourceBinding,
    fixed_budget_bytes,
    fixed_budget_classifier_code,
    fixed_budget_sha256,
    slot_with_derived,
)
from continuity.lookup.fixed_budget_classify import FIXED_ROUNDS, envelope_metrics
from continuity.lookup.policy import LEGACY_SCHEMAS, LOOKUP_PROTOCOL, load_policy, policy_sha256
from continuity.lookup.reader import binding_models
from continuity.lookup.receipts import LookupBinding
from continuity.lookup.soul import Soul, read_known_soul
from continuity.lookup.sources import sources_for
from continuity.memory.pack import PACK_RETRIEVAL_GUIDANCE
from continuity.outputs import check_new_directory
from continuity.plan.guards import default_checkout
from continuity.plan.lookup_slots import EstimateRole
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.runner.fixed_budget.measure import (
    SLOT_CODE,
    FixedJob,
    MeasuredSlot,
    SlotRecord,
    SlotRun,
    measure_slots,
)
from continuity.runner.fixed_budget.output import summary_text, write_sizing
from continuity.runner.inventory_paths import AnnotatedProbe
from continuity.runner.manifest import code_revision
from continuity.store import Store
from continuity.traces.keys import fixtures_dir
from continuity.traces.schema import Trace

__all__ = [
    "FIXED_BUDGET_REF",
    "HOLDOUT_SUITE",
    "FixedBudgetRequest",
    "FixedBudgetResult",
    "FrozenBudget",
    "check_fixed_budget_sha256",
    "fixed_budget_policy",
    "frozen_policy_files",
    "holdout_jobs",
    "run_fixed_budget",
]

FIXED_BUDGET_REF = "lookup/fixed-budgets"
HOLDOUT_SUITE = "holdout"
_OPTION = "--fixed-budget-sha256"
_SHA256 = re.compile(r"[0-9a-f]{64}")


def check_fixed_budget_sha256(value: str | None) -> str | None:
    """The given fixed-budget sha256 (lowercased), or None when it was not given.

    Raises:
        UsageError: ``lookup_empty_fixed_budget_sha256`` when it is present but empty or
            whitespace (checked before any workload or source option).
    """
    if value is None:
        return None
    if not value.strip():
        raise UsageError(
            "--fixed-budget-sha256 is empty; give the sha256 of the frozen policy's raw "
            "bytes (e.g. fixtures/lookup/budget-v4.json)",
            code="lookup_empty_fixed_budget_sha256",
            location=_OPTION,
        )
    return value.strip().lower()


def frozen_policy_files() -> list[Path]:
    """The frozen policy files of this checkout (``fixtures/lookup/budget-*.json``)."""
    folder = fixtures_dir() / "lookup"
    return sorted(folder.glob("budget-*.json"))


class FrozenBudget(msgspec.Struct, frozen=True):
    """The only thing a fixed-budget sizing takes from a frozen policy: its limits."""

    calls: int
    bytes: int


class _Legacy(msgspec.Struct):
    schema: str = ""
    calls: int = 0
    bytes: int = 0


def fixed_budget_policy(sha256: str, policy: Path | None = None) -> tuple[Path, FrozenBudget]:
    """The calls and bytes of the frozen policy whose raw bytes hash to `sha256`: the
    file `policy` names, else the frozen policy file of this checkout that does. A
    protocol-bound policy (``continuity-lookup-budget-v2``) is loaded with every check;
    an earlier frozen file (``continuity-lookup-budget-v1``, e.g. the seed's raw v1
    policy) gives only its limits, in range: a fixed budget reads no class of it.

    Raises:
        LookupError_: ``lookup_fixed_budget_unknown`` (no frozen policy file hashes to it,
            or it is no sha256), ``lookup_policy_sha256_mismatch`` (`policy`'s bytes hash
            to something else), ``lookup_policy_invalid`` (limits out of range), and
            `load_policy`'s codes for a v2 file (``lookup_policy_protocol_mismatch``,
            ``lookup_policy_code_mismatch`` ...).
    """
    if policy is None:
        if not _SHA256.fullmatch(sha256):
            raise LookupError_(
                f"{sha256[:80]!r} is not a sha256 (64 lowercase hex digits)",
                code="lookup_fixed_budget_unknown",
                location=_OPTION,
            )
        found = [p for p in frozen_policy_files() if policy_sha256(p.read_bytes()) == sha256]
        if not found:
            names = ", ".join(p.name for p in frozen_policy_files())
            raise LookupError_(
                f"no frozen policy of this checkout ({names}) has sha256 {sha256}; name "
                "another frozen policy file with --policy",
                code="lookup_fixed_budget_unknown",
                location=_OPTION,
            )
        policy = found[0]
    data = _read_policy(policy)
    if policy_sha256(data) != sha256:
        raise LookupError_(
            f"the policy's sha256 is {policy_sha256(data)}, not {sha256[:64]}",
            code="lookup_policy_sha256_mismatch",
            location=str(policy),
        )
    try:
        head = msgspec.json.decode(data, type=_Legacy)
    except msgspec.MsgspecError as exc:
        raise LookupError_(str(exc), location=str(policy)) from None
    if head.schema not in LEGACY_SCHEMAS:
        loaded = load_policy(policy, sha256)
        return policy, FrozenBudget(loaded.calls, loaded.bytes)
    if not 1 <= head.calls <= CALL_CAP or not 1 <= head.bytes <= BYTE_CAP:
        raise LookupError_("budget out of range", location=f"{policy}:$.calls")
    return policy, FrozenBudget(head.calls, head.bytes)


def _read_policy(path: Path) -> bytes:
    try:
        return read_user_bytes(path, limit=DOCUMENT_MAX_BYTES, what="the policy")
    except OSError as exc:
        raise LookupError_(
            f"cannot read the policy: {exc.strerror or type(exc).__name__}", location=str(path)
        ) from None


@dataclass(frozen=True)
class FixedBudgetResult:
    """What a sizing wrote and how it got there (`measured`, `reused` and `failed`
    count slot records: roles that share an arm and a soul share one)."""

    budget: FixedBudget
    path: Path
    sha256: str
    ref: str
    measured: int
    reused: int
    failed: int


def _role_souls(roles: Sequence[EstimateRole]) -> list[tuple[EstimateRole, Soul]]:
    return [(role, read_known_soul(role.soul_file)) for role in roles]


def _annotated(trace: Trace) -> tuple[AnnotatedProbe, ...]:
    """Every probe of `trace`, each with its annotated source (if any)."""
    return tuple(
        AnnotatedProbe(i, probe, tuple(sources_for(trace, probe)))
        for i, probe in enumerate(trace.probes)
    )


def holdout_jobs(
    store: Store,
    traces: Sequence[SelectedTrace],
    roles: Sequence[tuple[EstimateRole, Soul]],
) -> list[FixedJob]:
    """One job per selected trace x distinct (arm, soul) of `roles`, in selection and
    role order."""
    from continuity.traces.validate import load_trace

    jobs = []
    for selected in traces:
        trace = load_trace(store.get_blob(selected.digest), source=selected.trace_id)
        probes = _annotated(trace)
        seen: set[tuple[str, str, str]] = set()
        for role, soul in roles:
            variant = (role.arm, soul.sha256, soul.core_sha256)
            if variant in seen:
                continue
            seen.add(variant)
            jobs.append(
                FixedJob(trace, selected.key, selected.digest, ARMS[role.arm], soul, probes)
            )
    return jobs


def _cold_tokens(trace: Trace) -> int:
    """The cold reseed estimate a pack arm's floor builds on (the inventory's)."""
    from continuity.plan.workload import trace_shape

    return trace_shape(trace)["reseed"]


def _slot(role: EstimateRole, found: MeasuredSlot, terms: FixedTerms, cold: int) -> FixedSlot:
    """A measured (or failed) record as the role's slot, derived metrics computed."""
    record: SlotRecord | None = found.record
    envelope = not found.probe.sources
    if envelope:
        calls, sent, responses = envelope_metrics(terms.calls, terms.bytes, terms.rounds)
        discovered = verified = True
    elif record is not None and record.receipt is not None:
        receipt = record.receipt
        calls, sent, responses = receipt.calls, receipt.bytes, list(receipt.responses)
        discovered, verified = receipt.discovered, receipt.verified
    else:  # a failed identifier probe: no path was observed
        calls, sent, responses, discovered, verified = 0, 0, [], False, False
    slot = FixedSlot(
        role=role.name,
        trace_id=found.job.trace.trace_id,
        probe_id=found.probe.probe.probe_id,
        arm=role.arm,
        suite=HOLDOUT_SUITE,
        kind="envelope" if envelope else "reference",
        status="measured" if record is not None else "failed",
        failure=found.failure,
        deadline_exceeded=record.deadline_exceeded if record is not None else False,
        exhausted=record.exhausted if record is not None else None,
        first_request_bytes=(
            record.first_request_bytes if record is not None else found.failure_request_bytes
        ),
        cold_tokens=cold if ARMS[role.arm].pack else 0,
        discovered=discovered,
        verified=verified,
        calls=calls,
        bytes=sent,
        responses=responses,
        initial_context_tokens=0,
        initial_admission=None,
        largest_response=0,
        peak_request_tokens=0,
        admission_tokens=0,
        classification="unknown",
        cause=None,
    )
    return slot_with_derived(slot, terms.calls, terms.bytes)


def _slots(
    run: SlotRun, roles: Sequence[tuple[EstimateRole, Soul]], terms: FixedTerms
) -> list[FixedSlot]:
    """Every role x conversation x probe, role by role, in selection and probe order."""
    by_variant: dict[tuple[str, str, str, str], list[MeasuredSlot]] = {}
    for found in run.slots:
        job = found.job
        variant = (job.trace.trace_id, job.arm.id, job.soul.sha256, job.soul.core_sha256)
        by_variant.setdefault(variant, []).append(found)
    colds: dict[str, int] = {}
    slots = []
    traces = list(dict.fromkeys(found.job.trace.trace_id for found in run.slots))
    for role, soul in roles:
        for trace_id in traces:
            for found in by_variant[(trace_id, role.arm, soul.sha256, soul.core_sha256)]:
                trace = found.job.trace
                cold = colds.setdefault(trace_id, _cold_tokens(trace))
                slots.append(_slot(role, found, terms, cold))
    return slots


def _role_bindings(roles: Sequence[tuple[EstimateRole, Soul]]) -> list[RoleBinding]:
    guidance = -(-(len(PACK_RETRIEVAL_GUIDANCE.encode("utf-8")) + 1) // 3)
    return [
        RoleBinding(
            name=role.name,
            arm=role.arm,
            code=role.code,
            soul_file=role.soul_file,
            soul_sha256=soul.sha256,
            soul_core_sha256=soul.core_sha256,
            measured_code="Rpack",  # this checkout's renderer carries the guidance
            guidance_allowance_tokens=guidance if ARMS[role.arm].pack else 0,
        )
        for role, soul in roles
    ]


def _terms(sha256: str, path: Path, policy: FrozenBudget, watchdog_seconds: float) -> FixedTerms:
    defaults = {f.name: f.default for f in msgspec.structs.fields(LookupBinding)}
    return FixedTerms(
        policy_sha256=sha256,
        policy_file=path.name,
        calls=policy.calls,
        bytes=policy.bytes,
        rounds=FIXED_ROUNDS,
        probe_deadline_seconds=float(defaults["probe_deadline"]),
        cleanup_seconds=float(defaults["cleanup_seconds"]),
        turn_seconds=float(defaults["turn_safety_seconds"]),
        watchdog_seconds=watchdog_seconds,
    )


def _budget(
    binding: HoldoutBinding,
    reader_binding: str,
    models: tuple[str, str],
    terms: FixedTerms,
    souls: Sequence[tuple[EstimateRole, Soul]],
    run: SlotRun,
) -> FixedBudget:
    """``budget.json``'s record: every binding and every slot."""
    commit, dirty = code_revision()
    return FixedBudget(
        lookup_protocol=LOOKUP_PROTOCOL,
        probe_protocol=PROBE_PROTOCOL,
        classifier_code=fixed_budget_classifier_code(),
        holdout=msgspec.convert(msgspec.to_builtins(binding), SourceBinding),
        reader=ReaderBinding(binding=reader_binding, reader=models[0], alternate=models[1]),
        code=CodeBinding(commit=commit, dirty=dirty, measurement_code=code_digest(SLOT_CODE)),
        budget=terms,
        roles=_role_bindings(souls),
        slots=_slots(run, souls, terms),
        note="Fixed-budget sizing of a holdout source (doit lookup_budget "
        "--fixed-budget-sha256); content-free. See summary.md.",
    )


def _keep(store: Store, sha: str, data: bytes, run: SlotRun, output: Path) -> str:
    """Keep ``budget.json`` and every stored record it was assembled from under a ref
    (so ``doit gc`` keeps them); return the ref's name."""
    ref = f"{FIXED_BUDGET_REF}/{sha}"
    stored = [found.key for found in run.slots if found.record is not None]
    store.set_ref(
        ref,
        objects=[store.put_blob(data)],
        actions=list(dict.fromkeys(stored)),
        meta={"output": str(output), "sha256": sha},
    )
    return ref


@dataclass(frozen=True)
class FixedBudgetRequest:
    """A sizing's inputs: the new output directory, the holdout source, the selection
    (seed and per-group count, None: the spec's) and the fixed budget's sha256 (and the
    frozen policy file, None: this checkout's whose bytes hash to it)."""

    output: Path
    source: HoldoutSource
    seed: int | str | None
    per_group: int | None
    fixed_budget_sha256: str | None
    policy: Path | None = None
    binding: str = "default"
    # the paid reader the sizing prices (provider:model); None: the binding's reader.
    # The measurement runs the binding's scripted models either way.
    reader_model: str | None = None


def run_fixed_budget(
    store: Store,
    request: FixedBudgetRequest,
    roles: Sequence[EstimateRole],
    *,
    scratch_parent: Path | None = None,
    watchdog_seconds: float = 720.0,
    progress: Callable[[int, int, str, str], None] | None = None,
    on_slot: Callable[[str, SlotRecord], None] | None = None,
) -> FixedBudgetResult:
    """Size every role x selected conversation x probe at the fixed budget and write
    ``budget.json`` and ``summary.md`` into `request.output` (see the module doc).

    Raises:
        UsageError: ``lookup_empty_fixed_budget_sha256`` (first),
            ``lookup_output_exists``, ``lookup_output_invalid``,
            ``lookup_scratch_root_invalid``.
        LookupError_: `fixed_budget_policy`'s codes.
        HoldoutError: `load_frozen`'s and `select_frozen`'s codes.
        SoulError: a role's frozen soul is missing or modified.
        HarnessError: a replay or the unit worker failed (earlier records are stored).
    """
    sha256 = check_fixed_budget_sha256(request.fixed_budget_sha256)
    if sha256 is None:
        raise UsageError(
            "a fixed-budget sizing needs --fixed-budget-sha256",
            code="lookup_fixed_budget_required",
            location=_OPTION,
        )
    output = check_new_directory(
        request.output, exists="lookup_output_exists", invalid="lookup_output_invalid"
    )
    policy_path, policy = fixed_budget_policy(sha256, request.policy)
    frozen = load_frozen(store, request.source)
    selection = select_frozen(frozen, request.seed, request.per_group)
    binding = holdout_binding(frozen, selection)
    traces = selected_traces(store, frozen, selection)
    souls = _role_souls(roles)
    models = binding_models(request.binding)
    terms = _terms(sha256, policy_path, policy, watchdog_seconds)
    run = measure_slots(
        store,
        holdout_jobs(store, traces, souls),
        models,
        terms,
        scratch_parent=scratch_parent,
        forbidden=[default_checkout()],
        watchdog_seconds=watchdog_seconds,
        progress=progress,
        on_slot=on_slot,
    )
    priced = (request.reader_model or models[0], models[1])
    budget = _budget(binding, request.binding, priced, terms, souls, run)
    data = fixed_budget_bytes(budget)
    sha = fixed_budget_sha256(data)
    write_sizing(output, {"budget.json": data, "summary.md": summary_text(budget, sha).encode()})
    ref = _keep(store, sha, data, run, output)
    return FixedBudgetResult(
        budget=budget,
        path=output / "budget.json",
        sha256=sha,
        ref=ref,
        measured=len(run.measured),
        reused=len(run.reused),
        failed=len(run.failed),
    )
