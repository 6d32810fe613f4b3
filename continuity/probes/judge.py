"""The optional next-action judge. It never enters the main table: its verdicts are
compared with the deterministic keyword proxy in a separate agreement table.

Offline the judge is scripted: a deterministic stand-in that passes an answer which does
not abstain and states at least half of the rubric keywords. Like the scripted reader,
its verdicts exercise the mechanics and mean nothing about quality.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from continuity.probes.scoring import abstains, contains_value

__all__ = ["Judge", "JudgeVerdict", "ScriptedJudge"]


class JudgeVerdict(msgspec.Struct, frozen=True):
    probe_id: str
    passed: bool
    judge: str


class Judge(Protocol):
    name: str

    def judge(
        self, probe_id: str, question: str, answer: str, rubric: list[str]
    ) -> JudgeVerdict: ...


class ScriptedJudge:
    name = "scripted-judge"

    def judge(self, probe_id: str, question: str, answer: str, rubric: list[str]) -> JudgeVerdict:
        stated = sum(contains_value(answer, keyword) for keyword in rubric)
        passed = not abstains(answer) and stated * 2 >= len(rubric) and stated > 0
        return JudgeVerdict(probe_id, passed, self.name)
