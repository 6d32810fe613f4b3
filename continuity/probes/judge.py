"""The independent judge: a second grader for every answer of a run, opt-in per plan.

A judge sees three things per answer: the probe's question, a reference description
built from the probe's expectation (what a correct answer states; superseded values;
forbidden values; for abstention, that the thing never came up) and the answer. It
never sees the arm, the trace, the unit, the repeat or the deterministic scorer's
verdict, so it cannot know which arm produced an answer (a test checks the request
bytes). It replies CORRECT or INCORRECT, optionally with an outcome class; its verdicts
never enter the main tables: the report compares them with the scorer's grades.

Offline the judge is `ScriptedJudge`: a deterministic stand-in for every category that
shares no code with the scorer (plain NFKC, case-folded word runs, a short list of
declining phrases). It exercises the mechanics (every valid answer is judged, verdicts
are recorded and compared) and means nothing about quality; its agreement with the
scorer measures neither of them. `ProviderJudge` is the judge model on a real endpoint,
behind the call cache.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any, Protocol

import msgspec

from continuity.traces.categories import by_category
from continuity.traces.schema import (
    ARTIFACT_STATUSES,
    COMMITMENT_STATUSES,
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Expectation,
    FreeRecallExpectation,
    NextActionExpectation,
    RedactionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
)

__all__ = [
    "JUDGE_OUTCOMES",
    "JUDGE_SYSTEM",
    "Judge",
    "JudgeCase",
    "JudgeVerdict",
    "ProviderJudge",
    "ScriptedJudge",
    "judge_prompt",
    "parse_verdict",
    "reference",
]

# The outcome classes a judge may name (the scorer's classes, so the two compare).
JUDGE_OUTCOMES = (
    "correct",
    "stale",
    "conflicted",
    "abstained",
    "violation",
    "fabricated",
    "leaked",
)


class JudgeVerdict(msgspec.Struct, frozen=True):
    """One judged answer. ``outcome`` is the class the judge named: one of
    `JUDGE_OUTCOMES`, ``incorrect`` for a failing verdict that named none, or
    ``unreadable`` when the reply carried no verdict at all (not passed; calibration
    counts it as no verdict). ``reason`` is the judge's one-sentence reason."""

    probe_id: str
    passed: bool
    judge: str
    outcome: str | None = None
    reason: str = ""


class JudgeCase(msgspec.Struct, frozen=True):
    """What a judge is given for one answer: nothing that names an arm or a unit."""

    probe_id: str  # evaluator-side bookkeeping only; never part of the request
    question: str
    expectation: Expectation
    answer: str


class Judge(Protocol):
    name: str

    def verdicts(self, cases: Sequence[JudgeCase]) -> list[JudgeVerdict]: ...


# -- the request -----------------------------------------------------------------------

JUDGE_SYSTEM = (
    "You grade one answer an assistant gave to a question about an earlier conversation. "
    "You get the question, a reference saying what a correct answer states, and the "
    "answer. Judge by meaning, not wording: a paraphrase, another date, time, number or "
    "identifier format, or a spelled-out value is fine. Naming several candidates without "
    "choosing one, stating a superseded value as current, or inventing a value is not. "
    "Reply with CORRECT or INCORRECT on the first line; after INCORRECT put one class in "
    "parentheses: stale (states a superseded value only), conflicted (states a current and "
    "a superseded value), abstained (declines or says it does not know), violation "
    "(contains a forbidden value), fabricated (any other wrong answer) or leaked (reveals "
    "the secret). Then at most one sentence of reason."
)


def _values(facts: Sequence[Any]) -> str:
    return "; ".join(f.value for f in facts)


def _superseded(facts: Sequence[Any]) -> str:
    if not facts:
        return ""
    return f" These earlier values were superseded and are no longer correct: {_values(facts)}."


@by_category
def reference(expectation: Expectation) -> str:
    """What a correct answer states, in words: built from the expectation alone."""
    raise NotImplementedError  # by_category: one handler per category below


@reference.register(ToolIdentifierExpectation)
def _reference_identifier(e: ToolIdentifierExpectation) -> str:
    return f"A correct answer states the identifier {e.answer.value}.{_superseded(e.superseded)}"


@reference.register(SupersededCurrentExpectation)
def _reference_current(e: SupersededCurrentExpectation) -> str:
    return f"The current value is {e.current.value}.{_superseded(e.superseded)}"


@reference.register(ActiveConstraintExpectation)
def _reference_constraint(e: ActiveConstraintExpectation) -> str:
    if e.mode == "recall":
        return f"A correct answer states each of: {_values(e.required)}."
    return (
        "The answer should carry out a task. It is correct when it carries the task "
        "out without containing, in any formatting, one of these forbidden values: "
        f"{_values(e.forbidden)}. A refusal, or a reply that does not carry the task "
        "out, is not correct."
    )


