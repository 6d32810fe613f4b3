"""The pilot controller with real probe children, a real socket pair, a real durable
account and the loopback wire server streaming Responses SSE.

Each test consumes a faux authorization (its registry under the output's parent, never
the real one) under a real writer lease, then runs `run_pilot`."""

from __future__ import annotations

import json
import os
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from continuity.errors import SpendError
from continuity.harness.session import DurableSession
from continuity.lookup.pilot_settings import entry_settings
from continuity.messages import AssistantMessage, ToolResultMessage
from continuity.roles.pilot.smoke import KillAtArrival, loopback_endpoints
from continuity.servers.wire import Faults, WireServer
from continuity.spend.assumptions import ASSUMED_V1, reservation
from continuity.spend.consumption import FAUX_DOMAIN, Claim, consume
from continuity.spend.controller import PilotConfig, PilotSlot, run_pilot, seeded_schedule
from continuity.spend.lease import Lease, acquire_lease

RUN = "run-pilot-1"
ROLES = ("native", "pack")


def slots(blocks: int = 2) -> tuple[PilotSlot, ...]:
    return tuple(
        PilotSlot(
            slot_id=f"b{b}-{role}",
            role=role,
            block=f"conv-{b}/probe-1",
            question=f"Where did Ana move in 20{29 + b}?",
            arm="native-lookup" if role == "native" else "continuity-pack-cold",
            context=(f"Ana: I am moving to Vigo in 20{29 + b}.", "Noted: Vigo."),
        )
        for b in range(blocks)
        for role in ROLES
    )


class Pilot:
    def __init__(
        self,
        tmp_path: Path,
        *,
        domain: str = FAUX_DOMAIN,
        credentials: str = '{"api_key": "sk-fictional"}',
        authorization: tuple[str, str] = ("faux-0001", "ab" * 32),  # id, raw sha256
    ) -> None:
        self.parent = tmp_path / "runs"
        self.parent.mkdir(mode=0o700)
        self.root = self.parent / "out"
        self.root.mkdir(mode=0o700)
        self.credentials = tmp_path / "credentials.json"
        self.credentials.write_text(credentials)
        self.lease: Lease = acquire_lease(self.root)
        self.claim: Claim = consume(
            domain=domain,
            authorization_id=authorization[0],
            raw_sha256=authorization[1],
            output_root=self.root,
            run_id=RUN,
            epoch="epoch-1",
            lease=self.lease,
            revalidate=lambda: None,
            checkouts=[tmp_path / "checkout"],
            environ={},
        )

    def config(self, urls: tuple[str, str], **more: Any) -> PilotConfig:
        values: dict[str, Any] = {
            "run_id": RUN,
            "root": str(self.root),
            "slots": slots(),
            "seed": 7,
            "cap": "100.00",
            "base_url": urls[0],
            "history_url": urls[1],
            "credentials": str(self.credentials),
            "message_timeout": 20.0,
            "prober": "continuity.sampling.pilot_probe",
        }
        values.update(more)
        if "settings" not in values:  # resolved from each arm's harness, for its reader
            reader = values.get("assumptions", ASSUMED_V1).model
            arms = [slot.arm for slot in values["slots"]]
            values["settings"] = entry_settings(arms, reader=reader, judge=None)
        return PilotConfig(**values)

    def serve(self, app: WireServer) -> Any:
        return loopback_endpoints(app, self.parent)

    def holds(self) -> list[tuple[str, str, str | None]]:
        db = sqlite3.connect(self.root / "account.sqlite3")
        try:
            return db.execute("SELECT slot_id, state, kind FROM holds ORDER BY rowid").fetchall()
        finally:
            db.close()

    def journal(self, name: str) -> list[dict[str, Any]]:
        path = self.root / name
        return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def pilot(tmp_path: Path) -> Any:
    made = Pilot(tmp_path)
    yield made
    made.lease.release()


