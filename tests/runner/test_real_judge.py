"""The judge in real mode, against the loopback wire server: every answer the scorer
leaves unresolved gets a verdict parsed from the server's reply, the verdict decides it,
and no judge request says which arm answered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from continuity.probes.judge import JUDGE_SYSTEM
from continuity.report.aggregate import aggregate_run
from continuity.servers.wire import WireServer, serve_in_thread
from tests.runner.test_real import TRACE, UNSURE, Rig, judge_replays

ARMS = ("native", "compaction-1")


class JudgingWire(WireServer):
    """The loopback model, also playing a judge: a grading request gets a verdict whose
    reason carries the call number, so each recorded verdict can be traced to a reply.
    Every probe is answered in words the scorer leaves unresolved, so each goes to it."""

    def reply(self, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        if JUDGE_SYSTEM in json.dumps(body):
            grading = json.dumps(body)
            verdict = "INCORRECT (fabricated)" if UNSURE in grading else "CORRECT"
            return f"**{verdict}**\nloopback verdict {len(self.calls)}.", None
        text, tool = super().reply(path, body)
        return (UNSURE if text in ("UNKNOWN", "ANSWER: UNKNOWN") else text), tool


def test_every_unresolved_answer_is_judged_from_the_servers_replies_without_its_arm(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = JudgingWire()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", arms=",".join(ARMS))
        result = rig.run()
        results, _, _ = aggregate_run(rig.store, rig.output)
    judge_bodies = [body for _, body in app.calls if JUDGE_SYSTEM in json.dumps(body)]
    replies = {f"loopback verdict {n}." for n in range(1, len(app.calls) + 1)}
    units = {r.arm: r for r in result.records}
    assert set(units) == set(ARMS)
    for record in units.values():
        valid = [p for p in record.probes if p.status == "valid"]
        assert valid and [v.probe_id for v in record.judge] == [p.probe_id for p in valid]
        for verdict, probe in zip(record.judge, valid, strict=True):
            assert verdict.judge == "openai-chat:gpt-6-mini" and verdict.reason in replies
            assert (verdict.passed, verdict.outcome) == (False, "fabricated")
            assert probe.answer == UNSURE
            # The scorer left it unresolved; the judge's verdict decided it.
            assert (probe.outcome, probe.correct, probe.decided_by) == (
                "fabricated",
                False,
                "judge",
            )
        assert len(record.judge_calls) == len(valid)
    # The judge request carries the question, reference and answer, never the arm, the
    # trace, the unit or the repeat's identity.
    assert judge_bodies
    for body in judge_bodies:
        text = json.dumps(body)
        assert "Reference:" in text and "Answer to grade:" in text
        for record in units.values():
            for secret in (record.arm, record.trace_id, record.key, record.checkpoint):
                assert secret not in text, secret
        assert TRACE not in text and "native" not in text.lower()
    # Both arms answered each probe alike, so their judge requests are byte-identical:
    # the second is served by the call cache and the server saw one per probe.
    assert len(judge_bodies) == len(units["native"].judge)
    replayed = {arm: judge_replays(rig.store, r) for arm, r in units.items()}
    assert sum(len(keys) for keys in replayed.values()) == len(units["compaction-1"].judge)
    assert all(replayed[a] <= {c.key for c in r.judge_calls} for a, r in units.items())
    # Decided by the judge, the samples count in the main tables, labelled as the judge's,
    # and never in the judge-versus-scorer agreement (the scorer gave no verdict).
    assert results.judge.pairs == 0
    for arm, record in units.items():
        overall = results.accuracy[record.family][arm]["overall"]
        assert overall.judge_decided == overall.n == len(record.judge) and overall.coverage == 1.0
