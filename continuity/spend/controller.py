"""The pilot controller: one detached probe child per slot, lockstep, contained.

`run_pilot` runs a consumed pilot (the writer lease held, the consumption pair
verified: `continuity.spend.consumption.verify_consumption`) over a seeded schedule, one
slot at a time (concurrency one, no spares, retry, resume or substitution):

1. **schedule**: slots are grouped in conversation/probe blocks (in the given order)
   and the roles of each block are interleaved by a seeded sha256 rank
   (`seeded_schedule`); each slot gets a unique ASCII transport cache key of at most 64
   characters (`continuity.spend.safety.allocate_cache_keys`). The schedule, the keys
   and the epoch are journaled before any launch;
2. **launch**: the slot is journaled as visited, then its child starts in a new session
   (its own process group) with one end of a socket pair
   (`continuity.spend.pilot_child`'s checks, run as `PilotConfig.prober`: the probe
   in the project's harness, `continuity.sampling.pilot_probe`); it must report
   ``ready`` in time. Every child
   (preparation and probe) is journaled as ``launched`` (PID, start identity, group)
   before it is told anything, so a successor's recovery can observe it
   (`continuity.spend.recovery`);
3. **exchanges** (`continuity.spend.ipc`): ``admit``, ``consume``, ``settle`` and
   ``stop`` are applied to the durable account (`continuity.spend.durable`) and
   persisted before the reply; settlement stays legal after a stop, admission never;
4. **done**: the child reports its terminal; the controller persists the group's
   membership, replies ``done-ack``, waits for the child to exit and contains the group
   (`continuity.spend.containment`): survivors are ``lookup_worker_lost``, a group no
   proven signal can end is ``lookup_containment_unreconciled`` (absorbing);
5. **a broken exchange** (timeout, disconnect, integrity): the controller stops the
   account, allows the 250 ms settle grace and contains the group before any other slot
   can start;
6. **the receipt**: the controller decides the slot's terminal from its own records (a
   child cannot claim "unadmitted" after an admission, nor "completed" for a request
   that was not settled) and writes the receipt (`continuity.spend.receipts`),
   journaling its sha256;
7. **stops**: a sticky account stop (``not_admitted_cap`` is a refusal, not a stop;
   ``lookup_repeated_loss`` is), more than 10 % invalid admitted slots, a broken
   exchange or containment end the run. The report is then aggregated from the
   receipts: opaque ids, hashes, fixed codes and numbers, never a path or an answer.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import msgspec

from continuity.errors import SpendError
from continuity.spend.arrivals import check_arrivals
from continuity.spend.assumptions import reservation
from continuity.spend.child_config import ChildConfig
from continuity.spend.consumption import REAL_DOMAIN, Claim, verify_consumption
from continuity.spend.containment import Containment, group_members
from continuity.spend.contract import callers_of, check_auxiliary_callers, contract_for
from continuity.spend.durable import DurablePermitSource
from continuity.spend.exchange import (
    SlotState,
    child_code,
    held_amount,
    serve_message,
    slot_terminal,
)
from continuity.spend.ipc import Channel
from continuity.spend.lease import Lease, process_start
from continuity.spend.permits import Settlement
from continuity.spend.preparation import PreparationRequest, Prepared, credential_free_environment
from continuity.spend.private import write_new
from continuity.spend.real_grant import RealGrant
from continuity.spend.receipts import (
    RECEIPT_SCHEMA,
    PilotCounts,
    ScheduledSlot,
    SlotReceipt,
    aggregate,
    invalid_stop,
    write_receipt,
)
from continuity.spend.recovery import journal_launch
from continuity.spend.safety import BOUNDARY_ARMS, allocate_cache_keys, settings_for
from continuity.spend.schedule import (
    Journal,
    PilotConfig,
    PilotReport,
    PilotSlot,
    seeded_schedule,
)

__all__ = [
    "SETTLE_GRACE_S",
    "PilotConfig",
    "PilotReport",
    "PilotSlot",
    "run_pilot",
    "seeded_schedule",
]

SETTLE_GRACE_S = 0.25
_CHILD_KINDS = ("admit", "consume", "settle", "stop", "done")


class _Controller:
    def __init__(self, config: PilotConfig, lease: Lease, claim: Claim) -> None:
        self.config = config
        self.lease = lease
        self.grant = _grant(config, claim)
        self.root = Path(config.root)
        self.journal = Journal(self.root / "controller-journal.jsonl")
        self.containment = Containment(self.root / "containment-journal.jsonl")
        self.source = DurablePermitSource.open(
            self.root / "account.sqlite3",
            Decimal(config.cap),
            reservation(config.assumptions),
            epoch=claim.epoch,  # the consumption's: claim, permits and IPC bind one epoch
        )
        self.schedule = seeded_schedule(config.slots, config.seed)
        self.keys = allocate_cache_keys(config.run_id, [s.slot_id for s in self.schedule])
        self.digests: dict[str, str] = {}
        self.stop: str | None = None
        self.me = (os.getpid(), process_start(os.getpid()) or "")
        self.model = config.assumptions.model.partition(":")[2]  # the guard contract's

    def _launched(self, process: subprocess.Popen[bytes], slot: str, role: str) -> str | None:
        """Journal a child's group before it is told anything (`journal_launch`)."""
        wait = self.config.exit_timeout
        return journal_launch(
            self.journal, self.containment, process, slot=slot, role=role, wait=wait
        )

    def _probe_environment(self, slot: PilotSlot) -> dict[str, str]:
        """A probe child's environment; a real one's bytecode goes to a private prefix
        in the output root (the real-send factory requires it: `real_checks`)."""
        environ = _child_environment(dict(os.environ), slot.python)
        if self.grant is None:
            return environ
        prefix = self.root / "pycache"
        prefix.mkdir(mode=0o700, exist_ok=True)
        return {**environ, "PYTHONPYCACHEPREFIX": str(prefix / slot.slot_id)}

    def _prepare(self, slot: PilotSlot) -> Prepared:
        """Run the slot's credential-free preparation child to its end, contain its
        group, journal its tuple and write the one-use proof (`continuity.spend.
        preparation`)."""
        process = subprocess.Popen(
            [slot.python or sys.executable, "-m", slot.preparer or self.config.preparer],
            stdin=subprocess.PIPE,
            cwd=self.root,  # never a checkout: its work tree is not imported
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=_child_environment(credential_free_environment(os.environ), slot.python),
        )
        start = self._launched(process, slot.slot_id, "prepare")  # it waits for stdin
        request = PreparationRequest(
            root=str(self.root),
            slot_id=slot.slot_id,
            arm=slot.arm,
            context=slot.context,
            source=slot.source,
        )
        assert process.stdin is not None
        process.stdin.write(msgspec.json.encode(request))
        process.stdin.close()
        _wait(process, self.config.exit_timeout)
        contained = self.containment.contain(process.pid, slot=f"{slot.slot_id}:prepare")
        boundary = self.root / "prepared" / f"{slot.slot_id}.json"
        if process.returncode != 0 or start is None or contained.code or not boundary.is_file():
            raise SpendError(
                "the preparation child did not finish cleanly",
                code=contained.code or "lookup_preparation_invalid",
                location=slot.slot_id,
                outcome="integrity_stop",
            )
        prepared = Prepared(
            slot=slot.slot_id,
            pid=process.pid,
            start=start,
            sha256=hashlib.sha256(boundary.read_bytes()).hexdigest(),
        )
        self.journal.add("prepared", **msgspec.to_builtins(prepared))
        write_new(boundary.with_suffix(".proof"), msgspec.json.encode(prepared))
        return prepared

    def _launch(
        self, slot: PilotSlot, prepared: Prepared
    ) -> tuple[subprocess.Popen[bytes], socket.socket]:
        mine, theirs = socket.socketpair()
        history = _history_of(slot, self.config)
        urls = [urlsplit(self.config.base_url), urlsplit(history)]
        allowed = tuple(
            (u.hostname or "", u.port or (443 if u.scheme == "https" else 80)) for u in urls
        )
        child = ChildConfig(
            fd=theirs.fileno(),
            run_id=self.config.run_id,
            epoch=self.source.epoch,
            slot_id=slot.slot_id,
            cache_key=self.keys[slot.slot_id],
            assigned=self.keys,
            role=slot.role,
            controller_pid=self.me[0],
            controller_start=self.me[1],
            root=str(self.root),
            account=str(self.root / "account.sqlite3"),
            base_url=self.config.base_url,
            allowed=allowed,
            credentials=self.config.credentials,
            question=slot.question,
            history_url=history,
            arm=slot.arm,
            settings=settings_for(self.config.settings, slot.arm, self.model, where="launch"),
            prepared=prepared,
            real=self.grant,
            assumptions=self.config.assumptions,
            effort=self.config.effort,
            timeout=self.config.message_timeout,
        )
        process = subprocess.Popen(
            [slot.python or sys.executable, "-m", self.config.prober],
            cwd=self.root,
            env=self._probe_environment(slot),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,  # its own process group: contained as one
        )
        theirs.close()
        try:
            self._launched(process, slot.slot_id, "probe")
        except SpendError:
            mine.close()
            raise
        assert process.stdin is not None
        process.stdin.write(msgspec.json.encode(child))
        process.stdin.close()
        return process, mine

    async def _exchanges(self, channel: Channel, slot: SlotState, planned: str) -> None:
        channel.expect("ready", timeout=self.config.ready_timeout)
        timeout = self.config.message_timeout
        while True:
            message = await anyio.to_thread.run_sync(
                functools.partial(channel.expect, *_CHILD_KINDS, timeout=timeout)
            )
            if message["kind"] == "done":
                child_code(message.get("code"))  # never a controller code
                slot.claim = message
                return
            if message["kind"] == "stop":
                code = child_code(message.get("code")) or "lookup_integrity_stop"
                await self.source.stop(code)
                channel.send("stopped")
                continue
            reply, fields = await serve_message(
                message, self.source, slot, planned, self.config.assumptions
            )
            channel.send(reply, **fields)
            # a consumed request streams until its own deadline before it settles
            consumed = reply == "consumed"
            timeout = self.config.request_timeout if consumed else self.config.message_timeout

    async def _grace(self, channel: Channel, slot: SlotState, planned: str) -> None:
        """The bounded settle grace: serve settlements already on their way, 250 ms."""
        deadline = time.monotonic() + SETTLE_GRACE_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = channel.expect("settle", timeout=left)
                reply, fields = await serve_message(
                    message, self.source, slot, planned, self.config.assumptions
                )
                channel.send(reply, **fields)
            except SpendError:
                return

    async def _retain_open(self, slot: SlotState, code: str) -> None:
        """Every permit still open: lost (nobody knows what was billed); legal after a
        stop, never an admission."""
        for request_id, permit in list(slot.open.items()):
            await self.source.settle(permit, Settlement(kind="lost", code=code), None, None)
            del slot.open[request_id]
            slot.settled.append("lost")
            slot.cost += held_amount(self.source, request_id)

    async def run_slot(self, planned: PilotSlot) -> None:
        self.journal.add("visit", slot=planned.slot_id)
        slot = SlotState()
        try:
            prepared = self._prepare(planned)
        except SpendError as error:
            slot.stop = self.stop = error.code
            self._receipt(planned, slot)
            return
        process, sock = self._launch(planned, prepared)
        channel = Channel(sock, epoch=self.source.epoch, slot=planned.slot_id, worker=process.pid)
        try:
            await self._exchanges(channel, slot, planned.slot_id)
            await self._retain_open(slot, "lookup_slot_terminal")  # none, when all settled
            members = [asdict(m) for m in group_members(process.pid)]
            self.journal.add("members", slot=planned.slot_id, members=members)
            channel.send("done-ack")
            await anyio.to_thread.run_sync(lambda: _wait(process, self.config.exit_timeout))
        except Exception as error:  # a broken exchange, or anything unforeseen: stop
            code = error.code if isinstance(error, SpendError) else "lookup_integrity_stop"
            slot.stop = code
            with contextlib.suppress(SpendError):
                await self.source.stop(code)
                await self._grace(channel, slot, planned.slot_id)
                await self._retain_open(slot, code)
        finally:
            channel.close()
            contained = self.containment.contain(process.pid, slot=planned.slot_id)
            _wait(process, self.config.exit_timeout)
        if contained.code is not None:
            slot.stop = slot.stop or contained.code
            self.stop = contained.code  # worker lost / unreconciled: absorbing
        completed = slot.stop is None and slot.claim.get("terminal") == "completed"
        arrival = check_arrivals(
            self.root, planned.slot_id, process.pid, consumed=slot.consumed, completed=completed
        )
        if arrival is not None:  # the child's witnesses do not match: a sticky stop
            slot.stop = slot.stop or arrival
            with contextlib.suppress(SpendError):
                await self.source.stop(arrival)
        self._receipt(planned, slot)
        if slot.stop is not None and self.stop is None:
            self.stop = slot.stop

    def _receipt(self, planned: PilotSlot, slot: SlotState) -> None:
        terminal, code = slot_terminal(slot)
        receipt = SlotReceipt(
            schema=RECEIPT_SCHEMA,
            run_id=self.config.run_id,
            epoch=self.source.epoch,
            slot_id=planned.slot_id,
            terminal=terminal,  # type: ignore[arg-type]
            admitted_requests=slot.admitted,
            code=code,
            input_tokens=slot.usage[0],
            output_tokens=slot.usage[1],
            cost_usd=str(slot.cost),
            answer_sha256=slot.claim.get("answer_sha256") if terminal == "completed" else None,
        )
        digest = write_receipt(self.root / "receipts", receipt)
        self.digests[planned.slot_id] = digest
        self.journal.add("receipt", slot=planned.slot_id, sha256=digest)

    def aggregate(self, visited: int) -> tuple[PilotCounts, list[SlotReceipt]]:
        """The receipts so far against the schedule and the journal's digests."""
        return aggregate(
            self.root / "receipts",
            [ScheduledSlot(slot_id=s.slot_id) for s in self.schedule],
            visited=visited,
            journal=self.digests,
            run_id=self.config.run_id,
        )

    async def run(self) -> PilotReport:
        self.lease.verify()
        # what recovery found before the lease was taken (`continuity.spend.recovery`)
        self.journal.add("recovery", **self.config.recovery)
        self.journal.add(
            "schedule",
            epoch=self.source.epoch,
            slots=[s.slot_id for s in self.schedule],
            keys=[self.keys[s.slot_id] for s in self.schedule],
        )
        visited = 0
        for planned in self.schedule:
            if self.stop is not None or self.source.account.stopped is not None:
                break
            visited += 1
            await self.run_slot(planned)
            self.stop = self.stop or invalid_stop(self.aggregate(visited)[0])
        self.stop = self.stop or self.source.account.stopped
        counts, receipts = self.aggregate(visited)
        report = PilotReport(
            run_id=self.config.run_id,
            epoch=self.source.epoch,
            stop=self.stop,
            cap=self.config.cap,
            total=str(self.source.account.total()),
            counts=counts,
            receipts=receipts,
        )
        write_new(self.root / "report.json", msgspec.json.format(msgspec.json.encode(report)))
        return report