def test_the_seeded_schedule_interleaves_roles_within_blocks() -> None:
    planned = seeded_schedule(slots(3), seed=7)
    assert [s.block for s in planned] == [s.block for s in slots(3)]  # blocks keep order
    orders = {
        tuple(s.role for s in planned if s.block == block)
        for seed in range(12)
        for block in {s.block for s in slots(3)}
        for planned in [seeded_schedule(slots(3), seed)]
    }
    assert orders == {("native", "pack"), ("pack", "native")}  # the seed decides
    assert seeded_schedule(slots(3), 7) == planned  # and decides alike every time


def test_every_slot_runs_in_its_own_contained_child_and_settles(pilot: Pilot) -> None:
    app = WireServer(model="gpt-6.1-sol")
    with pilot.serve(app) as url:
        report = run_pilot(pilot.config(url), pilot.lease, pilot.claim)
    assert report.stop is None
    counts = report.counts
    assert (counts.planned, counts.visited, counts.completed, counts.missing) == (4, 4, 4, 0)
    assert [r.terminal for r in report.receipts] == ["completed"] * 4
    assert all(r.answer_sha256 and len(r.answer_sha256) == 64 for r in report.receipts)
    # two guarded rounds per slot: the history tool's call over MCP, then the answer
    assert [r.admitted_requests for r in report.receipts] == [2] * 4
    assert [state for _, state, _ in pilot.holds()] == ["settled"] * 8
    assert Decimal(report.total) == sum(Decimal(r.cost_usd) for r in report.receipts)
    # every sent request was witnessed by its child before it left: two a slot
    witnesses = sorted(
        p.relative_to(pilot.root / "arrivals").as_posix()
        for p in (pilot.root / "arrivals").glob("*/*.json")
    )
    assert len(witnesses) == 8 and {w.split("/")[1] for w in witnesses} == {"1.json", "2.json"}
    # each slot's own cache key, in both of its requests
    keys = [body["prompt_cache_key"] for _, body in app.calls]
    assert len(keys) == 8 and keys[0::2] == keys[1::2]
    assert len(set(keys)) == 4 and all(RUN in key and len(key) <= 64 for key in keys)
    # per-process canaries: four children, none the controller, each its own group
    canaries = [json.loads(p.read_text()) for p in (pilot.root / "canaries").iterdir()]
    assert len(canaries) == 4 and all(c["ppid"] == os.getpid() for c in canaries)
    assert all(c["pgid"] == c["pid"] for c in canaries)
    # every child's forbidden connection was refused and recorded
    egress = list((pilot.root / "egress").iterdir())
    assert len(egress) == 4 and all('"port": 9' in p.read_text() for p in egress)
    journal = pilot.journal("controller-journal.jsonl")
    assert len([e for e in journal if e["event"] == "members"]) == 4  # before each done-ack
    # each slot: a credential-free preparation child ran to its end first, its tuple
    # journaled; the probe restored exactly its bytes and used its proof once
    prepared = [e for e in journal if e["event"] == "prepared"]
    assert len(prepared) == 4 and not list((pilot.root / "prepared").glob("*.proof"))
    assert {e["pid"] for e in prepared}.isdisjoint(c["pid"] for c in canaries)
    first = json.dumps(app.calls[0][1])
    assert "I am moving to Vigo" in first  # the restored boundary reached the request
    text = (pilot.root / "report.json").read_text()
    assert str(pilot.root) not in text and "sk-fictional" not in text


def test_a_lost_stream_retains_its_hold_and_two_in_a_row_stop_the_run(pilot: Pilot) -> None:
    app = WireServer(model="gpt-6.1-sol", faults=Faults(truncate_from=3))
    with pilot.serve(app) as url:
        report = run_pilot(pilot.config(url), pilot.lease, pilot.claim)
    assert report.stop == "lookup_repeated_loss"
    assert [r.terminal for r in report.receipts] == ["completed", "incomplete", "incomplete"]
    assert report.counts.truncated == 1  # the fourth slot never started
    assert app.count() == 4
    states = [state for _, state, _ in pilot.holds()]
    assert states == ["settled", "settled", "retained", "retained"]
    rmax = reservation(ASSUMED_V1)
    assert Decimal(report.total) >= 2 * rmax  # the lost requests stay held at Rmax
    assert Decimal(report.total) <= Decimal("100.00")


