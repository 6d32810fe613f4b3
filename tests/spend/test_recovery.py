"""Crash recovery with real processes.

A real controller (`run_pilot` in a fresh interpreter, over a faux consumption) is
SIGKILLed while its preparation child runs: the child and its descendant survive in
their own process group, recorded only by the controller's ``launched`` journal event.
A successor observes them before it takes its lease: it refuses while a recorded member
or an outliving descendant runs, never signals either, records what it found in the
predecessor's registry entry, and takes the lease once everything is gone. A recorded
PID that now names another process counts as gone."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from continuity.errors import SpendError
from continuity.roles.pilot.smoke import loopback_endpoints
from continuity.servers.wire import WireServer
from continuity.spend.consumption import CLAIM_FILE, FAUX_DOMAIN, registry_root
from continuity.spend.containment import Containment, Member
from continuity.spend.controller import run_pilot
from continuity.spend.lease import LEASE_NAME, process_start
from continuity.spend.recovery import (
    RECOVERY_FILE,
    acquire_recovered,
    journal_launch,
    observe_group,
    recover,
)
from continuity.spend.schedule import Journal
from tests.spend.test_controller import Pilot, slots

REPO = Path(__file__).resolve().parents[2]

# A controller over a faux consumption of its root. "pilot": runs the pilot with the
# sleepy preparer (and is SIGKILLed while it waits for it); "forge": journals one
# launch record naming argv's PID with argv's start identity, then exits uncleanly.
PREDECESSOR = """
    import os, sys
    from pathlib import Path
    from continuity.spend.consumption import FAUX_DOMAIN, consume
    from continuity.lookup.pilot_settings import entry_settings
    from continuity.spend.assumptions import ASSUMED_V1
    from continuity.spend.controller import PilotConfig, PilotSlot, run_pilot
    from continuity.spend.lease import acquire_lease
    from continuity.spend.schedule import Journal
    root, mode = Path(sys.argv[1]), sys.argv[2]
    lease = acquire_lease(root)
    claim = consume(
        domain=FAUX_DOMAIN, authorization_id="faux-" + root.name, raw_sha256="ab" * 32,
        output_root=root, run_id="run-crashed", epoch="epoch-crashed", lease=lease,
        revalidate=lambda: None, checkouts=[], environ={},
    )
    if mode == "forge":
        pid = int(sys.argv[3])
        Journal(root / "controller-journal.jsonl").add(
            "launched", slot="s1", role="probe", pid=pid, start=sys.argv[4], pgid=pid
        )
        os._exit(0)
    slot = PilotSlot(slot_id="s1", role="native", block="b", question="q", context=("a", "b"))
    config = PilotConfig(
        run_id="run-crashed", root=str(root), slots=(slot,), seed=1, cap="100.00",
        base_url="http://127.0.0.1:9/v1", credentials=str(root / "none.json"),
        history_url="http://127.0.0.1:9/mcp", preparer="tests.spend.sleepy_preparer",
        exit_timeout=300.0, prober="continuity.sampling.pilot_probe",
        settings=entry_settings([slot.arm], reader=ASSUMED_V1.model, judge=None),
    )
    run_pilot(config, lease, claim)
