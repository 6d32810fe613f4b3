"""Outside agents end to end with the toy reference adapter (examples/agents/toy): a
real adapter process over CAP/0, the model proxy and the fixture MCP server on
loopback. Each arm's boundary is verified from observations alone, and each injected
fault gives its code or exclusion class.

The tests replay the smoke trace (two sessions, four tool records, a steer), whose
counts they read from the trace; a turn with several tool calls comes from hard seed
101. The full-size variant (``-m variant``) verifies every arm on an original trace.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import msgspec
import pytest

from continuity.agents.drive import AgentRun, drive_agent
from continuity.agents.manifest import load_manifest
from continuity.errors import ArmError
from continuity.servers.fixture import frozen_records
from continuity.servers.proxy_script import WireRequest
from continuity.traces.keys import fixtures_dir
from continuity.traces.schema import OwnerMessage, Steer, Trace, iter_turns
from continuity.traces.validate import load_trace
from tests.harness.test_replay import trace_named

ROOT = Path(__file__).resolve().parents[2]
TOY = load_manifest(ROOT / "examples" / "agents" / "toy" / "agent.toml")
TRACE = load_trace((fixtures_dir() / "smoke" / "smoke-kiln-shelves.json").read_bytes())
PROBE = TRACE.probes[0].text
FULL_SIZE = trace_named("brightline-return")


def _steer_and_next(trace: Trace) -> tuple[str, str]:
    """The id of the trace's steer and of the turn right after it (the assistant step
    the steered request answers)."""
    turns = [t for _, _, t in iter_turns(trace)]
    at = next(n for n, t in enumerate(turns) if isinstance(t, Steer))
    return turns[at].turn_id, turns[at + 1].turn_id


STEER, AFTER_STEER = _steer_and_next(TRACE)
RECORDS = len(frozen_records(TRACE))  # the tool records the fixture server serves
SEEN: list[str] = []


async def _reader(request: WireRequest) -> str:
    SEEN.append(request.messages[-1].text)
    return "UNKNOWN"


def _drive(
    tmp_path: Path, arm: str, name: str = "run", trace: Trace = TRACE, **kwargs: object
) -> AgentRun:
    async def main() -> AgentRun:
        return await drive_agent(TOY, trace, work=tmp_path / name, arm=arm,
                                 probe=trace.probes[0].text, reader=_reader,
                                 **kwargs)  # type: ignore[arg-type]  # fmt: skip

    return anyio.run(main)


def _check_arm(run: AgentRun, arm: str, trace: Trace) -> None:
    """The arm's boundary verified, every record served, the steer injected, the probe
    forwarded to the reader, and the transcript the arm should leave."""
    steer, _ = _steer_and_next(trace)
    owner_turns = sum(isinstance(t, OwnerMessage) for _, _, t in iter_turns(trace))
    assert run.codes == [] and run.crossing.verdict == "verified", run.details
    assert run.steers == {steer: "injected"}  # held in its call, steered, released
    assert run.fixture_calls == len(frozen_records(trace)) and run.probe_tool_attempts == 0
    assert run.probe is not None and run.probe.mode == "forward" and run.probe_reply == "UNKNOWN"
    assert len(run.crossing.pids) == (2 if arm == "restart" else 1)
    if arm == "restart":
        assert run.crossing.pids[0] != run.crossing.pids[1]
        assert run.probe.transcript == owner_turns
    if arm == "new_session":
        assert run.probe.transcript == 0  # notes ride in the system prompt, not as turns
    assert run.agent == "toy 0.1" and run.manifest == TOY.digest


@pytest.mark.parametrize("arm", ["native", "restart", "new_session"])
def test_each_arm_is_verified_from_what_continuity_observed(tmp_path: Path, arm: str) -> None:
    _check_arm(_drive(tmp_path, arm), arm, TRACE)


@pytest.mark.variant
@pytest.mark.parametrize("arm", ["native", "restart", "new_session"])
def test_each_arm_is_verified_on_an_original_trace_full_size(tmp_path: Path, arm: str) -> None:
    _check_arm(_drive(tmp_path, arm, trace=FULL_SIZE), arm, FULL_SIZE)


@pytest.mark.parametrize(
    ("fault", "arm", "code", "verdict"),
    [
        ("drop_steer", "native", "replay_fidelity_failed", "verified"),
        ("rewrite_result", "native", "replay_fidelity_failed", "verified"),
        ("unexpected_tool", "native", "replay_fidelity_failed", "verified"),
        ("no_resume", "restart", None, "contradicted"),
        ("leak_transcript", "new_session", None, "contradicted"),
        ("same_session", "new_session", None, "not_crossed"),
    ],
)
def test_each_injected_fault_gives_its_code_or_exclusion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, arm: str, code: str | None,
    verdict: str,
) -> None:  # fmt: skip
    monkeypatch.setenv("TOY_FAULT", fault)
    run = _drive(tmp_path, arm)
    assert run.codes == ([code] if code else []), run.details
    assert run.crossing.verdict == verdict, run.crossing.reasons


def test_turns_the_adapter_reports_failed_are_coded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_FAULT", "fail_turns")
    run = _drive(tmp_path, "native")
    assert "turn_failed" in run.codes
    assert any("turns failed" in d for d in run.details)
    assert any(d.startswith("probe: the toy fails every turn") for d in run.details)


def test_the_adapter_never_sees_the_word_probe_and_the_reader_sees_only_the_question(
    tmp_path: Path,
) -> None:
    SEEN.clear()
    run = _drive(tmp_path, "native")
    work = tmp_path / "run"
    log = (work / "adapter.log").read_text() + (work / "agent" / "toy-state.json").read_text()
    assert "probe" not in log.lower()
    assert SEEN == [PROBE] and run.probe is not None
    # no expected value rides in what continuity itself sends at the probe
    expected = _strings(msgspec.to_builtins(TRACE.probes[0].expectation))
    assert expected and not [value for value in expected if value in PROBE]


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value] if len(value) >= 4 and value not in ("recall", "task") else []
    if isinstance(value, dict):
        return [s for k, v in value.items() if k != "category" for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_an_arm_outside_agents_do_not_have_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ArmError) as caught:
        _drive(tmp_path, "compaction-1")
    assert caught.value.code == "arm_unknown"


MINIMAL = load_manifest(ROOT / "examples" / "agents" / "minimal" / "agent.toml")


@pytest.mark.parametrize("arm", ["native", "restart", "new_session"])
def test_the_readmes_complete_adapter_is_verified_on_every_arm(tmp_path: Path, arm: str) -> None:
    async def main() -> AgentRun:
        return await drive_agent(MINIMAL, TRACE, work=tmp_path, arm=arm, probe=PROBE,
                                 reader=_reader)  # fmt: skip

    run = anyio.run(main)
    assert run.codes == [] and run.crossing.verdict == "verified", (run.details, run.crossing)
    assert run.steers == {STEER: "injected"} and run.agent == "minimal 1"
    source = (ROOT / "examples" / "agents" / "minimal" / "minimal_agent.py").read_text()
    assert len([line for line in source.splitlines() if line.strip()]) < 40


def test_the_readme_shows_the_complete_adapter_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text()
    source = (ROOT / "examples" / "agents" / "minimal" / "minimal_agent.py").read_text()
    assert f"```python\n{source}```" in readme


def _steer_text() -> str:
    return next(t.text for _, _, t in iter_turns(TRACE) if isinstance(t, Steer))


@pytest.mark.parametrize("steering", ["queued", "rejected", "none"])
def test_a_steer_not_injected_is_labelled_and_the_sample_stays_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steering: str
) -> None:
    monkeypatch.setenv("TOY_STEER", steering)
    run = _drive(tmp_path, "native")
    assert run.codes == ["steer_degraded"] and run.crossing.verdict == "verified", run.details
    assert run.steers == {STEER: steering} and run.fixture_calls == RECORDS
    state = json.loads((tmp_path / "run" / "agent" / "toy-state.json").read_text())
    said = [m["content"] for m in state["sessions"]["conversation"]["messages"]
            if m["role"] == "user"]  # fmt: skip
    assert (_steer_text() in said) == (steering == "queued")  # a rejected steer never arrives


def test_a_queued_steer_is_the_next_owner_turn_and_its_request_carries_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_STEER", "queued")
    first, second = (_drive(tmp_path, "native", f"q{n}") for n in (1, 2))
    assert first.codes == ["steer_degraded"] and "queued" in first.details[0]
    assert first.signature == second.signature  # fresh copies stay identical
    steps = [f for f in first.facts if f.mode == "script"]
    at = next(n for n, f in enumerate(steps) if f.step == f"{AFTER_STEER}:queued")
    interlude, steered = steps[at], steps[at + 1]
    assert steered.step == AFTER_STEER and interlude.problems == steered.problems == []
    assert interlude.output_tokens == 0  # the least the agent can be told: nothing
    state = json.loads((tmp_path / "q1" / "agent" / "toy-state.json").read_text())
    messages = state["sessions"]["conversation"]["messages"]
    at = next(n for n, m in enumerate(messages) if m.get("content") == _steer_text())
    # the held call's result, the interlude that ended the turn, then the steer's turn
    assert [m["role"] for m in messages[at - 2 : at + 1]] == ["tool", "assistant", "user"]
    log = (tmp_path / "q1" / "adapter.log").read_text()
    assert "probe" not in log.lower()


def test_a_queued_steer_the_agent_never_passes_on_fails_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_STEER", "queued")
    monkeypatch.setenv("TOY_FAULT", "drop_steer")
    run = _drive(tmp_path, "native")
    assert run.codes == ["replay_fidelity_failed", "steer_degraded"], run.details
    assert any(f"steer before {AFTER_STEER}" in d for d in run.details)


HARD = trace_named("hard-101")


@pytest.mark.parametrize("calls", ["reversed", "concurrent", "one_per_reply"])
def test_an_agent_running_a_turns_calls_its_own_way_is_a_faithful_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: str
) -> None:
    monkeypatch.setenv("TOY_CALLS", calls)

    async def main() -> AgentRun:
        return await drive_agent(TOY, HARD, work=tmp_path, arm="native",
                                 probe=HARD.probes[0].text, reader=_reader)  # fmt: skip

    run = anyio.run(main)
    assert run.codes == [] and run.crossing.verdict == "verified", run.details
    outputs = [r.output for r in frozen_records(HARD)]
    assert run.fixture_calls == len(outputs)
    state = json.loads((tmp_path / "agent" / "toy-state.json").read_text())
    seen = [m["content"] for m in state["sessions"]["conversation"]["messages"]
            if m["role"] == "tool"]  # fmt: skip
    assert sorted(seen) == sorted(outputs) and (seen != outputs) == (calls == "reversed")
    script = [f for f in run.facts if f.mode == "script"]
    split = [f.step for f in script if f.step and f.step.endswith(":1")]
    assert bool(split) == (calls == "one_per_reply")


def test_a_call_matching_no_record_of_its_turn_fails_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_CALLS", "reversed")
    monkeypatch.setenv("TOY_FAULT", "rewrite_argument")

    async def main() -> AgentRun:
        return await drive_agent(TOY, HARD, work=tmp_path, arm="native",
                                 probe=HARD.probes[0].text, reader=_reader)  # fmt: skip

    run = anyio.run(main)
    assert "replay_fidelity_failed" in run.codes, run.details
    assert any("tool calls the trace does not make" in d for d in run.details)
