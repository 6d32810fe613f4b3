"""Scored samples of an outside agent: ``doit units --agent agent.toml`` (CAP/0 v0).

Every (trace, arm, probe) is one sample on a fresh copy: the trace is replayed through
the adapter again (`continuity.agents.drive`), the arm's boundary crossed, the probe
asked. The copies are proven identical by the replay signature: every sample of a trace
must have the first sample's signature, else it is ``copy_unverified``.

A sample is ``valid`` when its replay has no code but ``steer_degraded`` (a label), its
boundary is ``verified`` and its copy is proven; otherwise it is excluded as
``replay_failed``, ``contradicted``, ``not_crossed`` or ``copy_unverified``. Each
answer is scored with the benchmark's scorer, and each probe's availability is read
from the probe request the proxy saw (the same needles as the reference harness).

The run writes ``samples.jsonl`` (content-free but for the answers) and ``summary.md``
under ``<out>/runs/<run>/agent/``, the summary opening with a fixed banner that says
what a black box cannot show. Offline the reader answers ``UNKNOWN``, so the accuracy
means nothing there; the boundary verdicts and the availability do.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import msgspec

from continuity.agents.drive import AgentRun, drive_agent
from continuity.agents.manifest import Manifest
from continuity.outputs import write_output
from continuity.probes.availability import Availability, needles_for
from continuity.probes.scoring import locale_for, score_answer
from continuity.servers.proxy_script import WireRequest
from continuity.traces.schema import Probe, Trace

__all__ = ["BANNER", "AgentSample", "banner", "run_agent_units", "summary"]

BANNER = (
    "> **External agent.** `{agent}` via adapter `{name}` (manifest `{digest}`). Replay "
    "mode **scripted**: the agent's model never saw the conversation during replay, so "
    "memory written by model decisions could not happen. Boundary evidence: **verified "
    "by traffic** for {verified} of {total} samples, contradicted for {contradicted} and "
    "not crossed for {not_crossed} (excluded). Not verifiable for this agent: memory the "
    "agent never sent to a model; the contents of provider-side compaction; whether every "
    "model call went through the proxy (network **not isolated**). Fresh-copy isolation: "
    "**re-replay**, signatures {signatures}."
)


class AgentSample(msgspec.Struct, frozen=True, kw_only=True):
    trace_id: str
    arm: str
    probe_id: str
    category: str
    status: str  # valid, replay_failed, contradicted, not_crossed, copy_unverified
    reasons: list[str]
    answer: str
    outcome: str
    correct: bool
    availability: Availability | None
    steers: dict[str, str]
    signature: str
    pids: list[int]


async def _unknown(request: WireRequest) -> str:
    return "UNKNOWN"


def _status(run: AgentRun, first: str) -> tuple[str, list[str]]:
    codes = [c for c in run.codes if c != "steer_degraded"]
    if codes:
        return "replay_failed", run.details
    if run.crossing.verdict != "verified":
        return run.crossing.verdict, run.crossing.reasons
    if run.signature != first:
        return "copy_unverified", ["the replay signature differs from the trace's first copy"]
    return "valid", [d for d in run.details if d.startswith("steer_degraded")]


def _sample(manifest: Manifest, trace: Trace, arm: str, probe: Probe, work: Path) -> AgentRun:
    needles = needles_for(probe.expectation, trace)

    async def main() -> AgentRun:
        return await drive_agent(manifest, trace, work=work, arm=arm, probe=probe.text,
                                 reader=_unknown, needles=needles)  # fmt: skip

    return anyio.run(main)


def run_agent_units(
    manifest: Manifest, traces: Sequence[Trace], arms: Sequence[str], probe_limit: int | None,
    folder: Path, say: Callable[[str], None] = print,
) -> list[AgentSample]:  # fmt: skip
    """Every sample (module doc), written to `folder` as they finish."""
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "logs").mkdir(parents=True)
    samples: list[AgentSample] = []
    agent = manifest.name
    total = sum(len(t.probes[:probe_limit]) for t in traces) * len(arms)
    for trace in traces:
        first = ""
        for arm in arms:
            for probe in trace.probes[:probe_limit]:
                work = folder / "work" / f"{trace.trace_id}-{arm}-{probe.probe_id}"
                run = _sample(manifest, trace, arm, probe, work)
                shutil.move(work / "adapter.log", folder / "logs" / f"{work.name}.log")
                shutil.rmtree(work, ignore_errors=True)  # the agent's state: not evidence
                agent, first = run.agent, first or run.signature
                status, reasons = _status(run, first)
                score = score_answer(probe.expectation, run.probe_reply,
                                     locale=locale_for(trace.family))  # fmt: skip
                samples.append(AgentSample(
                    trace_id=trace.trace_id, arm=arm, probe_id=probe.probe_id,
                    category=probe.category, status=status, reasons=reasons,
                    answer=run.probe_reply, outcome=score.outcome, correct=score.correct,
                    availability=run.availability, steers=run.steers, signature=run.signature,
                    pids=run.crossing.pids,
                ))  # fmt: skip
                say(f"agent units [{len(samples)}/{total}] {trace.trace_id} {arm} "
                    f"{probe.probe_id} {status}")  # fmt: skip
    lines = b"".join(msgspec.json.encode(s) + b"\n" for s in samples)
    write_output(folder / "samples.jsonl", lines)
    write_output(folder / "summary.md", summary(samples, manifest, agent).encode())
    shutil.rmtree(folder / "work", ignore_errors=True)
    return samples


def banner(samples: Sequence[AgentSample], manifest: Manifest, agent: str) -> str:
    counts = Counter(s.status for s in samples)
    verified = sum(1 for s in samples if s.status in ("valid", "copy_unverified"))
    equal = not counts["copy_unverified"]
    return BANNER.format(
        agent=agent, name=f"{manifest.name}@{manifest.version}", digest=manifest.digest[:16],
        verified=verified, total=len(samples), contradicted=counts["contradicted"],
        not_crossed=counts["not_crossed"], signatures="equal" if equal else "NOT equal",
    )  # fmt: skip


def summary(samples: Sequence[AgentSample], manifest: Manifest, agent: str) -> str:
    """``summary.md``: the banner, then per arm the samples, their classes, the
    availability of the valid ones and their accuracy."""
    rows = ["| arm | samples | valid | excluded | in context | absent | correct (valid) |",
            "|---|---:|---:|---|---:|---:|---:|"]  # fmt: skip
    for arm in dict.fromkeys(s.arm for s in samples):
        mine = [s for s in samples if s.arm == arm]
        valid = [s for s in mine if s.status == "valid"]
        excluded = Counter(s.status for s in mine if s.status != "valid")
        shown = ", ".join(f"{k} {v}" for k, v in sorted(excluded.items())) or "none"
        fact = Counter(s.availability.fact for s in valid if s.availability is not None)
        correct = sum(1 for s in valid if s.correct)
        rows.append(f"| {arm} | {len(mine)} | {len(valid)} | {shown} | {fact['in_context']} "
                    f"| {fact['absent']} | {correct}/{len(valid)} |")  # fmt: skip
    return "\n".join([f"# Outside agent: {agent}", "", banner(samples, manifest, agent), "",
                      *rows, ""])  # fmt: skip