def test_the_cap_refuses_admission_before_any_send(pilot: Pilot) -> None:
    app = WireServer(model="gpt-6.1-sol")
    rmax = reservation(ASSUMED_V1)
    with pilot.serve(app) as url:
        report = run_pilot(pilot.config(url, cap=str(rmax)), pilot.lease, pilot.claim)
    # one Rmax fits: the first round is admitted and settles far below it; every later
    # hold (settled + Rmax) would pass the cap, so nothing more is sent. The refusal is
    # a capacity refusal: the pilot goes on, the admitted slot is incomplete (never a
    # loss) and the later slots are unadmitted
    assert app.count() == 1
    assert report.stop is None
    assert [r.terminal for r in report.receipts] == ["incomplete"] + ["unadmitted"] * 3
    assert {r.code for r in report.receipts} == {"not_admitted_cap"}
    assert Decimal(report.total) <= rmax


def test_a_child_killed_at_arrival_leaves_a_retained_hold_and_a_contained_group(
    pilot: Pilot,
) -> None:
    app = KillAtArrival(pilot.root)  # SIGKILLs the sending child when its request arrives
    with pilot.serve(app) as url:
        report = run_pilot(pilot.config(url), pilot.lease, pilot.claim)
    assert report.stop == "lookup_ipc_disconnected"
    (first,) = report.receipts
    assert first.terminal == "incomplete" and first.admitted_requests == 1
    ((_, state, kind),) = pilot.holds()
    assert (state, kind) == ("retained", "lost")
    contained = pilot.journal("containment-journal.jsonl")
    assert contained and contained[0]["event"] == "members"
    assert report.counts.truncated == 3


def test_a_pilot_without_its_consumption_pair_never_launches(pilot: Pilot) -> None:
    (pilot.root / "authorization-consumed.json").unlink()
    with pytest.raises(SpendError) as caught:
        run_pilot(
            pilot.config(("http://127.0.0.1:9/v1", "http://127.0.0.1:9/mcp")),
            pilot.lease,
            pilot.claim,
        )
    assert caught.value.code == "lookup_consumption_invalid"
    assert not (pilot.root / "canaries").exists()
    assert not (pilot.root / "account.sqlite3").exists()


def test_children_never_leave_a_process_behind(pilot: Pilot) -> None:
    app = WireServer(model="gpt-6.1-sol")
    with pilot.serve(app) as url:
        run_pilot(pilot.config(url, slots=slots(1)), pilot.lease, pilot.claim)
    for canary in (pilot.root / "canaries").iterdir():
        pid = json.loads(canary.read_text())["pid"]
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_an_arm_without_a_prepared_boundary_is_refused_at_initialization(pilot: Pilot) -> None:
    restart = (PilotSlot(slot_id="r", role="native", block="b", question="q", arm="restart"),)
    with pytest.raises(SpendError) as caught:
        run_pilot(
            pilot.config(
                ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/mcp"), slots=restart, settings=()
            ),
            pilot.lease,
            pilot.claim,
        )
    assert caught.value.code == "lookup_pilot_boundary_required"
    assert not (pilot.root / "account.sqlite3").exists()


def test_a_child_that_is_not_ready_in_time_is_stopped_and_contained(pilot: Pilot) -> None:
    app = WireServer(model="gpt-6.1-sol")
    with pilot.serve(app) as urls:
        report = run_pilot(pilot.config(urls, ready_timeout=0.001), pilot.lease, pilot.claim)
    assert report.stop == "lookup_ipc_timeout"
    (first,) = report.receipts
    assert (first.terminal, first.code, first.admitted_requests) == (
        "unadmitted",
        "lookup_ipc_timeout",
        0,
    )
    assert app.count() == 0 and report.counts.truncated == 3
    contained = pilot.journal("containment-journal.jsonl")
    assert [e["slot"] for e in contained if e["event"] == "members"][-1] == first.slot_id


