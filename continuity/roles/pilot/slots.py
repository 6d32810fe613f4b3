"""A registered pilot's slots and boundaries, from its holdout selection and real
checkpoints (`doit compare_pilot`).

`pilot_bindings` is what an authorization for this pilot must bind
(`continuity.spend.authorization.Bindings`), computed from the verified pilot
registration, the output root and the credentials location; an owner writes the
authorization over exactly these values.

`prepare_pilot` turns the verified registration into the controller's slots:

- **slots**: every ``feasible`` slot of the registered fixed-budget sizing (role x
  selected conversation x probe, in the sizing's order), with an opaque id
  (``s<n>-<role>``), its conversation/probe block, the probe's question as a lookup
  probe asks it (`continuity.probes.protocol.probe_turn_text`) and its role's arm;
- **checkpoints**: the selected traces are loaded from the frozen holdout in the store
  (`continuity.plan.holdout_plan.holdout_choice`, checked against the registered
  selection) and each (trace, arm) is replayed offline into a lookup checkpoint
  (`continuity.harness.checkpoints.build_checkpoint`, a scripted model, no credential)
  in a private preparation store;
- **ConversationHistory**: each checkpoint's retained records are copied out and
  served on 127.0.0.1 over MCP for the pilot's duration, one endpoint per (trace, arm);
- **sources**: each slot's `continuity.roles.pilot.prepare.CheckpointSource`, from
  which its credential-free preparation child crosses the boundary;
- **builds**: each slot's children run under its role's registered build (R0's or
  Rpack's interpreter, `BuildReceipt.python`), so an Rpack role's pack is rendered by
  Rpack's code; the route verified both builds first (`run.check_controller`). A
  build exported before the preparer moved into `continuity/roles/pilot/` runs its
  own earlier module (`PilotSlot.preparer`).

Codes (`RoleError`): ``lookup_pilot_registration_invalid`` (the store's holdout
selection is not the registered one, or the sizing names a trace, probe or role it
does not hold); the holdout's and the checkpoint's own codes.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from continuity.digest import value_digest
from continuity.errors import RoleError, SpendError
from continuity.roles.pilot.prepare import CheckpointSource
from continuity.roles.pilot.registration import VerifiedPilot
from continuity.spend.assumptions import CATALOG_BOUNDED_VERSION
from continuity.spend.authorization import Bindings
from continuity.spend.contract import SOL_CONTRACT
from continuity.spend.controller import PilotSlot
from continuity.spend.descriptor import descriptor_digest
from continuity.spend.safety import BOUNDARY_ARMS
from continuity.store import Store
from continuity.traces.schema import Trace

if TYPE_CHECKING:
    from continuity.roles.register_build import BuildReceipt

__all__ = [
    "FEASIBLE",
    "PreparedPilot",
    "lookup_checkpoint",
    "pilot_bindings",
    "prepare_pilot",
    "reader_effort",
    "selected_traces",
]

FEASIBLE = "feasible"  # the sizing class a pilot plans (`continuity.lookup.fixed_budget`)


@dataclass(frozen=True)
class PreparedPilot:
    """The controller's slots, each with its ConversationHistory URL and source."""

    slots: tuple[PilotSlot, ...]


def reader_effort(verified: VerifiedPilot) -> str:
    """The effort the reader's requests carry: the registration's for a vendor reader,
    Sol's own contract's for Sol."""
    if verified.pilot.descriptor.assumptions.version == CATALOG_BOUNDED_VERSION:
        return verified.registration.workload.effort
    return SOL_CONTRACT.effort


def pilot_bindings(
    verified: VerifiedPilot, output_root: Path, credentials: Path, controller_revision: str
) -> Bindings:
    """What an authorization of this pilot binds (see the module doc)."""
    registration = verified.registration
    descriptor = verified.pilot.descriptor

    def build(name: str) -> str:
        return value_digest(msgspec.to_builtins(registration.builds.get(name)))

    return Bindings(
        registration_sha256=verified.sha256,
        registration_digest=value_digest(msgspec.to_builtins(verified.pilot)),
        controller_revision=controller_revision,
        r0_code=registration.r0.tree,
        r0_build=build("r0"),
        rpack_code=registration.rpack.tree,
        rpack_build=build("rpack"),
        protocol=registration.protocol,
        catalog=descriptor.catalog.digest,
        policy=verified.budget.budget.policy_sha256,
        source=verified.held.manifest_sha256,
        selection=descriptor.schedule.selection_digest,
        reader=registration.workload.reader_model,
        effort=reader_effort(verified),
        descriptor=descriptor_digest(descriptor),
        output_root=str(output_root),
        credentials_path=str(credentials),
    )


def selected_traces(store: Store, verified: VerifiedPilot) -> dict[str, tuple[str, str]]:
    """trace id -> (trace key, blob digest) of the registered selection, from the store.

    Raises:
        RoleError: ``lookup_pilot_registration_invalid``; HoldoutError: the holdout's.
    """
    from continuity.plan.holdout_plan import holdout_choice
    from continuity.roles.register_holdout import held_request

    held = verified.held
    choice = holdout_choice(store, held_request(held), lookup=True)
    if choice is None or choice.binding != held.selection:
        raise RoleError(
            "the store's holdout selection is not the registered one",
            code="lookup_pilot_registration_invalid",
            location="selection",
        )
    return {t.trace_id: (t.key, t.digest) for t in choice.traces}


