"""Lockstep IPC between the pilot controller and one probe child (a socket pair).

Every message is one frame: a 4-byte big-endian length, then a JSON object with the
binding ``epoch``, ``slot``, ``worker`` (the child's PID), ``seq`` (the exchange's
number, counted by both ends) and ``kind``, plus the message's own fields. A side
``expect``s exactly one next kind; anything else is an integrity stop:

- a frame that is not a JSON object, or binds another epoch, slot, worker or sequence
  number, or is a kind the side did not expect: ``lookup_ipc_integrity``;
- no frame within the deadline: ``lookup_ipc_timeout``;
- the peer closed: ``lookup_ipc_disconnected``.

There are no retries and no message authentication (no nonce file, no
IPC MAC); the socket pair is inherited by the one child it was made for.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from typing import Any

import msgspec

from continuity.errors import SpendError

__all__ = ["MAX_FRAME", "Channel"]

MAX_FRAME = 1 << 20
_HEADER = struct.Struct(">I")


class Channel:
    """One end of a controller/child socket pair, bound to (epoch, slot, worker)."""

    def __init__(self, sock: socket.socket, *, epoch: str, slot: str, worker: int) -> None:
        self.sock = sock
        self.epoch, self.slot, self.worker = epoch, slot, worker
        self.sent = 0
        self.received = 0

    def _binding(self, seq: int) -> dict[str, Any]:
        return {"epoch": self.epoch, "slot": self.slot, "worker": self.worker, "seq": seq}

    def send(self, kind: str, **fields: Any) -> None:
        """Send one message (the next of this side's sequence)."""
        self.sent += 1
        data = msgspec.json.encode({**self._binding(self.sent), "kind": kind, **fields})
        try:
            self.sock.sendall(_HEADER.pack(len(data)) + data)
        except OSError:
            raise SpendError(
                "the peer is gone",
                code="lookup_ipc_disconnected",
                location=f"{self.slot}:{kind}",
                outcome="integrity_stop",
            ) from None

    def _read(self, count: int, deadline: float, where: str) -> bytes:
        chunks = bytearray()
        while len(chunks) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SpendError(
                    "no message before the deadline",
                    code="lookup_ipc_timeout",
                    location=where,
                    outcome="integrity_stop",
                )
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                continue
            try:
                chunk = self.sock.recv(count - len(chunks))
            except OSError:
                chunk = b""
            if not chunk:
                raise SpendError(
                    "the peer closed the channel",
                    code="lookup_ipc_disconnected",
                    location=where,
                    outcome="integrity_stop",
                )
            chunks.extend(chunk)
        return bytes(chunks)

    def expect(self, *kinds: str, timeout: float) -> dict[str, Any]:
        """The next message, which must be one of `kinds` under this channel's binding."""
        where = f"{self.slot}:{'|'.join(kinds)}"
        deadline = time.monotonic() + timeout
        (length,) = _HEADER.unpack(self._read(_HEADER.size, deadline, where))
        if length > MAX_FRAME:
            raise SpendError(
                "an oversized frame",
                code="lookup_ipc_integrity",
                location=where,
                outcome="integrity_stop",
            )
        try:
            message = msgspec.json.decode(self._read(length, deadline, where))
        except msgspec.DecodeError:
            message = None
        self.received += 1
        if not isinstance(message, dict):
            raise SpendError(
                "a frame that is not a message",
                code="lookup_ipc_integrity",
                location=where,
                outcome="integrity_stop",
            )
        bound = {key: message.get(key) for key in ("epoch", "slot", "worker", "seq")}
        if bound != self._binding(self.received) or message.get("kind") not in kinds:
            raise SpendError(
                f"an unexpected message ({message.get('kind')!r})",
                code="lookup_ipc_integrity",
                location=where,
                outcome="integrity_stop",
            )
        return message

    def close(self) -> None:
        self.sock.close()
