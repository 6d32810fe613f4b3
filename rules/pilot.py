"""`doit pilot_register`: wrap an external registration and a cap-gated pilot descriptor.

The pilot registration it writes enables no paid route; ``doit estimate --registration
PILOT --sha256 S`` reads it (`continuity.roles.pilot.registration`).
"""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

from continuity.graph import task_action
from rules.params import STORE, IntOption, TaskSpec, param
from rules.plan import PRICING

__all__ = ["PilotOptions", "task_compare_pilot", "task_pilot_register"]

_NO_SEED = -1
# continuity.spend.descriptor.MAX_SAFE_SEED (a test checks they agree): the package is
# imported when the task runs, never when dodo.py is loaded.
_MAX_SEED = 2**53 - 1


class PilotOptions(TypedDict, total=False):
    """`doit pilot_register`: the external registration and its raw sha256, the cap C in
    USD, the schedule seed, the output directory and the pricing catalog."""

    registration: str
    sha256: str
    cap_usd: str
    schedule_seed: int
    output: str
    pricing: str


def _register(**options: Unpack[PilotOptions]) -> str:
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.roles.pilot.registration import register_pilot

    for name in ("registration", "sha256", "cap_usd", "output"):
        if not options.get(name):
            flag = f"--{name.replace('_', '-')}"
            raise UsageError(
                f"pilot_register needs {flag}", code="option_value_missing", location=flag
            )
    seed = options.get("schedule_seed", _NO_SEED)
    if seed == _NO_SEED:
        raise UsageError(
            "pilot_register needs --schedule-seed N (no default: the schedule is preregistered)",
            code="option_value_missing",
            location="--schedule-seed",
        )
    pricing = options.get("pricing")
    done = register_pilot(
        Path(options["registration"]),
        options["sha256"],
        options["cap_usd"],
        seed,
        options["output"],
        pricing=Path(pricing) if pricing else None,
    )
    descriptor = done.pilot.descriptor
    return (
        f"pilot_register: cap-gated-v1, cap C ${descriptor.cap_usd}, Rmax "
        f"${descriptor.assumptions.rmax}, schedule seed "
        f"{descriptor.schedule.seed}; wraps the external registration sha256 "
        f"{done.pilot.registration.sha256}; enables no paid route\n"
        f"sha256 {done.sha256}\n"
        f"pilot registration in {done.path}"
    )


def task_pilot_register() -> TaskSpec:
    """Register a cap-gated pilot over an external registration (enables no paid route)."""
    return {
        "actions": [task_action(_register)],
        "params": [
            param(
                "registration",
                str,
                "",
                "the external (v2) registration of doit compare_register, wrapped unchanged",
            ),
            param("sha256", str, "", "its raw sha256 (as compare_register printed it)"),
            param(
                "cap_usd",
                str,
                "",
                "the pilot's cap C in USD, whole cents, at least Rmax ($3.92)",
            ),
            param(
                "schedule_seed",
                IntOption(
                    "--schedule-seed", 0, _MAX_SEED, code="lookup_pilot_schedule_seed_invalid"
                ),
                _NO_SEED,
                f"the preregistered schedule seed, 0 to {_MAX_SEED} (no default)",
            ),
            param("output", str, "", "a new absolute directory outside both checkouts"),
            PRICING,
        ],
        "verbosity": 2,
    }


def _compare_pilot(**options: Any) -> str:
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.spend.gate import require_real_route

    require_real_route()  # before any file an option names is read
    from continuity.roles.pilot.run import PilotRequest, run_compare_pilot
    from continuity.store import Store

    needed = ["registration", "sha256", "output", "credentials"]
    for name in needed if options.get("show_bindings") else [*needed, "authorization"]:
        if not options.get(name):
            raise UsageError(
                f"compare_pilot needs --{name}", code="option_value_missing", location=f"--{name}"
            )
    pricing = options.get("pricing")
    request = PilotRequest(
        registration=Path(options["registration"]),
        sha256=options["sha256"],
        authorization=Path(options.get("authorization") or "-"),
        output=Path(options["output"]),
        credentials=Path(options["credentials"]),
        pricing=Path(pricing) if pricing else None,
    )
    if options.get("show_bindings"):
        import msgspec

        from continuity.roles.pilot.run import expected_bindings

        bindings = expected_bindings(request)
        return msgspec.json.format(msgspec.json.encode(bindings)).decode()
    report = run_compare_pilot(Store(options.get("store") or None), request)
    counts = report.counts
    return (
        f"compare_pilot: {counts.visited} of {counts.planned} slots visited, "
        f"{counts.completed} completed, stop {report.stop or 'none'}, total "
        f"${report.total} of the cap ${report.cap}\n"
        f"report at {Path(options['output']) / 'report.json'}"
    )


def task_compare_pilot() -> TaskSpec:
    """Run a capped real lookup pilot from a pilot registration (gated).

    While the release gate is closed it refuses with lookup_pilot_real_route_unavailable
    before any file an option names is read; open, it refuses a reader whose readiness
    is not fully known (lookup_pilot_reader_not_ready)."""
    return {
        "actions": [task_action(_compare_pilot)],
        "params": [
            param("registration", str, "", "the pilot registration (doit pilot_register)"),
            param("sha256", str, "", "its raw sha256"),
            param("authorization", str, "", "the owner-provisioned authorization file"),
            param("output", str, "", "a new absolute output root outside both checkouts"),
            param("credentials", str, "", "the reader's credentials file (read, never changed)"),
            PRICING,
            STORE,
            param(
                "show_bindings",
                bool,
                False,
                "print the bindings an authorization for this pilot must carry, and stop "
                "(reads the registration only: no lease, no output, no authorization)",
            ),
        ],
        "verbosity": 2,
    }


def _pilot_smoke() -> str:
    from continuity.roles.pilot.smoke import run_smoke

    lines = run_smoke()
    return f"pilot smoke: {len(lines)} proofs passed (faux domain, loopback only)"


def task_pilot_smoke() -> TaskSpec:
    """Prove the pilot controller/child flow on loopback: lost streams, arrival kill.

    Two faux pilots (real lease, consumption, durable account, probe children, socket
    IPC, containment) against the loopback wire server; no network, no real route."""
    return {
        "actions": [task_action(_pilot_smoke)],
        "params": [],
        "verbosity": 2,
    }