@contextlib.contextmanager
def _history(retained: Path) -> Iterator[str]:
    """Serve the retained records at `retained` over MCP on 127.0.0.1; yield the URL."""
    from continuity.memory.retained import RetainedStore
    from continuity.servers.history import history_in_thread

    store = RetainedStore(retained, readonly=True)
    try:
        with history_in_thread(store) as url:
            yield url
    finally:
        store.close()


def lookup_checkpoint(
    store: Store, trace: Trace, selected: tuple[str, str], arm: str, models: tuple[str, str]
) -> str:
    """Replay `trace` (its key and digest `selected`) into its lookup checkpoint for `arm`
    (offline); the checkpoint's key."""
    from continuity.arms import ARMS, replay_config_for
    from continuity.harness.checkpoints import build_checkpoint

    key, digest = selected
    config = replay_config_for(ARMS[arm], "lookup-allowed-v1", models)
    return build_checkpoint(store, trace, trace_key=key, trace_digest=digest, config=config).key


def _slot_trace(
    store: Store,
    private: Store,
    selected: Mapping[str, tuple[str, str]],
    trace_id: str,
    traces: dict[str, Trace],
) -> Trace:
    """A selected trace, loaded once (into `traces`) and copied into the private store."""
    from continuity.traces.validate import load_trace

    if trace_id not in traces:
        data = store.get_blob(selected[trace_id][1])
        private.put_blob(data)
        traces[trace_id] = load_trace(data, source=trace_id)
    return traces[trace_id]


# The preparation module a build's export holds, by path: the config's (None), or the
# name it had before it moved into this package.
_PREPARERS = {
    "continuity/roles/pilot/prepare.py": None,
    "continuity/runner/pilot_prepare.py": "continuity.runner.pilot_prepare",
}


def _preparer_of(build: BuildReceipt | None) -> str | None:
    """The preparation module `build` holds when it is not the config's (None: the
    config's, or no build: this controller's own code)."""
    if build is None:
        return None
    for path, module in _PREPARERS.items():
        if path in build.files:
            return module
    return None


@contextlib.contextmanager
def prepare_pilot(store: Store, verified: VerifiedPilot, scratch: Path) -> Iterator[PreparedPilot]:
    """The pilot's slots, with their checkpoints in a private store under `scratch` and
    their ConversationHistory endpoints served until the context ends.

    Raises:
        RoleError: ``lookup_pilot_registration_invalid``; and the holdout's, the
            trace's and the checkpoint's codes.
    """
    from continuity.harness.checkpoints import fork
    from continuity.harness.workspace import Workspace
    from continuity.lookup.reader import binding_models
    from continuity.probes.protocol import probe_turn_text

    selected = selected_traces(store, verified)
    models = binding_models(verified.registration.workload.reader_binding)
    roles = {role.name: role for role in verified.budget.roles}
    private = Store(scratch / "store")
    terms = verified.budget.budget
    with contextlib.ExitStack() as stack:
        served: dict[tuple[str, str], tuple[str, str]] = {}  # (trace, arm) -> (key, url)
        slots: list[PilotSlot] = []
        traces: dict[str, Trace] = {}
        for slot in (s for s in verified.budget.slots if s.classification == FEASIBLE):
            where = f"sizing:{slot.role}/{slot.trace_id}/{slot.probe_id}"
            if slot.arm not in BOUNDARY_ARMS:  # before anything is consumed
                raise SpendError(
                    f"arm {slot.arm} has no prepared boundary a pilot can serve",
                    code="lookup_pilot_boundary_required",
                    location=where,
                    outcome="refused_pre_send",
                )
            if slot.trace_id not in selected or slot.role not in roles:
                raise RoleError(
                    "the sizing names a trace or role outside the selection",
                    code="lookup_pilot_registration_invalid",
                    location=where,
                )
            trace = _slot_trace(store, private, selected, slot.trace_id, traces)
            probe = next((p for p in trace.probes if p.probe_id == slot.probe_id), None)
            if probe is None:
                raise RoleError(
                    "the sizing names a probe the trace does not hold",
                    code="lookup_pilot_registration_invalid",
                    location=where,
                )
            pair = (slot.trace_id, slot.arm)
            if pair not in served:
                found = selected[slot.trace_id]
                key = lookup_checkpoint(private, trace, found, slot.arm, models)
                copy = scratch / f"retained-{len(served)}.sqlite3"
                with fork(private, key) as root:
                    shutil.copyfile(Workspace(root).retained_path, copy)
                served[pair] = (key, stack.enter_context(_history(copy)))
            role = roles[slot.role]
            source = CheckpointSource(
                store=str(private.root),
                checkpoint=served[pair][0],
                arm=slot.arm,
                soul_sha256=role.soul_sha256,
                soul_core_sha256=role.soul_core_sha256,
                models=models,
                call_budget=terms.calls,
                byte_budget=terms.bytes,
            )
            build = verified.registration.builds.get(role.code.lower())
            slots.append(
                PilotSlot(
                    slot_id=f"s{len(slots):03d}-{slot.role}",
                    role=slot.role,
                    block=f"{slot.trace_id}/{slot.probe_id}",
                    question=probe_turn_text(probe.text, probe.category),
                    arm=slot.arm,
                    history_url=served[pair][1],
                    source=msgspec.json.encode(source).decode(),
                    python=build.python if build is not None else None,
                    preparer=_preparer_of(build),
                )
            )
        yield PreparedPilot(slots=tuple(slots))
