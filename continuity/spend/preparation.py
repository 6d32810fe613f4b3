"""Child-authorized construction: the credential-free preparation child, its journaled
tuple, and the one-use prepared-boundary proof.

For every slot the controller first launches a **preparation child**
(``python -m continuity.spend.preparation``) in a session of its own, with no
credentials: no credentials path is passed and every variable that looks like a secret
is removed from its environment. It builds the slot's prepared boundary offline and
writes it, private and synced, to ``prepared/<slot>.json``:

- ``native-lookup``: the restored transcript, the conversation's turns as they were;
- ``continuity-pack-cold``: the cold context rebuilt from the continuity pack (one
  message listing the pack's records).

That is this module's preparer, which builds from the slot's own text. A registered
pilot names another (`PilotConfig.preparer`, e.g. `continuity.roles.pilot.prepare`),
which builds from the request's ``source``: the slot's real checkpoint. Either writes a
`PreparedBoundary` (the reader's system prompt and the messages) with `write_boundary`.

After the child exits and its process group is gone, the controller journals the
tuple (its PID, its start identity taken while it ran, the boundary's sha256) and
writes the **proof** ``prepared/<slot>.proof``. The probe child (`verify_prepared`):

1. finds exactly that tuple in the controller's journal;
2. proves the preparation process has exited (no live process with that PID and start
   identity);
3. consumes the proof once (it is removed; a second use finds nothing);
4. restores the exact bytes and checks their sha256.

Anything else is ``lookup_preparation_invalid``. `still_prepared` re-checks the journal's
tuple before every send, so a record changed after the mint stops the send.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from continuity.errors import SpendError
from continuity.messages import AssistantMessage, Message, UserMessage
from continuity.spend.lease import process_start
from continuity.spend.private import read_private, write_new

__all__ = [
    "PreparationRequest",
    "Prepared",
    "PreparedBoundary",
    "boundary_messages",
    "credential_free_environment",
    "main",
    "still_prepared",
    "verify_prepared",
    "write_boundary",
]

_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)


class PreparationRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    root: str
    slot_id: str
    arm: str
    context: tuple[str, ...]  # the slot's conversation turns (fictional), in order
    source: str = ""  # what another preparer builds from (its own JSON; opaque here)


class PreparedBoundary(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a probe restores: the reader's system prompt (None: the child's default)
    and the messages before the probe's question."""

    system: str | None = None
    messages: list[Message]


class Prepared(msgspec.Struct, frozen=True, kw_only=True):
    """The journaled tuple of one slot's preparation."""

    slot: str
    pid: int
    start: str
    sha256: str


def credential_free_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without any variable whose name looks like a secret."""
    return {k: v for k, v in environ.items() if not _SECRET.search(k)}


def boundary_messages(arm: str, context: Sequence[str]) -> list[Message]:
    """The prepared boundary of `arm` over the conversation `context`."""
    if arm == "native-lookup":
        return [
            UserMessage(text) if index % 2 == 0 else AssistantMessage(text)
            for index, text in enumerate(context)
        ]
    if arm == "continuity-pack-cold":
        pack = "\n".join(f"- {line}" for line in context)
        return [UserMessage(f"Continuity pack (records retained before the boundary):\n{pack}")]
    raise SpendError(
        f"arm {arm} has no prepared boundary",
        code="lookup_pilot_boundary_required",
        location=arm,
        outcome="refused_pre_send",
    )


def _journaled(journal: Path, slot: str) -> list[Prepared]:
    data = read_private(journal, limit=1 << 24)
    if data is None:
        raise SpendError(
            "the controller journal is not sound",
            code="lookup_preparation_invalid",
            location="journal",
            outcome="refused_pre_send",
        )
    found = []
    for line in data.decode().splitlines():
        event = json.loads(line)
        if event.get("event") == "prepared" and event.get("slot") == slot:
            found.append(msgspec.convert(event, Prepared, strict=False))
    return found


def verify_prepared(root: Path, prepared: Prepared) -> PreparedBoundary:
    """The probe child's checks (module doc, steps 1-4); the restored boundary.

    Raises:
        SpendError: ``lookup_preparation_invalid``.
    """
    if _journaled(root / "controller-journal.jsonl", prepared.slot) != [prepared]:
        raise SpendError(
            "the journal does not hold this preparation",
            code="lookup_preparation_invalid",
            location=prepared.slot,
            outcome="refused_pre_send",
        )
    if process_start(prepared.pid) == prepared.start:
        raise SpendError(
            "the preparation process is still alive",
            code="lookup_preparation_invalid",
            location=prepared.slot,
            outcome="refused_pre_send",
        )
    proof = root / "prepared" / f"{prepared.slot}.proof"
    sealed = read_private(proof)
    if sealed is None or msgspec.json.decode(sealed, type=Prepared) != prepared:
        raise SpendError(
            "no unused proof for this preparation",
            code="lookup_preparation_invalid",
            location=prepared.slot,
            outcome="refused_pre_send",
        )
    try:
        os.unlink(proof)  # one use: a second probe finds nothing
    except FileNotFoundError:
        raise SpendError(
            "the proof was already used",
            code="lookup_preparation_invalid",
            location=prepared.slot,
            outcome="refused_pre_send",
        ) from None
    data = read_private(root / "prepared" / f"{prepared.slot}.json", limit=1 << 24)
    if data is None or hashlib.sha256(data).hexdigest() != prepared.sha256:
        raise SpendError(
            "the restored bytes differ from the preparation",
            code="lookup_preparation_invalid",
            location=prepared.slot,
            outcome="refused_pre_send",
        )
    try:
        return msgspec.json.decode(data, type=PreparedBoundary)
    except msgspec.MsgspecError:
        raise SpendError(
            "the restored bytes are not a boundary",
            code="lookup_preparation_invalid",
            location=prepared.slot,
            outcome="refused_pre_send",
        ) from None


def still_prepared(root: Path, prepared: Prepared) -> None:
    """Before every send: the journal still holds exactly the tuple verified at mint.

    Raises:
        SpendError: ``lookup_preparation_invalid``.
    """
    if _journaled(root / "controller-journal.jsonl", prepared.slot) != [prepared]:
        raise SpendError(
            "the preparation record changed after the mint",
            code="lookup_preparation_invalid",
            location=prepared.slot,
            outcome="refused_pre_send",
        )


def write_boundary(root: Path, slot_id: str, boundary: PreparedBoundary) -> None:
    """Write a slot's boundary, private and synced, once (``prepared/<slot>.json``)."""
    folder = root / "prepared"
    folder.mkdir(mode=0o700, exist_ok=True)
    write_new(folder / f"{slot_id}.json", msgspec.json.encode(boundary))


def main() -> int:
    """The preparation child: build one slot's boundary offline and write it."""
    request = msgspec.json.decode(sys.stdin.buffer.read(), type=PreparationRequest)
    messages = boundary_messages(request.arm, request.context)
    write_boundary(Path(request.root), request.slot_id, PreparedBoundary(messages=messages))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