def test_a_preparation_that_fails_stops_before_any_probe_child(pilot: Pilot) -> None:
    planned = seeded_schedule(slots(), 7)[0]
    (pilot.root / "prepared").mkdir(mode=0o700)
    (pilot.root / "prepared" / f"{planned.slot_id}.json").write_text("squatted")
    app = WireServer(model="gpt-6.1-sol")
    with pilot.serve(app) as urls:
        report = run_pilot(pilot.config(urls), pilot.lease, pilot.claim)
    assert report.stop == "lookup_preparation_invalid"
    assert [r.code for r in report.receipts] == ["lookup_preparation_invalid"]
    assert not (pilot.root / "canaries").exists()  # no probe child was launched
    assert app.count() == 0


def test_more_than_a_tenth_of_invalid_admitted_slots_stops_the_run(pilot: Pilot) -> None:
    class Empty(WireServer):
        def reply(self, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
            text, tool = super().reply(path, body)
            return ("", None) if tool is None else (text, tool)  # an empty final answer

    app = Empty(model="gpt-6.1-sol")
    with pilot.serve(app) as urls:
        report = run_pilot(pilot.config(urls), pilot.lease, pilot.claim)
    assert report.stop == "lookup_invalid_slots"
    (first,) = report.receipts
    assert (first.terminal, first.code) == ("invalid", "pilot_empty_final_output")
    assert report.counts.invalid == 1 and report.counts.admitted == 1


async def _held_source(tmp_path: Path) -> Any:
    from continuity.spend.durable import DurablePermitSource

    return DurablePermitSource.open(
        tmp_path / "account.sqlite3", Decimal("100.00"), reservation(ASSUMED_V1)
    )


@pytest.mark.anyio
async def test_child_messages_that_contradict_the_controller_are_integrity_stops(
    tmp_path: Path,
) -> None:
    from continuity.spend.exchange import SlotState, serve_message

    source = await _held_source(tmp_path)
    slot = SlotState()
    admit = {
        "kind": "admit",
        "request_id": "r1",
        "slot_id": "s1",
        "round": 1,
        "payload_digest": "d" * 64,
        "rmax": str(reservation(ASSUMED_V1)),
    }
    for bad in ({**admit, "slot_id": "s2"}, {**admit, "round": "one"}, {"kind": "admit"}):
        with pytest.raises(SpendError) as caught:
            await serve_message(bad, source, slot, "s1")
        assert caught.value.code == "lookup_ipc_integrity"
    kind, fields = await serve_message(admit, source, slot, "s1")
    assert kind == "admitted"
    permit = fields["permit"]
    stranger = {**permit, "request_id": "r9"}
    with pytest.raises(SpendError) as caught:
        await serve_message(
            {"kind": "consume", "permit": stranger, "body_digest": "d" * 64}, source, slot, "s1"
        )
    assert caught.value.code == "lookup_ipc_integrity"
    usage = {"input": 1000, "output": 10}
    forged = {"kind": "settled", "cost": "0.000001"}
    with pytest.raises(SpendError) as caught:
        await serve_message(
            {
                "kind": "settle",
                "permit": permit,
                "settlement": forged,
                "usage": usage,
                "tier": "default",
            },
            source,
            slot,
            "s1",
        )
    assert caught.value.code == "lookup_settlement_violation"
    assert slot.open  # nothing was settled on the child's word
    source.close()


@pytest.mark.parametrize("kind", ["done", "stop"])
def test_a_child_that_reports_a_controller_code_is_refused(pilot: Pilot, kind: str) -> None:
    """The controller's side of a real socket pair; the test speaks for the child, as a
    compromised child could: a controller code in its done or its stop is never taken."""
    import socket

    import anyio

    from continuity.spend.controller import _Controller
    from continuity.spend.exchange import SlotState, child_code
    from continuity.spend.ipc import Channel

    controller = _Controller(
        pilot.config(("http://127.0.0.1:9/v1", "http://127.0.0.1:9/mcp")),
        pilot.lease,
        pilot.claim,
    )
    mine, theirs = socket.socketpair()
    try:
        epoch = controller.source.epoch
        child = Channel(theirs, epoch=epoch, slot="b0-native", worker=4242)
        child.send("ready", pid=4242, start="x")
        child.send(kind, terminal="completed", code="lookup_worker_lost", answer_sha256=None)
        with pytest.raises(SpendError) as caught:
            parent = Channel(mine, epoch=epoch, slot="b0-native", worker=4242)
            anyio.run(controller._exchanges, parent, SlotState(), "b0-native")
        assert caught.value.code == "lookup_child_code_forbidden"
        assert child_code("lookup_request_limit") == "lookup_request_limit"  # a child's own
        assert child_code("not a code") == "lookup_integrity_stop"
    finally:
        mine.close()
        theirs.close()
        controller.source.close()


@pytest.mark.parametrize(
    ("settings", "code"),
    [
        ((), "lookup_auxiliary_callers_forbidden"),  # unresolved: unset counts as on
        (
            entry_settings(["native-lookup"], reader=ASSUMED_V1.model, judge=None)
            + entry_settings(["native-lookup"], reader=ASSUMED_V1.model, judge=None),
            "lookup_auxiliary_callers_forbidden",  # two for one arm: which one runs?
        ),
    ],
)
def test_a_slot_whose_arm_has_no_single_resolved_setting_is_refused_at_entry(
    pilot: Pilot, settings: tuple[Any, ...], code: str
) -> None:
    urls = ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/mcp")
    with pytest.raises(SpendError) as caught:
        run_pilot(pilot.config(urls, settings=settings), pilot.lease, pilot.claim)
    assert (caught.value.code, caught.value.location) == (code, "entry.settings")
    assert not (pilot.root / "account.sqlite3").exists()  # nothing started


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        (
            {"runtime": {"session": {"continuity": {"upkeep_enabled": True}}}},
            "lookup_auxiliary_callers_forbidden",
        ),
        (
            {"tools": {"allowed_tools": ["ConversationHistory", "fetch_page"]}},
            "lookup_tools_forbidden",
        ),
    ],
)
def test_a_harness_configured_with_a_caller_on_is_refused_at_entry(
    pilot: Pilot, patch: dict[str, Any], code: str
) -> None:
    from continuity.lookup.pilot_settings import resolve_pilot_settings

    unsafe = tuple(
        resolve_pilot_settings(arm, reader=ASSUMED_V1.model, judge=None, patches=[patch])
        for arm in ("native-lookup", "continuity-pack-cold")
    )
    urls = ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/mcp")
    with pytest.raises(SpendError) as caught:
        run_pilot(pilot.config(urls, settings=unsafe), pilot.lease, pilot.claim)
    assert caught.value.code == code
    assert not (pilot.root / "account.sqlite3").exists()


