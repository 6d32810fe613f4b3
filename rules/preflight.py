"""`doit compare_preflight`: the offline preparation feasibility check of a registration."""

from __future__ import annotations

from typing import TypedDict, Unpack

from continuity.graph import task_action
from rules.params import TaskSpec, param
from rules.roles import REGISTRATION_PARAMS


class PreflightOptions(TypedDict, total=False):
    """`doit compare_preflight`: the registration, its raw sha256, the report directory."""

    registration: str
    sha256: str
    output: str


def _preflight(**options: Unpack[PreflightOptions]) -> str:
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.outputs import resolve_out_path
    from continuity.progress import progress
    from continuity.roles.register import check_output
    from continuity.roles.run import read_registration
    from continuity.roles.run_launch import verify_build
    from continuity.roles.table import SOULS
    from continuity.runner.preflight import (
        PreflightSource,
        preflight_failure,
        registered_slots,
        run_preflight,
        summary_lines,
    )

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
            registered_slots(registration, SOULS),
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


def task_compare_preflight() -> TaskSpec:
    """Prepare every registered slot once in a private root: tree limits, dry restore, times.

    Runs only the offline preparation child of each role x suite x trace slot (no probe,
    no model, no authorization; safe in CI) and exits non-zero with
    lookup_preparation_invalid when a slot is not eligible, after writing the report.

    Results: <output>/preflight.json (default $CONTINUITY_OUT/preflight/<digest16>/).
    """
    return {
        "actions": [task_action(_preflight)],
        "params": [
            *REGISTRATION_PARAMS,
            param(
                "output",
                str,
                "",
                "a new absolute directory for preflight.json, outside both checkouts "
                "(default $CONTINUITY_OUT/preflight/<registration digest16>)",
            ),
        ],
        "verbosity": 2,
    }
