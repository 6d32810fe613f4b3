"""`doit compare_preflight`: the offline preparation feasibility check of a registration."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict, Unpack

from continuity.graph import task_action
from rules.holdout import SELECTION_PARAMS, SOURCE_PARAMS
from rules.params import STORE, TaskSpec, param
from rules.roles import REGISTRATION_PARAMS

if TYPE_CHECKING:
    from pathlib import Path

    from continuity.roles.register import Registration
    from continuity.runner.preflight.run import PreflightSlot, PreflightSource


class PreflightOptions(TypedDict, total=False):
    """`doit compare_preflight`: a registration and its raw sha256, or a frozen holdout
    source and its selection; the report directory."""

    registration: str
    sha256: str
    output: str
    manifest: str
    manifest_sha256: str
    statistical_spec: str
    selection_seed: int
    per_group: int
    store: str


def _holdout_slots(options: PreflightOptions) -> tuple[list[PreflightSlot], PreflightSource]:
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

    store = Store(options.get("store") or None)
    choice = holdout_choice(store, {**options, "suite": HOLDOUT_SUITE}, lookup=True)
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


def _holdout_output(options: PreflightOptions, source: PreflightSource) -> Path:

    from continuity.outputs import check_new_directory, resolve_out_path

    chosen = options.get("output")
    if chosen:
        return check_new_directory(
            chosen, exists="preflight_output_exists", invalid="preflight_output_invalid"
        )
    digest = source.bindings["selection_digest"]
    return resolve_out_path() / "preflight" / f"holdout-{digest[:16]}"


def _preflight(**options: Unpack[PreflightOptions]) -> str:
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.outputs import resolve_out_path
    from continuity.progress import progress
    from continuity.roles.register import check_output
    from continuity.roles.run import read_registration
    from continuity.roles.run_launch import verify_build
    from continuity.runner.preflight.run import (
        PreflightSource,
        preflight_failure,
        run_preflight,
        summary_lines,
    )

    given = [n for n in ("manifest", "manifest_sha256", "statistical_spec") if options.get(n)]
    if given and (options.get("registration") or options.get("sha256")):
        raise UsageError(
            "compare_preflight takes a registration or a holdout source, not both",
            code="plan_invalid",
            location="--manifest",
        )
    if given or options.get("selection_seed", -1) != -1 or options.get("per_group"):
        return _run_holdout(options)
    for name in ("registration", "sha256"):
        if not options.get(name):
            flag = f"--{name}"
            raise UsageError(
                f"compare_preflight needs {flag}", code="option_value_missing", location=flag
            )
    # Verified as compare_run verifies it: the raw sha256, the decoding, both builds.
    path = Path(options["registration"])
    registration, digest, raw = read_registration(path, options["sha256"])
    checkouts = [Path(registration.r0.path), Path(registration.rpack.path)]
    for label, build in registration.builds.items():
        verify_build(label, build)
    chosen = options.get("output")
    output = (
        check_output(chosen, checkouts)
        if chosen
        else resolve_out_path() / "preflight" / digest[:16]
    )
    with progress("compare_preflight") as tick:
        where, report = run_preflight(
            _registered(registration, options),
            PreflightSource(kind="registration", path=str(path), sha256=raw, digest=digest),
            output,
            forbidden=checkouts,
            check_code=lambda label: verify_build(label, registration.builds[label]),
            progress=tick,
        )
    lines = summary_lines(report, where)
    failure = preflight_failure(report, where)
    if failure is not None:
        print("\n".join(lines), flush=True)
        raise failure
    return "\n".join(lines)


def _registered(registration: Registration, options: PreflightOptions) -> list[PreflightSlot]:
    """The registration's slots; an external registration's are its roles x the selected
    traces of its frozen holdout (verified in the options' store), each handed the frozen
    trace's bytes and prepared by the role's registered build.

    Raises:
        HoldoutError: the registered source is not frozen in the store, or no longer
            verifies.
    """
    import msgspec
    from msgspec import UNSET

    from continuity.plan.holdout_plan import holdout_choice
    from continuity.roles.register_holdout import held_options
    from continuity.roles.table import SOULS
    from continuity.runner.preflight.child import TraceInput
    from continuity.runner.preflight.run import registered_slots
    from continuity.store import Store

    held = registration.workload.holdout
    if held is UNSET:
        return registered_slots(registration, SOULS)
    store = Store(options.get("store") or None)
    choice = holdout_choice(store, held_options(held), lookup=True)
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


def _run_holdout(options: PreflightOptions) -> str:
    """The holdout form: the selected traces under every role, prepared by this checkout."""
    from continuity.progress import progress
    from continuity.runner.preflight.run import preflight_failure, run_preflight, summary_lines

    slots, source = _holdout_slots(options)
    output = _holdout_output(options, source)
    with progress("compare_preflight") as tick:
        where, report = run_preflight(slots, source, output, progress=tick)
    lines = summary_lines(report, where)
    failure = preflight_failure(report, where)
    if failure is not None:
        print("\n".join(lines), flush=True)
        raise failure
    return "\n".join(lines)


def task_compare_preflight() -> TaskSpec:
    """Prepare every registered slot once in a private root: tree limits, dry restore, times.

    Runs only the offline preparation child of each role x suite x trace slot (no probe,
    no model, no authorization; safe in CI) and exits non-zero with
    lookup_preparation_invalid when a slot is not eligible, after writing the report.
    Give either --registration FILE --sha256 S (the registered workload, each role in its
    registered build) or a frozen holdout source (--manifest F --manifest-sha256 S
    --statistical-spec F --selection-seed N [--per-group K]: every role x selected
    trace, prepared by this checkout from the frozen trace's bytes).

    Results: <output>/preflight.json (default $CONTINUITY_OUT/preflight/<digest16>/, or
    preflight/holdout-<selection digest16>/).
    """
    return {
        "actions": [task_action(_preflight)],
        "params": [
            *REGISTRATION_PARAMS,
            *SOURCE_PARAMS,
            *SELECTION_PARAMS,
            param(
                "output",
                str,
                "",
                "a new absolute directory for preflight.json, outside both checkouts "
                "(default $CONTINUITY_OUT/preflight/<registration digest16>)",
            ),
            STORE,
        ],
        "verbosity": 2,
    }