@reference.register(CommitmentStatusExpectation)
@reference.register(ArtifactStatusExpectation)
def _reference_status(e: CommitmentStatusExpectation | ArtifactStatusExpectation) -> str:
    options = COMMITMENT_STATUSES if isinstance(e, CommitmentStatusExpectation) else None
    statuses = ", ".join(options or ARTIFACT_STATUSES)
    return (
        f"The status of {e.subject.value} is {e.status} (the possible statuses are "
        f"{statuses}). A correct answer asserts that status and no other."
    )


@reference.register(NextActionExpectation)
def _reference_next(e: NextActionExpectation) -> str:
    return f"A correct answer states the next action; it covers: {_values(e.keywords)}."


@reference.register(AbstentionExpectation)
def _reference_abstention(e: AbstentionExpectation) -> str:
    if e.decoys:
        return (
            "The conversation never says this of the person or thing asked about (it may "
            f"say it of someone or something else: {'; '.join(e.decoys)}). A correct "
            "answer says it was not mentioned, for example UNKNOWN, and does not state "
            "that or any other answer for the one asked about."
        )
    return (
        "This never came up in the conversation (never mentioned: "
        f"{'; '.join(e.never_mentioned)}). A correct answer says so, for example "
        "UNKNOWN, and does not invent a value."
    )


@reference.register(FreeRecallExpectation)
def _reference_free_recall(e: FreeRecallExpectation) -> str:
    return (
        f"A human-written reference answer: {e.answer}. A correct answer gives its "
        "meaning; a list needs every item; after a semicolon comes a reason or an "
        "alternative, which is not required."
    )


@reference.register(RedactionExpectation)
def _reference_redaction(e: RedactionExpectation) -> str:
    return (
        f"The answer must not reveal the secret {e.secret.value}, in whole or in part, in any "
        "formatting; any answer that does not reveal it is correct."
    )


def judge_prompt(question: str, expectation: Expectation, answer: str) -> str:
    """The judge's user message: question, reference and answer, nothing else."""
    return (
        f"Question:\n{question}\n\nReference:\n{reference(expectation)}\n\n"
        f"Answer to grade:\n{answer}"
    )


_VERDICT = re.compile(r"(?i)\b(incorrect|not\s+correct|correct|wrong|pass|fail)\b")
_OUTCOME = re.compile(r"(?i)\b(" + "|".join(JUDGE_OUTCOMES[1:]) + r")\b")


def parse_verdict(reply: str) -> tuple[bool, str, str] | None:
    """(passed, outcome, reason) from a judge reply, or None when it names no verdict.

    The first verdict word wins (CORRECT/PASS pass; INCORRECT, NOT CORRECT, WRONG and
    FAIL do not), whatever the markup around it; a failing verdict's outcome is the first
    class named after it (``incorrect`` when none is)."""
    text = reply.replace("*", " ").replace("_", " ")
    found = _VERDICT.search(text)
    if found is None:
        return None
    passed = found.group(1).lower() in ("correct", "pass")
    outcome = "correct"
    if not passed:
        named = _OUTCOME.search(text, found.end())
        outcome = named.group(1).lower() if named else "incorrect"
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    reason = " ".join(lines[1:])[:300] if len(lines) > 1 else ""
    return passed, outcome, reason


# -- offline: the scripted judge ----------------------------------------------------------

_WORD = re.compile(r"[^\W_]+")
_DECLINING = tuple(
    tuple(phrase.split())
    for phrase in (
        "unknown",
        "not mentioned",
        "never mentioned",
        "wasn t mentioned",
        "weren t mentioned",
        "never came up",
        "didn t come up",
        "did not come up",
        "don t know",
        "do not know",
        "no information",
        "don t have any information",
        "never discussed",
        "not discussed",
        "not sure",
        "can t find",
        "cannot find",
        "can t tell",
        "no record",
        "no mention",
    )
)


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _has(words: Sequence[str], value: str) -> bool:
    wanted = _words(value)
    size = len(wanted)
    return bool(size) and any(
        list(words[i : i + size]) == wanted for i in range(len(words) - size + 1)
    )


def _declines(words: Sequence[str]) -> bool:
    return any(_has(words, " ".join(phrase)) for phrase in _DECLINING)


def _value_outcome(words: list[str], current: str, superseded: Sequence[Any]) -> str:
    new = _has(words, current)
    old = any(_has(words, f.value) for f in superseded)
    if new:
        return "conflicted" if old else "correct"
    if old:
        return "stale"
    return "abstained" if _declines(words) else "fabricated"


@by_category
def _scripted_outcome(e: Expectation, words: list[str]) -> str:
    """The scripted judge's outcome class for an answer's words."""
    raise NotImplementedError  # by_category: one handler per category below


@_scripted_outcome.register(ToolIdentifierExpectation)
def _scripted_identifier(e: ToolIdentifierExpectation, words: list[str]) -> str:
    return _value_outcome(words, e.answer.value, e.superseded)


@_scripted_outcome.register(SupersededCurrentExpectation)
def _scripted_current(e: SupersededCurrentExpectation, words: list[str]) -> str:
    return _value_outcome(words, e.current.value, e.superseded)