def _child_environment(environ: dict[str, str], python: str | None) -> dict[str, str]:
    """A child's environment: under a registered build's interpreter, as given (its
    venv imports its own exported tree); under this interpreter, with this controller's
    own package first on the path, so the child runs exactly the controller's code."""
    if python is not None:
        return environ
    package_root = str(Path(__file__).resolve().parents[2])
    rest = environ.get("PYTHONPATH")
    return {**environ, "PYTHONPATH": package_root + (os.pathsep + rest if rest else "")}


def _history_of(slot: PilotSlot, config: PilotConfig) -> str:
    """The ConversationHistory endpoint a slot's child may reach."""
    return slot.history_url or config.history_url


def _grant(config: PilotConfig, claim: Claim) -> RealGrant | None:
    """A real-domain claim's grant for its children; a faux claim has none.

    Raises:
        SpendError: ``lookup_authorization_invalid`` (a real claim without the
            authorization bytes, bindings and pilot registration its children must
            re-validate).
    """
    if claim.domain != REAL_DOMAIN:
        return None
    if config.authorization is None or config.bindings is None or config.registration is None:
        raise SpendError(
            "a real-domain pilot needs its authorization bytes, bindings and registration",
            code="lookup_authorization_invalid",
            location="config.authorization",
            outcome="refused_pre_send",
        )
    header = contract_for(config.assumptions, effort=config.effort).account_header
    return RealGrant(
        raw_authorization=config.authorization,
        bindings=config.bindings,
        claim=claim,
        registration=config.registration,
        account_header=header,
    )


