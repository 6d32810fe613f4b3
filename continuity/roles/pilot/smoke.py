"""The configured-process smoke of the pilot controller (``doit pilot_smoke``).

Two runs of the complete controller/child flow (`continuity.spend.controller`), each in
a fresh private output root with a faux authorization consumed under a real writer
lease, against the loopback wire server streaming Responses SSE on 127.0.0.1 and a
loopback ConversationHistory (MCP over streamable HTTP) holding fictional records. The
scripted model calls the history tool in its first round; the child answers the call
over MCP and asks the second round, so a completed slot is two guarded requests:

- **lost streams**: every stream from the third on is cut halfway. The proof: the first
  slot settles both its requests, the two lost slots keep their holds (Rmax each) and
  stop the run (``lookup_repeated_loss``), and the total never passes a cap of three
  holds;
- **arrival kill**: the wire server SIGKILLs the sending child the moment its request
  arrives. The proof: the hold was persisted and consumed before the send and the
  child's arrival witness written before the bytes left; the hold is retained as lost,
  the run stops (``lookup_ipc_disconnected``), and the child's process group is
  contained (its membership journaled, nothing of it left alive).

Both runs also prove the per-process canaries (every child a process and group of its
own, child of the controller) and the egress denial (each child's deliberate forbidden
connection refused and recorded). A failed proof raises `SpendError`
(``pilot_smoke_failed``) naming it. Nothing here reaches a network: the faux domain,
fictional credentials, loopback only.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

from continuity.errors import SpendError
from continuity.lookup.pilot_settings import Route, entry_settings
from continuity.memory.retained import RetainedStore
from continuity.roles.pilot.run import PROBER
from continuity.servers.history import history_in_thread
from continuity.servers.wire import Faults, WireServer, serve_in_thread
from continuity.spend.assumptions import ASSUMED_V1, reservation
from continuity.spend.consumption import CONSUMED_MARKER, FAUX_DOMAIN, consume
from continuity.spend.containment import group_members
from continuity.spend.contract import contract_for
from continuity.spend.controller import PilotConfig, PilotReport, PilotSlot, run_pilot
from continuity.spend.recovery import acquire_recovered
from continuity.sqlite_open import READ_ONLY, open_db

__all__ = [
    "MODEL",
    "RUN_ID",
    "KillAtArrival",
    "arrival_kill",
    "fictional_history",
    "loopback_endpoints",
    "lost_streams",
    "run_smoke",
]

RUN_ID = "smoke-pilot"
MODEL = "gpt-6.1-sol"


def _check(ok: bool, proof: str) -> None:
    if not ok:
        raise SpendError(
            f"the pilot smoke's proof failed: {proof}", code="pilot_smoke_failed", location=proof
        )


class KillAtArrival(WireServer):
    """Kills the newest child (slots run one at a time) when a request arrives."""

    def __init__(self, root: Path) -> None:
        super().__init__(model=MODEL)
        self.root = root
        self.killed: list[int] = []

    def reply(self, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        canaries = list((self.root / "canaries").iterdir())
        newest = max(canaries, key=lambda p: p.stat().st_mtime)
        pid = int(json.loads(newest.read_text())["pid"])
        os.kill(pid, signal.SIGKILL)
        self.killed.append(pid)
        time.sleep(0.3)  # the controller sees the disconnect before the reply would go
        return super().reply(path, body)


def _slots() -> tuple[PilotSlot, ...]:
    return tuple(
        PilotSlot(
            slot_id=f"b{block}-{role}",
            role=role,
            block=f"conversation-{block}/probe-1",
            question=f"Which city did the fictional Ana Ortiz move to in 20{31 + block}?",
            arm=arm,
            context=(
                f"Ana Ortiz: I am moving to Vigo in 20{31 + block}.",
                "Noted: Vigo, and the boxes go by train.",
            ),
        )
        for block in range(2)
        for role, arm in (("native", "native-lookup"), ("pack", "continuity-pack-cold"))
    )


def fictional_history(directory: Path) -> RetainedStore:
    """A retained store of fictional records for the loopback ConversationHistory."""
    store = RetainedStore(directory / "retained.sqlite3")
    store.retain_owner("Ana Ortiz moved to Vigo in 2031.", source="owner", entry_ref="e1")
    store.retain_tool_result(
        "Moving notes: the fictional Ana Ortiz settles in Porto in 2032.",
        tool="document_open",
        tool_kind="document",
        entry_ref="e2",
    )
    return store


@contextmanager
def loopback_endpoints(app: WireServer, directory: Path) -> Iterator[tuple[str, str]]:
    """Serve `app` and a ConversationHistory over `fictional_history(directory)` on
    127.0.0.1; yield the model base URL (``.../v1``) and the MCP URL."""
    store = fictional_history(directory)
    try:
        with serve_in_thread(app) as url, history_in_thread(store) as mcp:
            yield url + "/v1", mcp
    finally:
        store.close()


def _pilot(work: Path, name: str, app: WireServer, cap: Decimal) -> tuple[Path, PilotReport]:
    parent = work / name
    parent.mkdir(mode=0o700)
    root = parent / "out"
    root.mkdir(mode=0o700)
    credentials = parent / "credentials.json"
    credentials.write_text('{"api_key": "sk-fictional-smoke"}')
    lease, recovery = acquire_recovered(FAUX_DOMAIN, root)  # observes crashed predecessors first
    try:
        claim = consume(
            domain=FAUX_DOMAIN,
            authorization_id=f"faux-{name}",
            raw_sha256="0" * 64,
            output_root=root,
            run_id=RUN_ID,
            epoch=f"epoch-{name}",
            lease=lease,
            revalidate=lambda: None,
            checkouts=[],
            environ={},
        )
        if isinstance(app, KillAtArrival):
            app.root = root
        with loopback_endpoints(app, parent) as (url, history):
            config = PilotConfig(
                run_id=RUN_ID,
                root=str(root),
                slots=_slots(),
                seed=17,
                cap=str(cap),
                base_url=url,
                credentials=str(credentials),
                history_url=history,
                prober=PROBER,
                recovery=recovery.summary(),
                # resolved from each arm's harness configuration, checked at entry
                settings=entry_settings(
                    [slot.arm for slot in _slots()],
                    reader=ASSUMED_V1.model,
                    judge=None,
                    route=Route.of(contract_for(ASSUMED_V1, effort="high")),  # its effort
                ),
            )
            report = run_pilot(config, lease, claim)
    finally:
        lease.release()
    return root, report


def _holds(root: Path) -> list[tuple[str, str | None, int]]:
    db = open_db(root / "account.sqlite3", READ_ONLY)
    try:
        return db.execute("SELECT state, kind, consumed FROM holds ORDER BY rowid").fetchall()
    finally:
        db.close()


def _common(root: Path, report: PilotReport) -> None:
    canaries = [json.loads(p.read_text()) for p in (root / "canaries").iterdir()]
    _check(len(canaries) == report.counts.visited, "one canary per launched child")
    _check(
        all(c["ppid"] == os.getpid() and c["pgid"] == c["pid"] for c in canaries),
        "every child is the controller's, in a process group of its own",
    )
    _check(len({c["pid"] for c in canaries}) == len(canaries), "one process per slot")
    records = list((root / "egress").iterdir())
    _check(
        len(records) == len(canaries) and all('"port": 9' in p.read_text() for p in records),
        "every child's forbidden connection was refused and recorded",
    )
    _check((root / CONSUMED_MARKER).is_file(), "the consumption marker is on disk")
    journal = [
        json.loads(line) for line in (root / "controller-journal.jsonl").read_text().splitlines()
    ]
    prepared = [e for e in journal if e["event"] == "prepared"]
    _check(
        len(prepared) == len(canaries)
        and {e["pid"] for e in prepared}.isdisjoint(c["pid"] for c in canaries)
        and not list((root / "prepared").glob("*.proof")),
        "a preparation child ran before every probe child and its proof was used once",
    )
    _check(Decimal(report.total) <= Decimal(report.cap), "the total is within the cap")


def lost_streams(work: Path) -> str:
    cap = reservation(ASSUMED_V1) * 3
    app = WireServer(model=MODEL, faults=Faults(truncate_from=3))
    root, report = _pilot(work, "lost", app, cap)
    _common(root, report)
    holds = _holds(root)
    _check(report.stop == "lookup_repeated_loss", "two lost slots in a row stop the run")
    _check(
        [(state, kind) for state, kind, _ in holds]
        == [("settled", "settled")] * 2 + [("retained", "lost")] * 2,
        "the first slot settles both rounds; the lost requests keep their holds",
    )
    _check(
        report.receipts[0].admitted_requests == 2,
        "the history tool's call over MCP led to a second guarded round",
    )
    _check(all(consumed for _, _, consumed in holds), "every hold was consumed before its send")
    return f"lost streams: {report.counts.admitted} admitted, total ${report.total} <= ${cap}"


def arrival_kill(work: Path) -> str:
    app = KillAtArrival(work)
    # the loopback server answers a killed client; asyncio would log each failed write
    quiet = logging.getLogger("asyncio")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        root, report = _pilot(work, "arrival", app, Decimal("25.00"))
    finally:
        quiet.setLevel(level)
    _common(root, report)
    _check(report.stop == "lookup_ipc_disconnected", "the broken exchange stops the run")
    _check(_holds(root) == [("retained", "lost", 1)], "the arrived request's hold is retained")
    witnesses = list((root / "arrivals").glob("*/*.json"))
    _check(len(witnesses) == 1, "the child witnessed the request on disk before it left")
    journal = [
        json.loads(line) for line in (root / "containment-journal.jsonl").read_text().splitlines()
    ]
    _check(bool(journal) and journal[0]["event"] == "members", "membership journaled first")
    _check(all(not group_members(pid) for pid in app.killed), "nothing of the group is left alive")
    return f"arrival kill: hold retained, group contained, stop {report.stop}"


def run_smoke(work: Path | None = None, say: Callable[[str], None] = print) -> list[str]:
    """Run both proofs (in `work`, default a fresh temporary directory); their lines."""
    with tempfile.TemporaryDirectory(prefix="continuity-pilot-smoke-") as scratch:
        base = work or Path(scratch)
        lines = []
        for proof in (lost_streams, arrival_kill):
            lines.append(proof(base))
            say(f"pilot smoke: {lines[-1]}")
        return lines
