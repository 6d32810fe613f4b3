"""`doit agent_check`: a failed check is a coded gate after the report is written, and
bad input is refused with a code (the passing run is `.ci/run`'s smoke). The checks run
over the smoke trace (`tests.agents.test_drive.TRACE`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuity.agents.check import check_agent
from continuity.agents.manifest import load_manifest
from continuity.commands.agent_check import AgentCheckRequest, agent_check
from continuity.errors import ContinuityError, GateFailed
from tests.agents.test_drive import FULL_SIZE, STEER, TRACE

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "examples" / "agents" / "toy" / "agent.toml"


def test_an_agent_whose_copies_differ_fails_the_gate_after_its_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_FAULT", "timestamp")
    manifest = load_manifest(TOY)
    with pytest.raises(GateFailed) as caught:
        check_agent(manifest, TRACE, tmp_path)
    assert caught.value.code == "agent_check_failed" and "copy" in caught.value.message
    folder = tmp_path / "agent-check" / f"toy-{manifest.digest[:16]}"
    checks = {
        c["name"]: c["status"] for c in json.loads((folder / "report.json").read_text())["checks"]
    }
    assert checks["copy"] == "fail" and checks["replay"] == "pass" and checks["restart"] == "pass"


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({}, "agent_required"),
        ({"agent": "missing.toml"}, "agent_manifest_invalid"),
        ({"agent": str(TOY), "trace": "no-such-trace"}, "trace_unknown"),
    ],
)
def test_bad_input_is_refused_with_a_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, str], code: str
) -> None:
    monkeypatch.setenv("CONTINUITY_STORE", str(tmp_path / "store"))
    with pytest.raises(ContinuityError) as caught:
        agent_check(AgentCheckRequest.of({"out": str(tmp_path / "out"), **options}))
    assert caught.value.code == code


def test_a_queued_steer_is_a_warning_and_every_other_check_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_STEER", "queued")
    monkeypatch.setenv("TOY_COMPACT", "none")  # the smoke trace has nothing to compact
    report = check_agent(load_manifest(TOY), TRACE, tmp_path)
    checks = {c.name: c for c in report.checks}
    assert checks["steer"].status == "warn" and f"{STEER} queued" in checks["steer"].detail
    assert checks["replay"].status == "pass" and "queued" in checks["replay"].detail
    assert {c.status for n, c in checks.items() if n not in ("steer", "compact")} == {"pass"}
    assert checks["compact"].status == "skipped" and "compaction" in checks["compact"].detail


def test_the_v1_boundaries_are_checked_where_the_adapter_declares_them(tmp_path: Path) -> None:
    """The toy declaring its own compaction and a model switch passes both checks on an
    original trace (long enough that its compaction has something to summarize)."""
    report = check_agent(load_manifest(TOY.parent / "v1.toml"), FULL_SIZE, tmp_path)
    checks = {c.name: c for c in report.checks}
    assert checks["compact"].status == "pass" and checks["switch"].status == "pass"
    assert {c.status for c in report.checks} == {"pass"}


def test_a_queued_steer_the_agent_drops_fails_the_replay_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_STEER", "queued")
    monkeypatch.setenv("TOY_FAULT", "drop_steer")
    with pytest.raises(GateFailed) as caught:
        check_agent(load_manifest(TOY), TRACE, tmp_path)
    assert caught.value.code == "agent_check_failed" and "replay" in caught.value.message
