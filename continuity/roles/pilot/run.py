"""`doit compare_pilot`: a capped real lookup pilot from a pilot registration.

`run_compare_pilot` is the whole route, in this order, and refuses at the first step
that fails:

1. **the release gate** (`continuity.spend.gate.require_real_route`), before any file an
   option names is read: ``lookup_pilot_real_route_unavailable`` while it is closed;
2. **the registration** (`continuity.roles.pilot.registration.read_pilot`): raw sha256, descriptor,
   the wrapped external registration, its sizing, schedule, deadlines and catalog;
3. **readiness**: the reader's output cap must be enforced, its input envelope known
   and its prices known (`continuity.plan.readiness.reader_readiness` over the sizing's
   feasible slots); anything else is ``lookup_pilot_reader_not_ready`` naming the
   components that block; then **the controller checkout** (`check_controller`): this
   checkout is the registered R0, both checkouts are at their revisions and clean, both
   builds unchanged, the protocol the role protocol;
4. **the output root**: absolute, new, outside every registered checkout and this one
   (`continuity.roles.register.check_output`); it is made private (0700);
5. **the authorization**: its bytes read without following a link (at most 1 MiB,
   ``lookup_authorization_invalid`` when unreadable) and validated against
   `continuity.roles.pilot.slots.pilot_bindings` (the shared validator of
   `continuity.spend.authorization`);
6. **preparation**: the slots, their checkpoints (offline) and their ConversationHistory
   endpoints (`continuity.roles.pilot.slots.prepare_pilot`), in a private scratch
   directory removed afterwards: nothing is consumed if the preparation fails;
7. **crash recovery** (`continuity.spend.recovery.acquire_recovered`: a crashed
   predecessor's recorded process groups are observed, never signalled, and a live one
   refuses the lease), **consumption** under the writer lease
   (`continuity.spend.consumption.consume`: the id is burned once, ever) and **the
   controller** (`continuity.spend.controller`), whose
   probe children mint the real send themselves (`continuity.spend.real_send`) and
   whose preparation children cross each slot's boundary over its real checkpoint
   (`continuity.roles.pilot.prepare`).

The report is the controller's ``report.json`` in the output root.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from continuity.errors import RoleError, SpendError
from continuity.lookup.pilot_settings import Route, entry_settings
from continuity.plan.guards import default_checkout
from continuity.providers.endpoint_facts import cap_ignored
from continuity.roles.pilot.registration import VerifiedPilot, read_pilot
from continuity.roles.pilot.slots import FEASIBLE, pilot_bindings, prepare_pilot, reader_effort
from continuity.roles.register import check_output
from continuity.spend.authorization import Bindings, validate_authorization
from continuity.spend.consumption import REAL_DOMAIN, consume
from continuity.spend.contract import contract_for
from continuity.spend.controller import PilotConfig, PilotReport, run_pilot
from continuity.spend.gate import require_real_route
from continuity.spend.recovery import acquire_recovered
from continuity.store import Store

__all__ = [
    "PREPARER",
    "PROBER",
    "PilotRequest",
    "attestation_inputs",
    "check_controller",
    "check_ready",
    "expected_bindings",
    "run_compare_pilot",
    "run_registered",
]

PREPARER = "continuity.roles.pilot.prepare"
PROBER = "continuity.sampling.pilot_probe"  # the probe child: the project's harness
_MAX_AUTHORIZATION = 1 << 20
_CHECKOUT = default_checkout()


@dataclass(frozen=True)
class PilotRequest:
    """What `doit compare_pilot` is given: the pilot registration and its raw sha256,
    the authorization file, the new output root and the reader's credentials file.
    `endpoint` replaces the contract's base URL (tests point it at loopback)."""

    registration: Path
    sha256: str
    authorization: Path
    output: Path
    credentials: Path
    pricing: Path | None = None
    endpoint: str | None = None


