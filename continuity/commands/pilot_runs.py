"""``doit pilot_register``, ``doit compare_pilot`` and ``doit pilot_smoke``: a cap-gated
pilot registered over an external registration, run (gated), and its flow proved on
loopback.

`pilot_register`, `compare_pilot` and `pilot_smoke` are the entry points;
`rules/pilot.py` declares their options and calls them with the options typed once
(`PilotRegisterRequest`, `ComparePilotRequest`, `PilotSmokeRequest`). The pilot
registration enables no paid route; ``doit estimate --registration PILOT --sha256 S``
reads it (`continuity.roles.pilot.registration`). ``doit compare_pilot`` refuses while
the release gate is closed before any file an option names is read.
"""

from __future__ import annotations

from continuity.errors import UsageError
from continuity.requests import Request

__all__ = [
    "NO_SEED",
    "ComparePilotRequest",
    "PilotRegisterRequest",
    "PilotSmokeRequest",
    "compare_pilot",
    "pilot_register",
    "pilot_smoke",
]

NO_SEED = -1  # ``--schedule-seed`` not given (it has no default)


class PilotRegisterRequest(Request, frozen=True, kw_only=True):
    """``doit pilot_register``: the external registration and its raw sha256, the cap C
    in USD, the schedule seed (-1: not given), the output directory and the pricing
    catalog ("": the checked-in one)."""

    registration: str = ""
    sha256: str = ""
    cap_usd: str = ""
    schedule_seed: int = NO_SEED
    output: str = ""
    pricing: str = ""


class ComparePilotRequest(Request, frozen=True, kw_only=True):
    """``doit compare_pilot``: the pilot registration and its raw sha256, the owner's
    authorization, the output root, the reader's credentials, the pricing catalog, the
    store, and whether only to show the bindings an authorization must carry."""

    registration: str = ""
    sha256: str = ""
    authorization: str = ""
    output: str = ""
    credentials: str = ""
    pricing: str = ""
    show_bindings: bool = False


class PilotSmokeRequest(Request, frozen=True, kw_only=True):
    """``doit pilot_smoke``: it takes no option (the smoke runs in private temporary
    directories; the store and output directory are not read)."""


def pilot_register(request: PilotRegisterRequest) -> str:
    """``doit pilot_register``: wrap the external registration and a cap-gated pilot
    descriptor; the summary names the pilot registration and its sha256.

    Raises:
        UsageError: ``option_value_missing`` (a required option, in the option table's
            order, then ``--schedule-seed``); and `register_pilot`'s codes.
    """
    from pathlib import Path

    from continuity.roles.pilot.registration import register_pilot

    for name in ("registration", "sha256", "cap_usd", "output"):
        if not getattr(request, name):
            flag = f"--{name.replace('_', '-')}"
            raise UsageError(
                f"pilot_register needs {flag}", code="option_value_missing", location=flag
            )
    seed = request.schedule_seed
    if seed == NO_SEED:
        raise UsageError(
            "pilot_register needs --schedule-seed N (no default: the schedule is preregistered)",
            code="option_value_missing",
            location="--schedule-seed",
        )
    pricing = request.pricing
    done = register_pilot(
        Path(request.registration),
        request.sha256,
        request.cap_usd,
        seed,
        request.output,
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


def compare_pilot(request: ComparePilotRequest) -> str:
    """``doit compare_pilot``: run the capped real lookup pilot (or, with
    ``--show-bindings``, print the bindings its authorization must carry and stop).

    Raises:
        SpendError: ``lookup_pilot_real_route_unavailable`` while the release gate is
            closed, before any file an option names is read.
        UsageError: ``option_value_missing`` (``--authorization`` is not needed to show
            the bindings); and the pilot route's codes.
    """
    from pathlib import Path

    from continuity.spend.gate import require_real_route

    require_real_route()  # before any file an option names is read
    from continuity.roles.pilot.run import PilotRequest, run_compare_pilot
    from continuity.store import Store

    needed = ["registration", "sha256", "output", "credentials"]
    for name in needed if request.show_bindings else [*needed, "authorization"]:
        if not getattr(request, name):
            raise UsageError(
                f"compare_pilot needs --{name}", code="option_value_missing", location=f"--{name}"
            )
    pricing = request.pricing
    pilot = PilotRequest(
        registration=Path(request.registration),
        sha256=request.sha256,
        authorization=Path(request.authorization or "-"),
        output=Path(request.output),
        credentials=Path(request.credentials),
        pricing=Path(pricing) if pricing else None,
    )
    if request.show_bindings:
        import msgspec

        from continuity.roles.pilot.run import expected_bindings

        bindings = expected_bindings(pilot)
        return msgspec.json.format(msgspec.json.encode(bindings)).decode()
    report = run_compare_pilot(Store(request.store or None), pilot)
    counts = report.counts
    return (
        f"compare_pilot: {counts.visited} of {counts.planned} slots visited, "
        f"{counts.completed} completed, stop {report.stop or 'none'}, total "
        f"${report.total} of the cap ${report.cap}\n"
        f"report at {Path(request.output) / 'report.json'}"
    )


def pilot_smoke(request: PilotSmokeRequest) -> str:
    """``doit pilot_smoke``: prove the pilot controller/child flow on loopback (lost
    streams, arrival kill); the summary counts the proofs. `request` holds no option
    (the task has none)."""
    from continuity.roles.pilot.smoke import run_smoke

    lines = run_smoke()
    return f"pilot smoke: {len(lines)} proofs passed (faux domain, loopback only)"