"""


def _predecessor(root: Path, *args: str, stderr: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PREDECESSOR), str(root), *args],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )


def _private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700)
    return path


def _end(member: Member) -> None:
    """SIGKILL `member` if it is still that very process (the test's own cleanup, as an
    operator would; recovery never does this), and wait until it no longer runs."""
    if process_start(member.pid) == member.start:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while process_start(member.pid) == member.start and time.monotonic() < deadline:
        time.sleep(0.02)  # an orphan: init reaps it (a zombie already counts as gone)
    assert process_start(member.pid) != member.start


def _runs(member: Member) -> bool:
    return process_start(member.pid) == member.start


@dataclass
class Crashed:
    """A predecessor SIGKILLed mid-preparation: its root, the surviving preparation
    leader (recorded) and its descendant (never recorded)."""

    parent: Path
    root: Path
    leader: Member
    descendant: Member

    def records(self) -> list[dict[str, Any]]:
        (entry,) = registry_root(FAUX_DOMAIN, self.root).iterdir()
        path = entry / RECOVERY_FILE
        return [json.loads(line) for line in path.read_text().splitlines()]

    def successor(self, name: str = "next") -> Path:
        return _private_dir(self.parent / name)


@pytest.fixture
def crashed(tmp_path: Path) -> Iterator[Crashed]:
    parent = _private_dir(tmp_path / "runs")
    root = _private_dir(parent / "first")
    errors = tmp_path / "controller.stderr"
    with errors.open("wb") as stderr:
        controller = _predecessor(root, "pilot", stderr=stderr)
    marker = root / "sleepy.json"
    deadline = time.monotonic() + 90
    while not marker.exists() and controller.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    controller.kill()  # the crash: no containment, no cleanup, no report
    controller.wait(timeout=30)
    assert marker.exists(), errors.read_text()
    found = json.loads(marker.read_text())
    leader = Member(found["leader"][0], found["leader"][1], found["leader"][0])
    descendant = Member(found["descendant"][0], found["descendant"][1], found["leader"][0])
    made = Crashed(parent, root, leader, descendant)
    try:
        assert _runs(leader) and _runs(descendant)  # orphaned, alive, in their own group
        yield made
    finally:
        for member in (leader, descendant):
            _end(member)


def test_a_live_recorded_member_refuses_the_lease_and_is_never_signalled(
    crashed: Crashed,
) -> None:
    successor = crashed.successor()
    for _ in range(2):  # refused at every start while it runs: nothing is final
        with pytest.raises(SpendError) as caught:
            acquire_recovered(FAUX_DOMAIN, successor)
        assert caught.value.code == "lookup_recovery_unreconciled"
    assert not (successor / LEASE_NAME).exists()  # the lease was never taken
    time.sleep(0.3)  # time enough for any signal to have ended a sleeping python
    assert _runs(crashed.leader) and _runs(crashed.descendant)  # never signalled
    records = crashed.records()
    assert len(records) == 2
    record = records[0]
    assert record["code"] == "lookup_recovery_unreconciled" and record["reconciled"] is False
    assert record["records"] == "read" and (record["groups"], record["members"]) == (1, 1)
    assert record["alive"] == [asdict(crashed.leader)]  # the recorded preparation child
    assert record["observer_pid"] == os.getpid()
    assert str(crashed.parent) not in json.dumps(records)  # no path: counts, ids, codes


def test_once_the_recorded_groups_are_gone_the_lease_is_taken(crashed: Crashed) -> None:
    successor = crashed.successor()
    with pytest.raises(SpendError):
        acquire_recovered(FAUX_DOMAIN, successor)
    _end(crashed.leader)  # the operator ends them; recovery never does
    _end(crashed.descendant)
    lease, recovery = acquire_recovered(FAUX_DOMAIN, successor)
    try:
        lease.verify()  # taken
        (observation,) = recovery.observations
        assert [g.state for g in observation.groups] == ["gone"] and recovery.code is None
        refused, gone = crashed.records()
        assert refused["code"] == "lookup_recovery_unreconciled"
        assert gone["code"] is None and gone["reconciled"] is True
        assert (gone["gone"], gone["alive"], gone["unproven"]) == (1, [], [])
        again = recover(FAUX_DOMAIN, successor)  # a reconciled predecessor is final
        assert (again.observations, again.reconciled) == ((), 1)
        assert len(crashed.records()) == 2
    finally:
        lease.release()


def test_a_descendant_that_outlives_its_recorded_leader_is_unreconciled(
    crashed: Crashed,
) -> None:
    _end(crashed.leader)  # the descendant stays in the group, never recorded
    successor = crashed.successor()
    with pytest.raises(SpendError) as caught:
        acquire_recovered(FAUX_DOMAIN, successor)
    assert caught.value.code == "lookup_recovery_unreconciled"
    (record,) = crashed.records()
    assert record["alive"] == [] and record["unproven"] == [crashed.leader.pgid]
    time.sleep(0.3)
    assert _runs(crashed.descendant)  # an unproven process is never signalled
    assert not (successor / LEASE_NAME).exists()


def test_a_recorded_pid_that_names_another_process_counts_as_gone(tmp_path: Path) -> None:
    # a live process leading its own group, recorded with another start identity: as if
    # the recorded child had exited and its PID been reused
    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True
    )
    try:
        start = process_start(other.pid)
        assert start is not None
        boot, _, ticks = start.rpartition(":")
        forged = f"{boot}:{int(ticks) - 1}"  # this boot, another start time
        parent = _private_dir(tmp_path / "runs")
        root = _private_dir(parent / "first")
        controller = _predecessor(root, "forge", str(other.pid), forged, stderr=subprocess.DEVNULL)
        assert controller.wait(timeout=60) == 0
        successor = _private_dir(parent / "next")
        lease, recovery = acquire_recovered(FAUX_DOMAIN, successor)
        lease.release()
        (observation,) = recovery.observations
        assert [g.state for g in observation.groups] == ["reused"]
        (entry,) = registry_root(FAUX_DOMAIN, root).iterdir()
        (record,) = [json.loads(x) for x in (entry / RECOVERY_FILE).read_text().splitlines()]
        assert (record["reused"], record["alive"], record["code"]) == (1, [], None)
        assert other.poll() is None and process_start(other.pid) == start  # not signalled
    finally:
        other.kill()
        other.wait(timeout=30)


def test_a_running_controller_is_no_predecessor(tmp_path: Path) -> None:
    pilot = Pilot(tmp_path)  # consumed by this (live) process
    try:
        recovery = recover(FAUX_DOMAIN, pilot.parent / "next")
        assert (recovery.observations, recovery.live) == ((), 1)
        (entry,) = registry_root(FAUX_DOMAIN, pilot.root).iterdir()
        assert not (entry / RECOVERY_FILE).exists()
    finally:
        pilot.lease.release()


def test_every_child_is_journaled_before_it_is_told_anything(tmp_path: Path) -> None:
    pilot = Pilot(tmp_path)
    try:
        with loopback_endpoints(WireServer(model="gpt-6.1-sol"), pilot.parent) as urls:
            report = run_pilot(pilot.config(urls, slots=slots(1)), pilot.lease, pilot.claim)
    finally:
        pilot.lease.release()
    assert report.stop is None
    journal = pilot.journal("controller-journal.jsonl")
    launched = [e for e in journal if e["event"] == "launched"]
    assert [(e["slot"], e["role"]) for e in launched] == [
        (slot, role)
        for slot in [r.slot_id for r in report.receipts]
        for role in ("prepare", "probe")
    ]
    assert all(e["pgid"] == e["pid"] and e["start"] for e in launched)
    for slot in {e["slot"] for e in launched}:  # each child journaled before its own record
        order = [
            e["event"] + (":" + e["role"] if "role" in e else "")
            for e in journal
            if e.get("slot") == slot and e["event"] in ("launched", "prepared", "members")
        ]
        assert order == ["launched:prepare", "prepared", "launched:probe", "members"]
    prepared = [e for e in journal if e["event"] == "prepared"]
    assert [(e["pid"], e["start"]) for e in prepared] == [
        (e["pid"], e["start"]) for e in launched if e["role"] == "prepare"
    ]
    canaries = {json.loads(p.read_text())["pid"] for p in (pilot.root / "canaries").iterdir()}
    assert canaries == {e["pid"] for e in launched if e["role"] == "probe"}
    # a clean run leaves nothing a successor's recovery would refuse
    for event in launched:
        member = Member(event["pid"], event["start"], event["pgid"])
        assert observe_group(member.pgid, [member]).state in ("gone", "reused")


def test_a_child_that_cannot_be_journaled_is_ended_before_it_is_told_anything(
    tmp_path: Path,
) -> None:
    # it would run on once its stdin is read: only containment ends it
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; sys.stdin.read(); time.sleep(120)"],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        blocked = Journal(tmp_path / "no-such-dir" / "controller-journal.jsonl")
        containment = Containment(tmp_path / "containment-journal.jsonl", grace=5.0)
        with pytest.raises(SpendError) as caught:
            journal_launch(blocked, containment, child, slot="s1", role="probe", wait=0.5)
        assert caught.value.code == "lookup_journal_failed"
        assert child.wait(timeout=30) == -signal.SIGTERM  # contained: it would sleep on
        (record,) = [
            json.loads(x) for x in (tmp_path / "containment-journal.jsonl").read_text().splitlines()
        ]
        assert record["slot"] == "s1:probe" and record["members"][0]["pid"] == child.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        child.wait(timeout=30)


def _forged_predecessor(tmp_path: Path, *, remove: bool = True) -> tuple[Path, Path]:
    """A crashed predecessor (its controller exited uncleanly after journaling one
    launch of a process that is gone) whose output root was then removed (`remove`)."""
    parent = _private_dir(tmp_path / "runs")
    root = _private_dir(parent / "first")
    gone = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    gone.wait(timeout=30)
    controller = _predecessor(root, "forge", str(gone.pid), "0:0", stderr=subprocess.DEVNULL)
    assert controller.wait(timeout=60) == 0
    if remove:
        shutil.rmtree(root)  # the records are gone with it
    return parent, root


def test_a_predecessor_whose_records_are_gone_refuses_the_lease(tmp_path: Path) -> None:
    parent, root = _forged_predecessor(tmp_path)
    successor = _private_dir(parent / "next")
    for _ in range(2):  # never recorded as reconciled: every start refuses again
        with pytest.raises(SpendError) as caught:
            acquire_recovered(FAUX_DOMAIN, successor)
        assert caught.value.code == "lookup_recovery_unobservable"
    assert not any(successor.iterdir())  # no lease taken
    (entry,) = registry_root(FAUX_DOMAIN, root).iterdir()
    records = [json.loads(x) for x in (entry / RECOVERY_FILE).read_text().splitlines()]
    assert [(r["records"], r["code"], r["reconciled"]) for r in records] == [
        ("missing", "lookup_recovery_unobservable", False)
    ] * 2


def test_a_predecessor_from_an_earlier_boot_needs_no_records(tmp_path: Path) -> None:
    parent, root = _forged_predecessor(tmp_path)
    (entry,) = registry_root(FAUX_DOMAIN, root).iterdir()
    claim_path = entry / CLAIM_FILE
    claim = json.loads(claim_path.read_text())
    claim["controller_start"] = "another-boot:" + claim["controller_start"].rpartition(":")[2]
    claim_path.write_text(json.dumps(claim))  # as if the machine rebooted since
    successor = _private_dir(parent / "next")
    lease, recovery = acquire_recovered(FAUX_DOMAIN, successor)
    lease.release()
    (observation,) = recovery.observations
    assert (observation.records, observation.another_boot, observation.code) == (
        "missing",
        True,
        None,
    )
    assert recovery.summary() == {
        "observed": 1,
        "live_controllers": 0,
        "reconciled_before": 0,
        "unclaimed": 0,
        "groups_gone": 0,
        "groups_reused": 0,
    }


def test_a_member_journaled_without_a_start_is_not_another_boots(tmp_path: Path) -> None:
    # a live group whose only record has no start identity: not proven gone
    leader = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True
    )
    try:
        state = observe_group(leader.pid, [Member(leader.pid + 10**7, "", leader.pid)])
        # no start to compare: neither another boot's nor proven reused; the group lives
        assert state.state == "unproven"
    finally:
        leader.kill()
        leader.wait(timeout=30)


def test_a_journal_that_is_not_private_is_unsound_and_refuses(tmp_path: Path) -> None:
    parent, root = _forged_predecessor(tmp_path, remove=False)
    (root / "controller-journal.jsonl").chmod(0o644)  # anyone could have written it
    with pytest.raises(SpendError) as caught:
        acquire_recovered(FAUX_DOMAIN, _private_dir(parent / "next"))
    assert caught.value.code == "lookup_recovery_unobservable"
    (entry,) = registry_root(FAUX_DOMAIN, root).iterdir()
    (record,) = [json.loads(x) for x in (entry / RECOVERY_FILE).read_text().splitlines()]
    assert (record["records"], record["reconciled"]) == ("unsound", False)


def test_a_record_that_cannot_be_written_refuses_the_lease(tmp_path: Path) -> None:
    parent, root = _forged_predecessor(tmp_path, remove=False)
    (entry,) = registry_root(FAUX_DOMAIN, root).iterdir()
    (entry / RECOVERY_FILE).symlink_to(tmp_path / "elsewhere.jsonl")  # never followed
    successor = _private_dir(parent / "next")
    with pytest.raises(SpendError) as caught:
        acquire_recovered(FAUX_DOMAIN, successor)
    assert (caught.value.code, caught.value.location) == ("lookup_recovery_failed", "registry")
    assert not (tmp_path / "elsewhere.jsonl").exists() and not any(successor.iterdir())
