"""The optional next-action judge. It never enters the main table: its verdicts are
compared with the deterministic keyword proxy in a separate agreement table.

Offline the judge is scripted: a deterministic stand-in that passes an answer which does
not abstain and states at least half of the rubric keywords. Like the scripted reader,
its verdicts exercise the mechanics and mean nothing about quality.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from continuity.probes.scoring import abstains, contains_value

__all__ = ["Judge", "JudgeVerdict", "ProviderJudge", "ScriptedJudge"]


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


JUDGE_SYSTEM = (
    "You grade one answer from an assistant. The rubric lists what a correct answer "
    "states about the next action. Reply with PASS or FAIL on the first line, then at "
    "most one sentence of reason."
)


class ProviderJudge:
    """The next-action judge on a real endpoint, behind the call cache (so re-running a
    unit never pays for a verdict twice). A verdict is PASS when the reply's first word
    is PASS; anything else is FAIL."""

    def __init__(
        self,
        spec: Any,
        store_root: str,
        *,
        repeat: int,
        ledger: str | None = None,
        explain_log: str | None = None,
    ) -> None:
        self.spec = spec
        self.store_root = store_root
        self.repeat = repeat
        self.ledger = ledger
        self.explain_log = explain_log
        self.name = f"{spec.kind}:{spec.model}"
        self.receipts: list[Any] = []

    async def _ask(self, prompt: str) -> str:
        from continuity.harness.messages import ModelRequest, UserMessage
        from continuity.providers.cache import CachedProvider, Ledger
        from continuity.providers.protocol import complete
        from continuity.providers.real import make_provider
        from continuity.store import Store

        ledger = Ledger(self.ledger) if self.ledger else None
        try:
            async with make_provider(self.spec) as inner:
                provider = CachedProvider(
                    inner,
                    self.spec,
                    Store(self.store_root),
                    repeat=self.repeat,
                    role="judge",
                    ledger=ledger,
                    explain_log=self.explain_log,
                )
                request = ModelRequest(
                    session_id="judge",
                    provider=self.spec.kind,
                    model=self.spec.model,
                    system=JUDGE_SYSTEM,
                    messages=(UserMessage(prompt, source="probe"),),
                )
                done = await complete(provider, request)
                self.receipts.extend(provider.receipts)
                return done.message.text
        finally:
            if ledger is not None:
                ledger.close()

    def judge(self, probe_id: str, question: str, answer: str, rubric: list[str]) -> JudgeVerdict:
        import anyio

        prompt = (
            f"Question:\n{question}\n\nAnswer:\n{answer}\n\n"
            f"Rubric (a correct answer states these):\n- " + "\n- ".join(rubric)
        )
        reply = anyio.run(self._ask, prompt)
        words = reply.strip().split()
        passed = bool(words) and words[0].strip(".:,*").upper() == "PASS"
        return JudgeVerdict(probe_id, passed, self.name)