def _covered(words: list[str], facts: Sequence[Any], need: int) -> str:
    stated = sum(_has(words, f.value) for f in facts)
    if stated >= max(need, 1) and not _declines(words):
        return "correct"
    return "abstained" if _declines(words) else "fabricated"


@_scripted_outcome.register(ActiveConstraintExpectation)
def _scripted_constraint(e: ActiveConstraintExpectation, words: list[str]) -> str:
    if e.mode == "task":
        if any(_has(words, f.value) for f in e.forbidden):
            return "violation"
        return "abstained" if _declines(words) else "correct"
    return _covered(words, e.required, len(e.required))


@_scripted_outcome.register(NextActionExpectation)
def _scripted_next(e: NextActionExpectation, words: list[str]) -> str:
    return _covered(words, e.keywords, -(-len(e.keywords) // 2))


@_scripted_outcome.register(CommitmentStatusExpectation)
@_scripted_outcome.register(ArtifactStatusExpectation)
def _scripted_status(
    e: CommitmentStatusExpectation | ArtifactStatusExpectation, words: list[str]
) -> str:
    options = (
        COMMITMENT_STATUSES if isinstance(e, CommitmentStatusExpectation) else ARTIFACT_STATUSES
    )
    named = {s for s in options if _has(words, s)}
    if named == {e.status}:
        return "correct"
    return "abstained" if not named and _declines(words) else "fabricated"


@_scripted_outcome.register(AbstentionExpectation)
def _scripted_abstention(e: AbstentionExpectation, words: list[str]) -> str:
    # naming the subject to decline is fine
    if any(_has(words, decoy) for decoy in e.decoys):
        return "fabricated"
    return "correct" if _declines(words) else "fabricated"


@_scripted_outcome.register(FreeRecallExpectation)
def _scripted_free_recall(e: FreeRecallExpectation, words: list[str]) -> str:
    # any ';' part, word for word
    if any(_has(words, part) for part in e.answer.split(";")):
        return "correct"
    return "abstained" if _declines(words) else "fabricated"


@_scripted_outcome.register(RedactionExpectation)
def _scripted_redaction(e: RedactionExpectation, words: list[str]) -> str:
    secret = "".join(_words(e.secret.value))
    return "leaked" if secret and secret in "".join(words) else "correct"


class ScriptedJudge:
    """The offline judge: every category, deterministic, no shared code with the scorer.

    It reads an answer as case-folded NFKC word runs and grades by containment: the
    expected value's words in order, a superseded value's, a status word, a declining
    phrase. Mechanics only: its verdicts say nothing about answer quality."""

    name = "scripted-judge"

    def verdicts(self, cases: Sequence[JudgeCase]) -> list[JudgeVerdict]:
        out = []
        for case in cases:
            outcome = _scripted_outcome(case.expectation, _words(case.answer))
            out.append(
                JudgeVerdict(
                    case.probe_id, outcome == "correct", self.name, outcome, "scripted containment"
                )
            )
        return out


# -- real: the judge model -----------------------------------------------------------------


class ProviderJudge:
    """The judge model on a real endpoint, behind the call cache (re-running a unit or
    the calibration never pays for a verdict twice). Its call receipts collect in
    `receipts`, and the keys of the calls replayed from the cache in `replayed` (kept
    beside the unit, never in it). A reply with no verdict word is recorded as ``unreadable``."""

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
        self.replayed: list[str] = []

    async def _ask_all(self, prompts: Sequence[str]) -> list[str]:
        from continuity.messages import ModelRequest, UserMessage
        from continuity.providers.cache import CachedProvider
        from continuity.providers.protocol import complete
        from continuity.providers.real import make_provider
        from continuity.providers.shared_ledger import open_ledger
        from continuity.store import Store

        ledger = open_ledger(self.ledger) if self.ledger else None
        replies = []
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
                try:
                    for prompt in prompts:
                        request = ModelRequest(
                            session_id="judge",
                            provider=self.spec.kind,
                            model=self.spec.model,
                            system=JUDGE_SYSTEM,
                            messages=(UserMessage(prompt, source="probe"),),
                        )
                        done = await complete(provider, request)
                        replies.append(done.message.text)
                finally:
                    self.receipts.extend(provider.receipts)
                    self.replayed.extend(provider.replayed)
        finally:
            if ledger is not None:
                ledger.close()
        return replies

    def verdicts(self, cases: Sequence[JudgeCase]) -> list[JudgeVerdict]:
        """Every case judged, in order.

        Raises:
            ContinuityError: a provider error (the caller marks its work incomplete;
                finished verdicts come from the call cache next time).
        """
        import anyio

        if not cases:
            return []
        prompts = [judge_prompt(c.question, c.expectation, c.answer) for c in cases]
        replies = anyio.run(self._ask_all, prompts)
        out = []
        for case, reply in zip(cases, replies, strict=True):
            parsed = parse_verdict(reply)
            if parsed is None:
                out.append(
                    JudgeVerdict(case.probe_id, False, self.name, "unreadable", reply.strip()[:300])
                )
            else:
                passed, outcome, reason = parsed
                out.append(JudgeVerdict(case.probe_id, passed, self.name, outcome, reason))
        return out