def _wait(process: subprocess.Popen[bytes], seconds: float) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):  # containment decides the rest
        process.wait(timeout=seconds)


def run_pilot(config: PilotConfig, lease: Lease, claim: Claim) -> PilotReport:
    """Run the pilot (module doc) under `lease`, once `claim` (its consumption pair)
    verifies; the report is also ``report.json``.

    Raises:
        SpendError: the consumption's (`verify_consumption`), the lease's, the
            account's (``lookup_cap_invalid``, ``lookup_account_invalid``) and the
            receipts' codes.
    """
    for slot in config.slots:  # at initialization, before anything else
        if slot.arm not in BOUNDARY_ARMS:
            raise SpendError(
                f"arm {slot.arm} has no prepared boundary a pilot can serve",
                code="lookup_pilot_boundary_required",
                location=slot.slot_id,
                outcome="refused_pre_send",
            )
        # the resolved settings of its arm's harness, checked before anything starts
        model = config.assumptions.model.partition(":")[2]
        settings = settings_for(config.settings, slot.arm, model, where="entry")
        check_auxiliary_callers(callers_of(settings), where="entry")
    verify_consumption(claim, lease)  # the fixed marker precedes any snapshot or launch
    if Path(claim.output_root) != Path(config.root):
        raise SpendError(
            "the claim binds another output root",
            code="lookup_consumption_invalid",
            location="root",
            outcome="integrity_stop",
        )
    controller = _Controller(config, lease, claim)
    try:
        return anyio.run(controller.run)
    finally:
        controller.source.close()