def test_each_probe_runs_in_a_harness_workspace_of_its_own(pilot: Pilot) -> None:
    # The probe is a turn of the project's agent loop over a seeded harness workspace
    # (`continuity.sampling.pilot_probe`): its session holds the boundary, the question
    # and the reply, and every request the endpoint saw was built from that session.
    app = WireServer(model="gpt-6.1-sol")
    with pilot.serve(app) as url:
        report = run_pilot(pilot.config(url), pilot.lease, pilot.claim)
    assert report.stop is None and report.counts.completed == 4
    for slot in slots():
        path = pilot.root / "probes" / slot.slot_id / "session" / "session.jsonl"
        context = DurableSession.load(path).context()
        asked = [i for i, m in enumerate(context) if getattr(m, "source", "") == "probe"]
        assert len(asked) == 1 and getattr(context[asked[0]], "text", "") == slot.question
        after = context[asked[0] + 1 :]
        # the harness ran the ConversationHistory call over MCP, then the reply came
        assert any(isinstance(m, ToolResultMessage) and not m.is_error for m in after)
        assert isinstance(after[-1], AssistantMessage) and after[-1].text
    assert len(app.calls) == 8  # two requests per probe: the tool round, then the reply


def test_what_recovery_found_is_the_runs_first_journal_event(pilot: Pilot) -> None:
    app = WireServer(model="gpt-6.1-sol")
    found = {"observed": 2, "groups_gone": 3}
    with pilot.serve(app) as url:
        run_pilot(pilot.config(url, slots=slots(1), recovery=found), pilot.lease, pilot.claim)
    first = pilot.journal("controller-journal.jsonl")[0]
    assert first == {"event": "recovery", **found}
