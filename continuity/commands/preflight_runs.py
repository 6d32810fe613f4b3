"""``doit compare_preflight``: the offline preparation feasibility check of a registration
or of a frozen holdout's selected traces.

`compare_preflight` is the entry point; `rules/preflight.py` declares its options and
calls it with them typed once (`ComparePreflightRequest`). It runs only the offline
preparation child of each role x suite x trace slot (`continuity.runner.preflight.run`):
no probe, no model, no authorization. A registration's slots run in each role's
registered build (verified as ``doit compare_run`` verifies it); a holdout source's are
prepared by this checkout from the frozen trace's bytes. The report is written before a
slot that is not eligible fails the command (``lookup_preparation_invalid``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from continuity.commands.role_runs import RegisteredRequest
from continuity.errors import UsageError
from continuity.plan.request import HoldoutRequest
from continuity.requests import Request

if TYPE_CHECKING:
    from pathlib import Path

    from continuity.roles.register import Registration
    from continuity.runner.preflight.run import PreflightReport, PreflightSlot, PreflightSource

__all__ = ["ComparePreflightRequest", "compare_preflight", "registration_slots"]


class ComparePreflightRequest(RegisteredRequest, frozen=True, kw_only=True):
    """``doit compare_preflight``: a registration and its raw sha256, or a frozen holdout
    source and its selection (``selection_seed`` -1 and ``per_group`` 0: not given); the
    report directory ("": the default under ``$CONTINUITY_OUT/preflight/``)."""

    manifest: str = ""
    manifest_sha256: str = ""
    statistical_spec: str = ""
    selection_seed: int = -1
    per_group: int = 0


def _holdout_slots(
    request: ComparePreflightRequest,
) -> tuple[list[PreflightSlot], PreflightSource]:
    """One slot per role x selected holdout trace, each prepared by this checkout's code
    from the frozen trace's bytes (verified against the store's freeze first).

    Raises:
        HoldoutError: the holdout codes (`continuity.plan.holdout_plan.holdout_choice`).
    """
    from continuity.plan.holdout_plan import HOLDOUT_SUITE, holdout_choice
    from continuity.roles.table import ROLES, SOULS
    from continuity.runner.preflight.child import TraceInput
    from continuity.runner.preflight.run import PreflightSlot, PreflightSource, checkout_code
    from continuity.store import Store

    store = Store(request.store or None)
    held = HoldoutRequest(
        suite=HOLDOUT_SUITE,
        manifest=request.manifest,
        manifest_sha256=request.manifest_sha256,
        statistical_spec=request.statistical_spec,
        selection_seed=request.selection_seed,
        per_group=request.per_group,
    )
    choice = holdout_choice(store, held, lookup=True)
    assert choice is not None
    code = checkout_code()
    slots = [
        PreflightSlot(
            role=role.name,
            arm=role.arm,
            soul=SOULS[role.soul],
            reader_binding="default",  # the frozen policy's binding (Sol)
            suite=HOLDOUT_SUITE,
            trace_id=trace.trace_id,
            trace=TraceInput(key=trace.key, digest=trace.digest, data=store.get_blob(trace.digest)),
            code=code,
        )
        for role in ROLES
        for trace in choice.traces
    ]
    binding = choice.binding
    source = PreflightSource(
        kind="holdout",
        path=choice.manifest,
        sha256=binding.manifest_sha256,
        digest=binding.freeze_digest,
        bindings={
            "spec_sha256": binding.spec_sha256,
            "algorithm": binding.algorithm,
            "seed": str(binding.seed),
            "per_group": str(binding.per_group),
            "selected": ",".join(binding.selected),
            "selection_digest": binding.selection_digest,
        },
    )
    return slots, source


def _holdout_output(request: ComparePreflightRequest, source: PreflightSource) -> Path:
    """``--output`` (a new directory), else the default below ``$CONTINUITY_OUT``."""
    from continuity.outputs import check_new_directory, resolve_out_path

    chosen = request.output
    if chosen:
        return check_new_directory(
            chosen, exists="preflight_output_exists", invalid="preflight_output_invalid"
        )
    digest = source.bindings["selection_digest"]
    return resolve_out_path() / "preflight" / f"holdout-{digest[:16]}"


def compare_preflight(request: ComparePreflightRequest) -> str:
    """``doit compare_preflight``: prepare every slot of the registration (or of the
    holdout source's selection) once in a private root; the summary lines of the report.

    Raises:
        UsageError: ``plan_invalid`` (a registration and a holdout source both given),
            ``option_value_missing`` (neither).
        CheckpointError: ``lookup_preparation_invalid`` after the report is written, and
            the registration's, the builds' and the holdout's codes.
    """
    from pathlib import Path

    from continuity.outputs import resolve_out_path
    from continuity.progress import progress
    from continuity.roles.register import check_output
    from continuity.roles.run import read_registration
    from continuity.roles.run_launch import verify_build
    from continuity.runner.preflight.run import PreflightSource, run_preflight

    given = [n for n in ("manifest", "manifest_sha256", "statistical_spec") if getattr(request, n)]
    if given and (request.registration or request.sha256):
        raise UsageError(
            "compare_preflight takes a registration or a holdout source, not both",
            code="plan_invalid",
            location="--manifest",
        )
    if given or request.selection_seed != -1 or request.per_group:
        return _run_holdout(request)
    for name in ("registration", "sha256"):
        if not getattr(request, name):
            flag = f"--{name}"
            raise UsageError(
                f"compare_preflight needs {flag}", code="option_value_missing", location=flag
            )
    # Verified as compare_run verifies it: the raw sha256, the decoding, both builds.
    path = Path(request.registration)
    registration, digest, raw = read_registration(path, request.sha256)
    checkouts = [Path(registration.r0.path), Path(registration.rpack.path)]
    for label, build in registration.builds.items():
        verify_build(label, build)
    chosen = request.output
    output = (
        check_output(chosen, checkouts)
        if chosen
        else resolve_out_path() / "preflight" / digest[:16]
    )
    with progress("compare_preflight") as tick:
        where, report = run_preflight(
            registration_slots(registration, request),
            PreflightSource(kind="registration", path=str(path), sha256=raw, digest=digest),
            output,
            forbidden=checkouts,
            check_code=lambda label: verify_build(label, registration.builds[label]),
            progress=tick,
        )
    return _summary(report, where)


def registration_slots(registration: Registration, request: Request) -> list[PreflightSlot]:
    """The registration's slots; an external registration's are its roles x the selected
    traces of its frozen holdout (verified in the request's store), each handed the
    frozen trace's bytes and prepared by the role's registered build.

    Raises:
        HoldoutError: the registered source is not frozen in the store, or no longer
            verifies.
    """
    import msgspec
    from msgspec import UNSET

    from continuity.plan.holdout_plan import holdout_choice
    from continuity.roles.register_holdout import held_request
    from continuity.roles.table import SOULS
    from continuity.runner.preflight.child import TraceInput
    from continuity.runner.preflight.run import registered_slots
    from continuity.store import Store

    held = registration.workload.holdout
    if held is UNSET:
        return registered_slots(registration, SOULS)
    store = Store(request.store or None)
    choice = holdout_choice(store, held_request(held), lookup=True)
    assert choice is not None
    traces = {t.trace_id: t for t in choice.traces}
    slots = registered_slots(registration, SOULS, list_traces=lambda suite: list(traces))
    return [
        msgspec.structs.replace(
            slot,
            trace=TraceInput(
                key=traces[slot.trace_id].key,
                digest=traces[slot.trace_id].digest,
                data=store.get_blob(traces[slot.trace_id].digest),
            ),
        )
        for slot in slots
    ]


def _run_holdout(request: ComparePreflightRequest) -> str:
    """The holdout form: the selected traces under every role, prepared by this checkout."""
    from continuity.progress import progress
    from continuity.runner.preflight.run import run_preflight

    slots, source = _holdout_slots(request)
    output = _holdout_output(request, source)
    with progress("compare_preflight") as tick:
        where, report = run_preflight(slots, source, output, progress=tick)
    return _summary(report, where)


def _summary(report: PreflightReport, where: Path) -> str:
    """The preflight's summary; printed first, then raised, when a slot failed.

    Raises:
        CheckpointError: `preflight_failure`'s code.
    """
    from continuity.runner.preflight.run import preflight_failure, summary_lines

    lines = summary_lines(report, where)
    failure = preflight_failure(report, where)
    if failure is not None:
        print("\n".join(lines), flush=True)
        raise failure
    return "\n".join(lines)