def check_controller(verified: VerifiedPilot, checkout: Path = _CHECKOUT) -> None:
    """The controller runs from the registered R0 checkout after verifying both clean
    checkouts, both builds and the protocol.

    Raises:
        RoleError: ``lookup_pilot_controller_invalid`` (this checkout is not the
            registered R0, the protocol is another, a build is missing),
            ``role_revision_invalid``, ``role_checkout_unknown``, ``role_checkout_dirty``,
            ``role_checkout_flags``, ``role_build_changed``.
    """
    from continuity.roles.guidance import ROLE_PROTOCOL
    from continuity.roles.register_git import check_clean, check_revision
    from continuity.roles.run_launch import verify_build

    registration = verified.registration
    r0, rpack = registration.r0, registration.rpack
    problem = None
    if os.path.realpath(checkout) != os.path.realpath(r0.path):
        problem = ("the controller runs from the registered R0 checkout", r0.path)
    elif registration.protocol != ROLE_PROTOCOL:
        problem = (f"the registration's protocol is not {ROLE_PROTOCOL}", "protocol")
    elif not {"r0", "rpack"} <= registration.builds.keys():
        problem = ("the registration lacks a build of R0 or Rpack", "builds")
    if problem is not None:
        raise RoleError(
            problem[0], code="lookup_pilot_controller_invalid", location=str(problem[1])
        )
    for registered, option in ((r0, "r0"), (rpack, "rpack")):
        check_revision(Path(registered.path), registered.revision, option)
        check_clean(Path(registered.path))
    for name in ("r0", "rpack"):
        verify_build(name, registration.builds[name])


def check_ready(verified: VerifiedPilot, ignored_cap: str | None = None) -> None:
    """The reader's readiness is fully known (module doc, step 3). `ignored_cap`: what
    the store recorded if the reader's endpoint was seen to write past its output cap
    (`continuity.providers.endpoint_facts`), which leaves the output cap unknown.

    Raises:
        RoleError: ``lookup_pilot_reader_not_ready``.
    """
    from continuity.plan.readiness import reader_readiness

    feasible = [s for s in verified.budget.slots if s.classification == FEASIBLE]
    readiness = reader_readiness(
        verified.registration.workload.reader_model,
        verified.price,
        turns_per_slot=verified.budget.budget.calls + 2,
        output_tokens_per_turn=verified.held.output_limit,
        peak_input_tokens=max((s.peak_request_tokens for s in feasible), default=0),
        input_tokens_per_slot=max((s.admission_tokens for s in feasible), default=0),
        ignored_cap=ignored_cap,
    )
    components = {
        "output_cap": readiness.output_cap,
        "input_envelope": readiness.input_envelope,
        "pricing": readiness.pricing,
    }
    blocking = {name: c for name, c in components.items() if c.status != "ready"}
    if blocking:
        said = "; ".join(f"{name} {c.status} ({c.detail})" for name, c in blocking.items())
        raise RoleError(
            f"the reader {readiness.reader} is not ready for a capped real pilot: {said}",
            code="lookup_pilot_reader_not_ready",
            location=",".join(blocking),
        )


def _authorization_bytes(path: Path) -> bytes:
    """Raises: SpendError ``lookup_authorization_invalid`` (unreadable, a link, too big)."""
    try:  # O_NONBLOCK: a FIFO cannot hang the open; only a regular file is read
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
            raw = os.read(fd, _MAX_AUTHORIZATION + 1) if regular else b""
        finally:
            os.close(fd)
    except OSError as exc:
        raise SpendError(
            f"the authorization cannot be read ({exc.strerror})",
            code="lookup_authorization_invalid",
            location="--authorization",
        ) from None
    if not regular:
        raise SpendError(
            "the authorization is not a regular file",
            code="lookup_authorization_invalid",
            location="--authorization",
        )
    if len(raw) > _MAX_AUTHORIZATION:
        raise SpendError(
            "the authorization is larger than 1 MiB",
            code="lookup_authorization_invalid",
            location="--authorization",
        )
    return raw


def _revision() -> str:
    """This (the controller's) checkout's commit label (`revision_label`)."""
    from continuity.runner.manifest import revision_label

    return revision_label(_CHECKOUT)


def _revalidate(raw: bytes, bindings: Bindings) -> None:
    validate_authorization(raw, expected=bindings)


def _checkouts(verified: VerifiedPilot) -> list[Path]:
    registration = verified.registration
    return [Path(registration.r0.path), Path(registration.rpack.path), _CHECKOUT]


def expected_bindings(request: PilotRequest) -> Bindings:
    """What an authorization for `request` must bind (``--show-bindings``): the pilot
    registration verified, the output root checked (nothing is made), the credentials
    path resolved; no authorization is read.

    Raises:
        RoleError, SpendError: `read_pilot`'s and `check_output`'s codes.
    """
    require_real_route()
    verified = read_pilot(request.registration, request.sha256, pricing=request.pricing)
    output = check_output(str(request.output), _checkouts(verified))
    return pilot_bindings(verified, output, request.credentials.resolve(), _revision())


