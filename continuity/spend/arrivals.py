"""The child's arrival witness: every guarded request, persisted before it leaves.

A probe child wraps its one send (`witnessed`): each request that reaches the send
boundary, after its permit was consumed and before its bytes leave, is first written,
private and synced, to ``arrivals/<slot>/<seq>.json``: the slot, the child's PID, the
request's sequence number in the slot (1, 2, ...) and the sha256 of its body. Nothing
else: no URL, header or content. A witness that cannot be written stops the request
before it is sent (``lookup_arrival_persist_failed``); its consumed hold stays counted.

The controller reads the witnesses back when the slot ends (`check_arrivals`): each must
be a sound record of this slot and this child, the sequence numbers must run 1..k
without a gap, k may not exceed the permits the slot consumed, and a slot the child
reports completed must have one witness per consumed permit. Anything else is
``lookup_arrival_receipt_invalid``, a sticky stop. These are the child's own failures,
distinct from the controller's persistence and receipt codes.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from pathlib import Path

import httpx

from continuity.errors import SpendError
from continuity.spend.private import read_private, write_new
from continuity.spend.transport import Send

__all__ = ["ARRIVALS", "ARRIVAL_INVALID", "check_arrivals", "witnessed"]

ARRIVALS = "arrivals"
ARRIVAL_INVALID = "lookup_arrival_receipt_invalid"


def witnessed(send: Send, root: Path, slot_id: str) -> Send:
    """`send`, each request first witnessed on disk (module doc)."""
    folder = root / ARRIVALS / slot_id
    numbers = itertools.count(1)

    async def witness_then_send(request: httpx.Request) -> httpx.Response:
        seq = next(numbers)
        record = {
            "slot": slot_id,
            "pid": os.getpid(),
            "seq": seq,
            "body_sha256": hashlib.sha256(request.content).hexdigest(),
        }
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_new(folder / f"{seq}.json", json.dumps(record, sort_keys=True).encode())
        except OSError as exc:
            raise SpendError(
                f"the arrival witness cannot be written ({exc.strerror}); nothing was sent",
                code="lookup_arrival_persist_failed",
                location=f"{slot_id}:{seq}",
                outcome="integrity_stop",
            ) from None
        return await send(request)

    return witness_then_send


def check_arrivals(
    root: Path, slot_id: str, pid: int, *, consumed: int, completed: bool
) -> str | None:
    """None when the slot's witnesses are sound (module doc), else
    ``lookup_arrival_receipt_invalid``."""
    folder = root / ARRIVALS / slot_id
    names = sorted(os.listdir(folder)) if folder.is_dir() else []
    found: set[int] = set()
    for name in names:
        data = read_private(folder / name)
        try:
            record = json.loads(data) if data is not None else None
        except ValueError:
            record = None
        if not (
            isinstance(record, dict)
            and record.get("slot") == slot_id
            and record.get("pid") == pid
            and isinstance(record.get("seq"), int)
            and name == f"{record['seq']}.json"
        ):
            return ARRIVAL_INVALID  # not a witness of this slot's child
        found.add(record["seq"])
    if found != set(range(1, len(found) + 1)) or len(found) > consumed:
        return ARRIVAL_INVALID  # a gap, or more witnesses than consumptions
    if completed and len(found) != consumed:
        return ARRIVAL_INVALID  # a completed slot lacks a consumed permit's witness
    return None
