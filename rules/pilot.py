"""`doit pilot_register`, `doit compare_pilot` and `doit pilot_smoke`: their options (typed
as the requests of `continuity.commands.pilot_runs`), and one call each.

The pilot registration it writes enables no paid route; ``doit estimate --registration
PILOT --sha256 S`` reads it (`continuity.roles.pilot.registration`).
"""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import STORE, IntOption, TaskSpec, param
from rules.plan import PRICING

__all__ = ["task_compare_pilot", "task_pilot_register", "task_pilot_smoke"]

_NO_SEED = -1  # continuity.commands.pilot_runs.NO_SEED: --schedule-seed not given
# continuity.spend.descriptor.MAX_SAFE_SEED (a test checks they agree): the package is
# imported when the task runs, never when dodo.py is loaded.
_MAX_SEED = 2**53 - 1


def _register(**options: Any) -> str:
    from continuity.commands.pilot_runs import PilotRegisterRequest, pilot_register

    return pilot_register(PilotRegisterRequest.of(options))


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
    from continuity.commands.pilot_runs import ComparePilotRequest, compare_pilot

    return compare_pilot(ComparePilotRequest.of(options))


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
    from continuity.commands.pilot_runs import PilotSmokeRequest, pilot_smoke

    return pilot_smoke(PilotSmokeRequest())


def task_pilot_smoke() -> TaskSpec:
    """Prove the pilot controller/child flow on loopback: lost streams, arrival kill.

    Two faux pilots (real lease, consumption, durable account, probe children, socket
    IPC, containment) against the loopback wire server; no network, no real route."""
    return {
        "actions": [task_action(_pilot_smoke)],
        "params": [],
        "verbosity": 2,
    }
