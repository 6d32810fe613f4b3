"""Fault receipts: ``fault-before.json``, ``fault-after.json``, ``fault-final.json``.

They are content-free: process ids with their start identities (boot id and start
time, `continuity.spend.lease.process_start`), the signal, the confirmed loss (what the
harness observed: a refused or reset connection, or a process group with no member
left), the measured hold, the recovery action, the call a fault that must land under
one was aimed under (`InFlight`: its number, seen started before the signal, and whether
it was answered), and sha256 digests of the receipts the fault affected (unit files,
checkpoint records). No prompt, answer, path or output.
A receipt written before a failure is kept: a partial attempt stays inspectable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, TypeVar

import msgspec

from continuity.errors import InputError
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
from continuity.outputs import write_output
from continuity.spend.lease import process_start

__all__ = [
    "AFTER",
    "BEFORE",
    "FINAL",
    "Delivery",
    "FaultAfter",
    "FaultBefore",
    "FaultFinal",
    "InFlight",
    "Loss",
    "ProcessId",
    "identity",
    "read_receipt",
    "write_receipt",
]

BEFORE, AFTER, FINAL = "fault-before.json", "fault-after.json", "fault-final.json"
_T = TypeVar("_T")


class ProcessId(msgspec.Struct, frozen=True, kw_only=True):
    pid: int
    start: str  # boot id and start time: a reused PID is another process


class Loss(msgspec.Struct, frozen=True, kw_only=True):
    kind: Literal["connection_refused", "connection_reset", "group_gone"]
    observed: str  # what was probed: ``runner group`` or ``127.0.0.1:<port>``


class FaultBefore(msgspec.Struct, frozen=True, kw_only=True):
    case: str
    signal: str
    interval_s: float
    seed: int
    target: ProcessId  # the process the fault is aimed at, while it ran


class InFlight(msgspec.Struct, frozen=True, kw_only=True):
    """The call a fault was aimed under, from the killed server's own call log."""

    call: int  # its number in the server's log
    started: bool  # the server had received it before the signal was sent
    answered: bool  # the server had begun sending its answer before it died


class FaultAfter(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    killed: ProcessId
    signal: str
    loss: Loss
    hold_s: float  # measured: from the confirmed loss to the recovery's start
    recovery: str  # the action taken: ``rerun the same command``, ``restart the server``
    restarted: ProcessId
    in_flight: InFlight | None = None  # a case that kills a call in flight (`Case.in_flight`)


class Delivery(msgspec.Struct, frozen=True, kw_only=True):
    """One observation of something delivered, attributed by id."""

    kind: Literal["unit", "steer", "call"]
    id: str
    sha256: str  # the delivered bytes' digest (a steer: the consuming request's id)
    lost: bool = False  # a call sent whose answer never arrived (the connection was lost)


class FaultFinal(msgspec.Struct, frozen=True, kw_only=True):
    completed: bool  # the recovery finished the workload
    code: str | None  # the typed code the fault produced, when one is expected
    affected: dict[str, str]  # receipt name -> sha256
    deliveries: list[Delivery]
    store_verified: bool | None = None  # `doit verify` over the workload's store after it


def identity(pid: int) -> ProcessId | None:
    """`pid`'s identity while it runs, None once it is gone."""
    start = process_start(pid)
    return None if start is None else ProcessId(pid=pid, start=start)


def write_receipt(folder: Path, name: str, receipt: msgspec.Struct) -> None:
    """Write one receipt (atomic, synced), whatever happens next."""
    folder.mkdir(parents=True, exist_ok=True)
    write_output(folder / name, msgspec.json.format(msgspec.json.encode(receipt)))


def read_receipt(folder: Path, name: str, kind: type[_T]) -> _T | None:
    """A receipt, or None when it is missing or unreadable (a grader's input)."""
    path = folder / name
    if not os.path.isfile(path):
        return None
    try:
        return msgspec.json.decode(
            read_user_bytes(path, limit=DOCUMENT_MAX_BYTES, what="a receipt"), type=kind
        )
    except (OSError, InputError, msgspec.MsgspecError):
        return None