def attestation_inputs(
    verified: VerifiedPilot, authorization: Path, output: Path, credentials: Path
) -> tuple[bytes, Bindings]:
    """The authorization file's bytes (read as step 5 reads them) and what it must bind
    for `verified` run into the new root `output` with `credentials`: the bindings this
    route validates against, so that the cap-gated readiness can check it
    (`continuity.plan.attestation`) before any run. Nothing is made or consumed.

    Raises:
        RoleError: `check_output`'s codes.
        SpendError: ``lookup_authorization_invalid`` (unreadable, a link, too big).
    """
    root = check_output(str(output), _checkouts(verified))
    raw = _authorization_bytes(authorization)
    return raw, pilot_bindings(verified, root, credentials.resolve(), _revision())


def run_registered(store: Store, request: PilotRequest, verified: VerifiedPilot) -> PilotReport:
    """Steps 4-7 of the module doc for a verified, ready pilot.

    Raises:
        RoleError: `check_output`'s and `prepare_pilot`'s codes.
        SpendError: the authorization's, the consumption's, the lease's and the
            controller's codes.
    """
    registry = verified.pilot.descriptor.assumptions
    settings = entry_settings(  # the resolved harness of every role's arm, checked first
        [role.arm for role in verified.registration.roles],
        reader=registry.model,
        judge=verified.registration.workload.judge,
        route=Route.of(contract_for(registry, effort=reader_effort(verified))),
    )
    checkouts = _checkouts(verified)
    output = check_output(str(request.output), checkouts)
    raw = _authorization_bytes(request.authorization)
    credentials = request.credentials.resolve()
    bindings = pilot_bindings(verified, output, credentials, _revision())
    handle = validate_authorization(raw, expected=bindings)
    with (
        tempfile.TemporaryDirectory(prefix="continuity-pilot-") as scratch,
        prepare_pilot(store, verified, Path(scratch)) as prepared,
    ):
        output.mkdir(mode=0o700, parents=False)  # only once the preparation succeeded
        lease, recovery = acquire_recovered(REAL_DOMAIN, output)  # crashed predecessors first
        try:
            # one run per authorization: its transport cache keys never repeat a run's
            run_id = "pilot-" + hashlib.sha256(handle.authorization_id.encode()).hexdigest()[:16]
            claim = consume(
                domain=REAL_DOMAIN,
                authorization_id=handle.authorization_id,
                raw_sha256=handle.raw_sha256,
                output_root=output,
                run_id=run_id,
                epoch=secrets.token_hex(8),
                lease=lease,
                revalidate=lambda: _revalidate(raw, bindings),
                checkouts=checkouts,
                identity=handle.identity,  # burned by what is authorized, not its spelling
            )
            contract = contract_for(registry, effort=reader_effort(verified))
            config = PilotConfig(
                run_id=run_id,
                root=str(output),
                slots=prepared.slots,
                seed=verified.pilot.descriptor.schedule.seed,
                cap=verified.pilot.descriptor.cap_usd,
                base_url=request.endpoint or contract.base_url,
                credentials=str(credentials),
                history_url="",  # every slot names its own
                authorization=raw,
                bindings=bindings,
                registration=str(request.registration.resolve()),
                preparer=PREPARER,
                prober=PROBER,
                recovery=recovery.summary(),
                assumptions=registry,
                effort=contract.effort,
                settings=settings,
            )
            return run_pilot(config, lease, claim)
        finally:
            lease.release()


def run_compare_pilot(store: Store, request: PilotRequest) -> PilotReport:
    """The whole route (module doc, steps 1-7).

    Raises:
        SpendError: ``lookup_pilot_real_route_unavailable`` first; then every code of
            the steps.
        RoleError: the registration's, readiness's and the output's codes.
    """
    require_real_route()  # before any file an option names is read
    verified = read_pilot(request.registration, request.sha256, pricing=request.pricing)
    contract = contract_for(verified.pilot.descriptor.assumptions, effort=reader_effort(verified))
    seen = cap_ignored(store, request.endpoint or contract.base_url, contract.model)
    check_ready(verified, seen)
    check_controller(verified)
    return run_registered(store, request, verified)
