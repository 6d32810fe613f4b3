"""Outside agents end to end with the toy reference adapter (examples/agents/toy): a
real adapter process over CAP/0, the model proxy and the fixture MCP server on
loopback. Each arm's boundary is verified from observations alone, and each injected
fault gives its code or exclusion class."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest

from continuity.agents.drive import AgentRun, drive_agent
from continuity.agents.manifest import load_manifest
from continuity.errors import ArmError
from continuity.servers.proxy_script import WireRequest
from tests.harness.test_replay import trace_named

ROOT = Path(__file__).resolve().parents[2]
TOY = load_manifest(ROOT / "examples" / "agents" / "toy" / "agent.toml")
TRACE = trace_named("brightline-return")
PROBE = TRACE.probes[0].text
SEEN: list[str] = []


async def _reader(request: WireRequest) -> str:
    SEEN.append(request.messages[-1].text)
    return "UNKNOWN"


def _drive(tmp_path: Path, arm: str, name: str = "run", **kwargs: object) -> AgentRun:
    async def main() -> AgentRun:
        return await drive_agent(TOY, TRACE, work=tmp_path / name, arm=arm, probe=PROBE,
                                 reader=_reader, **kwargs)  # type: ignore[arg-type]  # fmt: skip

    return anyio.run(main)


@pytest.mark.parametrize("arm", ["native", "restart", "new_session"])
def test_each_arm_is_verified_from_what_continuity_observed(tmp_path: Path, arm: str) -> None:
    run = _drive(tmp_path, arm)
    assert run.codes == [] and run.crossing.verdict == "verified", run.details
    assert run.steers == {"d3-16": "injected"}  # held in its call, steered, released
    assert run.fixture_calls == 28 and run.probe_tool_attempts == 0
    assert run.probe is not None and run.probe.mode == "forward" and run.probe_reply == "UNKNOWN"
    assert len(run.crossing.pids) == (2 if arm == "restart" else 1)
    if arm == "restart":
        assert run.crossing.pids[0] != run.crossing.pids[1] and run.probe.transcript == 37
    if arm == "new_session":
        assert run.probe.transcript == 0  # notes ride in the system prompt, not as turns
    assert run.agent == "toy 0.1" and run.manifest == TOY.digest


def test_two_replays_have_equal_signatures_unless_the_agent_stamps_the_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = (_drive(tmp_path, "native", f"r{n}") for n in (1, 2))
    assert first.signature == second.signature
    monkeypatch.setenv("TOY_FAULT", "timestamp")
    stamped = [_drive(tmp_path, "native", f"t{n}") for n in (1, 2)]
    assert stamped[0].signature != stamped[1].signature  # copy_unverified for agent_check
    volatile = (r"Now: \d+\.",)
    declared = [_drive(tmp_path, "native", f"v{n}", volatile=volatile) for n in (1, 2)]
    assert declared[0].signature == declared[1].signature


@pytest.mark.parametrize(
    ("fault", "arm", "code", "verdict"),
    [
        ("drop_steer", "native", "replay_fidelity_failed", "verified"),
        ("rewrite_result", "native", "replay_fidelity_failed", "verified"),
        ("unexpected_tool", "native", "replay_fidelity_failed", "verified"),
        ("no_resume", "restart", None, "contradicted"),
        ("leak_transcript", "new_session", None, "contradicted"),
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
    assert run.steers == {"d3-16": "injected"} and run.agent == "minimal 1"
    source = (ROOT / "examples" / "agents" / "minimal" / "minimal_agent.py").read_text()
    assert len([line for line in source.splitlines() if line.strip()]) < 40


def test_the_readme_shows_the_complete_adapter_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text()
    source = (ROOT / "examples" / "agents" / "minimal" / "minimal_agent.py").read_text()
    assert f"```python\n{source}```" in readme
