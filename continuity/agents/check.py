"""``doit agent_check``: the conformance suite an adapter passes before any scored run.

It drives the adapter through one original trace (`continuity.agents.drive`) with the
proxy and fixture checks on, offline (a reader that declines: ``ANSWER: UNKNOWN`` on a
value probe), asking its first probe as a sample does (the probe turn with its
answer-format instruction), and reports what the adapter supports:

- ``initialize``: the adapter starts and declares its identity and capabilities;
- ``replay``: a native replay has no replay code (every turn requested, every tool
  result and steer in the next request, every fixture call matched);
- ``steer``: the trace's steer was injected while its call was held (pass); queued, so
  sent as the next owner turn and checked there (a warning: it works, degraded, and the
  samples carry ``steer_degraded``); late, rejected or not taken (a warning: the steer
  never reached the agent in its turn). A queued steer the agent then does not pass on
  fails ``replay``;
- ``copy``: a second native replay has the same replay signature (else
  ``copy_unverified``);
- ``native``, ``restart``, ``new_session``, and v1's ``compact`` (the agent's own
  compaction) and ``switch`` (a model switch): the arm's boundary is ``verified`` from
  observations; an arm whose capability is not declared is ``skipped``.

The report is ``<out>/agent-check/<name>-<digest16>/report.json`` plus one line per
check. Any failed check is ``agent_check_failed`` (exit 3, a gate), after the report
is written.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Literal

import anyio
import msgspec

from continuity.agents.client import ARM_NEEDS
from continuity.agents.drive import AgentRun, drive_agent
from continuity.agents.manifest import Manifest
from continuity.agents.readers import OfflineReader
from continuity.errors import AdapterError, GateFailed
from continuity.outputs import write_output
from continuity.probes.protocol import probe_turn_text
from continuity.traces.schema import ReplayTrace, Trace

__all__ = ["Check", "CheckReport", "check_agent"]


class Check(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    status: Literal["pass", "fail", "warn", "skipped"]
    detail: str = ""


class CheckReport(msgspec.Struct, frozen=True, kw_only=True):
    agent: str
    manifest: str
    trace: str
    checks: list[Check]


def _run(
    manifest: Manifest, trace: ReplayTrace, work: Path, arm: str, probe: str, sandboxed: bool
) -> AgentRun:
    async def main() -> AgentRun:
        return await drive_agent(
            manifest,
            trace,
            work=work,
            arm=arm,
            probe=probe,
            reader=OfflineReader(),  # stateful (a store arm's lookup): one per run
            sandboxed=sandboxed,
        )

    return anyio.run(main)


def _arm_check(run: AgentRun) -> Check:
    crossing = run.crossing
    status: Literal["pass", "fail"] = "pass" if crossing.verdict == "verified" else "fail"
    detail = crossing.verdict + (f": {'; '.join(crossing.reasons)}" if crossing.reasons else "")
    return Check(name=crossing.arm, status=status, detail=detail)


_STEER_NOTES = {
    "injected": "injected",
    "queued": "queued (sent as the next owner turn: works, degraded)",
    "late": "late (no answer to turn/steer in time)",
    "rejected": "rejected (never reached the agent)",
    "none": "not taken (steer: none; never reached the agent)",
}


def _steer_check(run: AgentRun) -> Check:
    """Pass when every steer was injected; a warning otherwise (module doc)."""
    injected = all(d == "injected" for d in run.steers.values())
    detail = ", ".join(f"{k} {_STEER_NOTES.get(v, v)}" for k, v in run.steers.items())
    return Check(name="steer", status="pass" if injected else "warn", detail=detail)


def check_agent(
    manifest: Manifest, trace: Trace, out: Path, *, sandboxed: bool = True
) -> CheckReport:
    """Run the suite (module doc), the adapter sandboxed unless not `sandboxed` (a
    ``sandbox`` check says which); the report, written before any failure is raised.

    Raises:
        GateFailed: ``agent_check_failed`` naming the failed checks.
    """
    folder = out / "agent-check" / f"{manifest.name}-{manifest.digest[:16]}"
    shutil.rmtree(folder, ignore_errors=True)
    first_probe = trace.probes[0]
    probe = probe_turn_text(first_probe.text, first_probe.category)  # as a sample asks it
    checks: list[Check] = []
    agent = manifest.name
    try:
        first = _run(manifest, trace, folder / "native-1", "native", probe, sandboxed)
        agent = first.agent
        checks.append(Check(name="initialize", status="pass", detail=first.agent))
        replay_ok = not [c for c in first.codes if c != "steer_degraded"]
        checks.append(
            Check(
                name="replay",
                status="pass" if replay_ok else "fail",
                detail="; ".join(first.details),
            )
        )
        checks.append(_steer_check(first))
        second = _run(manifest, trace, folder / "native-2", "native", probe, sandboxed)
        same = first.signature == second.signature
        checks.append(
            Check(
                name="copy",
                status="pass" if same else "fail",
                detail="signatures equal" if same else "copy_unverified",
            )
        )
        checks.append(_arm_check(first))
        checks += _boundaries(manifest, trace, folder, probe, sandboxed)
    except AdapterError as error:
        checks.append(
            Check(
                name="initialize" if not checks else "protocol",
                status="fail",
                detail=f"{error.code}: {error.message}",
            )
        )
    isolation = "bubblewrap" if sandboxed else "UNSANDBOXED (--no-sandbox)"
    checks.append(Check(name="sandbox", status="pass" if sandboxed else "warn", detail=isolation))
    report = CheckReport(agent=agent, manifest=manifest.digest, trace=trace.trace_id, checks=checks)
    write_output(folder / "report.json", msgspec.json.format(msgspec.json.encode(report)))
    for check in checks:
        print(f"agent_check: {check.name:<12} {check.status:<8} {check.detail}"[:300])
    failed = [c.name for c in checks if c.status == "fail"]
    if failed:
        raise GateFailed(
            f"{len(failed)} check(s) failed: {', '.join(failed)}; report {folder / 'report.json'}",
            code="agent_check_failed",
            location=manifest.name,
        )
    return report


def _boundaries(
    manifest: Manifest, trace: ReplayTrace, folder: Path, probe: str, sandboxed: bool
) -> list[Check]:
    checks = []
    for arm in ("restart", "new_session", "compact", "switch"):
        try:
            run = _run(manifest, trace, folder / arm, arm, probe, sandboxed)
        except AdapterError as error:
            if not error.code.startswith("adapter_capability_missing"):
                raise
            needs = ", ".join(ARM_NEEDS[arm])
            checks.append(Check(name=arm, status="skipped", detail=f"not declared: {needs}"))
            continue
        checks.append(_arm_check(run))
    return checks
