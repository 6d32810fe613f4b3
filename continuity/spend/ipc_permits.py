"""The probe child's permit source: ``lookup-permit-v1`` over the lockstep channel.

Each operation is one exchange with the controller (`continuity.spend.ipc`): the child
sends ``admit``, ``consume``, ``settle`` or ``stop`` and expects its one reply. The
controller persists the hold, the consumption or the settlement in the durable account
(`continuity.spend.durable`) *before* it replies, and the child does not take the reply
on trust: it reads the account file back (read-only) and requires the row the reply
claims, bound to the same permit. A missing or different row is
``lookup_ack_unpersisted`` (an integrity stop).
"""

from __future__ import annotations

import json
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import msgspec

from continuity.errors import SpendError
from continuity.spend.ipc import Channel
from continuity.spend.permits import PERMIT_CONTRACT, Permit, Refusal, Settlement
from continuity.spend.usage import UsageRecord
from continuity.sqlite_open import READ_ONLY, open_db

__all__ = ["IPC_BRAND", "IpcPermitSource"]

IPC_BRAND = "continuity-ipc-permits-v1"


class IpcPermitSource:
    """Permits granted by the controller, each read back from its durable account."""

    brand = IPC_BRAND
    test_only = False
    contract = PERMIT_CONTRACT

    def __init__(self, channel: Channel, account: Path, *, timeout: float = 30.0) -> None:
        self.channel = channel
        self.account = account
        self.timeout = timeout

    async def _exchange(self, kind: str, reply: tuple[str, ...], **fields: Any) -> dict[str, Any]:
        self.channel.send(kind, **fields)
        return await anyio.to_thread.run_sync(
            lambda: self.channel.expect(*reply, timeout=self.timeout)
        )

    def _row(self, request_id: str) -> tuple[Any, ...] | None:
        try:
            db = open_db(self.account, READ_ONLY)
            try:
                row: tuple[Any, ...] | None = db.execute(
                    "SELECT state, permit, consumed FROM holds WHERE request_id = ?",
                    (request_id,),
                ).fetchone()
                return row
            finally:
                db.close()
        except sqlite3.Error:
            return None

    def _on_disk(self, permit: Permit, *, states: tuple[str, ...], consumed: bool | None) -> None:
        row = self._row(permit.request_id)
        sound = (
            row is not None
            and row[0] in states
            and row[1] is not None
            and json.loads(row[1]) == msgspec.to_builtins(permit)
            and (consumed is None or bool(row[2]) == consumed)
        )
        if not sound:
            raise SpendError(
                "the acknowledged change is not in the account",
                code="lookup_ack_unpersisted",
                location=permit.request_id,
                outcome="integrity_stop",
            )

    async def admit(
        self, request_id: str, slot_id: str, round: int, payload_digest: str, rmax: Decimal
    ) -> Permit | Refusal:
        reply = await self._exchange(
            "admit",
            ("admitted", "refused"),
            request_id=request_id,
            slot_id=slot_id,
            round=round,
            payload_digest=payload_digest,
            rmax=str(rmax),
        )
        if reply["kind"] == "refused":
            return Refusal(str(reply.get("code")), bool(reply.get("policy")))
        permit = msgspec.convert(reply.get("permit"), Permit)
        if (permit.request_id, permit.payload_digest) != (request_id, payload_digest):
            raise SpendError(
                "the controller granted another request",
                code="lookup_ack_unpersisted",
                location=request_id,
                outcome="integrity_stop",
            )
        self._on_disk(permit, states=("active",), consumed=False)
        return permit

    async def consume(self, permit: Permit, body_digest: str) -> None:
        reply = await self._exchange(
            "consume",
            ("consumed", "refused"),
            permit=msgspec.to_builtins(permit),
            body_digest=body_digest,
        )
        if reply["kind"] == "refused":
            raise SpendError(
                "the controller refused the consumption",
                code=str(reply.get("code")),
                location=permit.request_id,
                outcome="integrity_stop",
            )
        self._on_disk(permit, states=("active",), consumed=True)

    async def settle(
        self,
        permit: Permit,
        settlement: Settlement,
        raw_usage: UsageRecord | None,
        raw_tier: str | None,
    ) -> None:
        await self._exchange(
            "settle",
            ("settled",),
            permit=msgspec.to_builtins(permit),
            settlement=msgspec.to_builtins(settlement),
            usage=msgspec.to_builtins(raw_usage) if raw_usage is not None else None,
            tier=raw_tier,
        )
        self._on_disk(permit, states=("settled", "retained"), consumed=None)

    async def stop(self, code: str) -> None:
        await self._exchange("stop", ("stopped",), code=code)
