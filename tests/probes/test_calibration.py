"""Calibration: the deterministic scorer against hand-labelled answers.

Three suites are data, labelled by a careful human reader: the tuning suite
(`fixtures/calibration/answers-v1.jsonl`) and two held-out suites
(`fixtures/calibration/holdout-v1.jsonl` and, for free recall and unanswerable questions
with decoys, `fixtures/calibration/holdout-free-recall-v2.jsonl`), each with its first,
blind measurement frozen in its ``*-blind.json``. `fixtures/calibration/scorer-agreement.json`
records the scorer's agreement on every suite and the cases it misjudges, as written by
``python3 -m continuity.probes.validity --record``. Every case of every suite is a
test: the ones recorded as misjudged are strict xfails, so a case the scorer learns (or
unlearns) forces the record, docs/validity.md and the README's blind spots to be updated.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from pathlib import Path

import pytest

from continuity.errors import CalibrationInvalid
from continuity.probes.calibration import (
    CATEGORIES,
    VERDICTS,
    Agreement,
    CalibrationCase,
    agreement,
    default_cases_path,
    default_doc_path,
    default_holdout_path,
    default_record_path,
    load_cases,
    render_table,
    scorer_verdicts,
)
from continuity.probes.validity import (
    HELD_OUT,
    SUITE_NAMES,
    default_blind_path,
    default_suites,
    load_blind,
    load_record,
    record,
    record_blind,
)
from continuity.traces.schema import (
    ActiveConstraintExpectation,
    SupersededCurrentExpectation,
)

CASES = load_cases()
HOLDOUT = load_cases(default_holdout_path())
HOLDOUT_FREE_RECALL = load_cases(default_suites()["holdout-free-recall"])
HOLDOUT_V3 = load_cases(default_suites()["holdout-v3"])
HOLDOUT_V4 = load_cases(default_suites()["holdout-v4"])
HOLDOUT_V5 = load_cases(default_suites()["holdout-v5"])
HOLDOUT_V6 = load_cases(default_suites()["holdout-v6"])
SUITES = {
    "tuning": CASES,
    "holdout": HOLDOUT,
    "holdout-free-recall": HOLDOUT_FREE_RECALL,
    "holdout-v3": HOLDOUT_V3,
    "holdout-v4": HOLDOUT_V4,
    "holdout-v5": HOLDOUT_V5,
    "holdout-v6": HOLDOUT_V6,
}
RECORD = load_record()
BLIND = load_blind()
BLIND_FREE_RECALL = load_blind(default_blind_path("holdout-free-recall"))
MISJUDGED = {case_id for entry in RECORD.suites for case_id in entry.agreement.misjudged}

# Every class of answer issue 10's "Why" names, by the `class` the suite gives it.
ISSUE_CLASSES = (
    "id-spaces",
    "id-unicode-dash",
    "id-fullwidth",
    "prefix",
    "superstring",
    "negation",
    "supersession",
    "both-values",
    "candidate-list",
    "needle-in-list",
    "decline",
    "decline-with-value",
    "status-negated",
    "status-options",
    "echo-question",
    "time-format",
    "numeric-date",
    "decimal-comma",
    "phone-format",
    "postcode-spacing",
    "zero-width",
    "plain",
    "verbose",
    "markdown",
)
# Classes that must hold both a right and a wrong answer (the issue's "each with a
# correct and a wrong answer"); the rest are wrong by construction (a prefix, a
# candidate list, an echoed question, ...).
PAIRED_CLASSES = (
    "id-spaces",
    "id-unicode-dash",
    "id-fullwidth",
    "negation",
    "supersession",
    "decline",
    "status-negated",
    "time-format",
    "numeric-date",
    "decimal-comma",
    "phone-format",
    "postcode-spacing",
    "zero-width",
)
DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
DECLINES = (
    "wasn't mentioned",
    "i don't have any information",
    "we never discussed",
    "i'm not sure",
    "in our conversation",
    "i can't find",
)


def _by_class(name: str) -> list[CalibrationCase]:
    return [case for case in CASES if case.case_class == name]


def _value_kind(expectation: SupersededCurrentExpectation) -> str:
    value = expectation.current.value
    if re.search(r"[$£€]", value):
        return "amount"
    if re.search(r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", value):
        return "date"
    if re.search(r"(?i)\d(?::\d\d)?\s*[ap]m\b|^\d\d:\d\d$|\bnoon\b", value):
        return "time"
    return "other"


# ------------------------------------------------------------------ (a) the suite's shape


def test_the_suite_is_large_and_covers_every_category() -> None:
    assert len(CASES) >= 300
    assert len({case.id for case in CASES}) == len(CASES)
    per_category = Counter(case.category for case in CASES)
    assert set(per_category) == set(CATEGORIES)
    assert min(per_category.values()) >= 25, per_category
    modes = {
        case.expectation.mode
        for case in CASES
        if isinstance(case.expectation, ActiveConstraintExpectation)
    }
    assert modes == {"recall", "task"}
    kinds = Counter(
        _value_kind(case.expectation)
        for case in CASES
        if isinstance(case.expectation, SupersededCurrentExpectation)
    )
    assert set(kinds) == {"amount", "date", "time", "other"}
    assert min(kinds.values()) >= 15, kinds


def test_labels_are_a_realistic_mix() -> None:
    verdicts = Counter(case.verdict for case in CASES)
    assert set(verdicts) == set(VERDICTS)
    assert 0.35 <= verdicts["correct"] / len(CASES) <= 0.6, verdicts


@pytest.mark.parametrize("name", ISSUE_CLASSES)
def test_every_issue_class_is_present(name: str) -> None:
    assert _by_class(name), name


@pytest.mark.parametrize("name", PAIRED_CLASSES)
def test_every_paired_class_has_a_right_and_a_wrong_answer(name: str) -> None:
    verdicts = {case.verdict == "correct" for case in _by_class(name)}
    assert verdicts == {True, False}, name


def test_the_formats_the_issue_names_are_written_as_it_names_them() -> None:
    answers = [case.answer for case in CASES]
    text = "\n".join(answers)
    for dash in DASHES:
        assert any(dash in a for a in _answers("id-unicode-dash")), f"U+{ord(dash):04X}"
    assert any(unicodedata.name(ch, "").startswith("FULLWIDTH DIGIT") for ch in text)
    assert "\u200b" in "".join(_answers("zero-width"))
    for needle in ("19:30h", "1930 hrs", "half past seven in the evening", "18.06.2027"):
        assert needle in text.lower() or needle in text, needle
    assert any("18/06/2027" in case.answer and case.locale == "day-first" for case in CASES)
    assert "07700-900-" in text and "+44 7700 900" in text
    assert any(re.search(r"\d,\d\d\b", a) and "€" in a for a in answers)
    for phrase in DECLINES:
        assert any(phrase in a.lower() for a in _answers("decline")), phrase
    status_negated = [a.lower() for a in _answers("status-negated")]
    assert any(a.startswith("not sent yet") for a in status_negated)


def _answers(name: str) -> list[str]:
    return [case.answer for case in _by_class(name)]


def test_the_issue_examples_are_labelled_as_a_human_reads_them() -> None:
    def verdict_of(answer: str) -> set[str]:
        return {case.verdict for case in CASES if case.answer == answer}

    assert verdict_of("kln 4471 qx") == {"correct"}
    assert verdict_of("It is not TRX-5520-KM.") == {"fabricated"}
    assert verdict_of("Not sent yet; still a draft.") == {"correct"}
    assert verdict_of("SENT, DRAFTED or SCHEDULED; I can't tell.") == {"abstained"}
    assert verdict_of("We never discussed a marquee.") == {"correct"}


def test_locales_are_declared_only_where_the_suite_knows_them() -> None:
    assert {case.locale for case in CASES} == {None, "day-first"}


# ------------------------------------------------------------------ (b) and (c): the scorer


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_the_record_was_made_on_these_suites(name: str) -> None:
    entry = RECORD.suite(name)
    digest = hashlib.sha256(default_suites()[name].read_bytes()).hexdigest()
    assert entry.suite_sha256 == digest, "re-record: python3 -m continuity.probes.validity --record"
    assert entry.cases == len(SUITES[name])
    assert {case.id for case in SUITES[name]} >= set(entry.agreement.misjudged)
    assert [e.name for e in RECORD.suites] == [
        "tuning",
        "holdout",
        "holdout-free-recall",
        "holdout-v3",
        "holdout-v4",
        "holdout-v5",
        "holdout-v6",
    ]


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_agreement_does_not_drop_below_the_record(name: str) -> None:
    now = agreement(SUITES[name], scorer_verdicts(SUITES[name]))
    entry = RECORD.suite(name).agreement
    recorded = {row.category: row for row in (*entry.rows, entry.overall)}
    for row in (*now.rows, now.overall):
        before = recorded[row.category]
        assert row.n == before.n
        assert (row.outcome_agree or 0) >= (before.outcome_agree or 0), row
        assert row.binary_agree >= before.binary_agree, row
        # Right when sure, silent when not: never more confident mistakes than recorded.
        assert row.confidently_wrong <= before.confidently_wrong, row
        assert row.resolved >= before.resolved, row


def _param(case: CalibrationCase) -> object:
    if case.id in MISJUDGED:
        reason = f"misjudged by the scorer ({case.case_class}); listed in scorer-agreement.json"
        return pytest.param(case, id=case.id, marks=pytest.mark.xfail(strict=True, reason=reason))
    return pytest.param(case, id=case.id)


@pytest.mark.parametrize(
    "case", [_param(case) for case in (*CASES, *HOLDOUT, *HOLDOUT_FREE_RECALL, *HOLDOUT_V3)]
)
def test_each_case_is_judged_as_labelled(case: CalibrationCase) -> None:
    (verdict,) = scorer_verdicts([case]).values()
    assert verdict == case.verdict, f"{case.answer!r}: label {case.verdict}, scorer {verdict}"


# ------------------------------------------------------------------ the held-out suite


def test_the_holdout_suites_cover_every_category_and_share_no_case() -> None:
    assert len(HOLDOUT) == 150 and len(HOLDOUT_FREE_RECALL) == 175
    assert {case.category for case in HOLDOUT} == set(CATEGORIES) - {"free_recall"}
    assert {case.category for case in HOLDOUT_FREE_RECALL} == {"free_recall", "abstention"}
    decoys = [c for c in HOLDOUT_FREE_RECALL if c.category == "abstention"]
    assert all(c.expectation.decoys for c in decoys)  # type: ignore[union-attr]
    ids = [case.id for suite in SUITES.values() for case in suite]
    assert len(ids) == len(set(ids))


def test_the_free_recall_blind_measurement_is_frozen_as_first_taken() -> None:
    """The free-recall held-out suite's first measurement (scorer at 09a6e07, before
    anyone working on the scorer read the cases) is history: these numbers never change."""
    digest = hashlib.sha256(default_suites()["holdout-free-recall"].read_bytes()).hexdigest()
    blind = BLIND_FREE_RECALL
    assert blind.suite_sha256 == digest and blind.cases == 175
    assert blind.scorer_commit.startswith("09a6e07") and blind.suite_commit.startswith("f22e5ff")
    overall = blind.agreement.overall
    assert (overall.n, overall.outcome_agree, overall.binary_agree) == (175, 146, 147)
    per_category = {row.category: (row.outcome_agree, row.n) for row in blind.agreement.rows}
    assert per_category == {"abstention": (33, 40), "free_recall": (113, 135)}


# The real-answer sets, each frozen and then measured blind at one commit, before anyone
# developing the scorer read it: history, never changed. holdout-v4 holds 108 real SmolLM2
# replies and 99 designed answer-line failures; holdout-v5 56 real replies to hard seeds
# 105-108 and 132 answers written as capable models answer; holdout-v6 56 real replies to
# hard seeds 109-112 and 112 written as capable models answer.
# (suite, sha256 prefix, commit, cases, real replies, (outcome, binary, unresolved) agreement)
FROZEN_BLIND = [
    ("holdout-v4", "1d15b5b940cc", "dfe32ec", 207, 108, (123, 140, 46)),
    ("holdout-v5", "305b62a4b051", "0b5f64f", 188, 56, (129, 138, 49)),
    ("holdout-v6", "6158512937fc", "43235f5", 168, 56, (128, 133, 33)),
]


@pytest.mark.parametrize(
    ("suite", "sha_prefix", "commit", "cases", "reals", "agreement"),
    FROZEN_BLIND,
    ids=[row[0] for row in FROZEN_BLIND],
)
def test_a_real_answer_blind_measurement_is_frozen_as_first_taken(
    suite: str,
    sha_prefix: str,
    commit: str,
    cases: int,
    reals: int,
    agreement: tuple[int, int, int],
) -> None:
    digest = hashlib.sha256(default_suites()[suite].read_bytes()).hexdigest()
    assert digest.startswith(sha_prefix)
    loaded = SUITES[suite]
    blind = load_blind(default_blind_path(suite))
    assert blind.suite_sha256 == digest and blind.cases == len(loaded) == cases
    assert blind.scorer_commit.startswith(commit) and blind.suite_commit.startswith(commit)
    overall = blind.agreement.overall
    assert (overall.n, overall.outcome_agree, overall.binary_agree, overall.unresolved) == (
        cases,
        *agreement,
    )
    real = [case for case in loaded if case.case_class == "real-smollm2"]
    prefix = "r" + suite.removeprefix("holdout-v") + "-"
    assert len(real) == reals and all(case.id.startswith(prefix) for case in real)


def test_a_blind_measurement_is_taken_once_and_never_rewritten(tmp_path: Path) -> None:
    for name in HELD_OUT:
        with pytest.raises(CalibrationInvalid) as caught:
            record_blind(name)
        assert caught.value.code == "calibration_blind_exists"
    suite = tmp_path / "fresh.jsonl"
    lines = default_suites()["holdout-free-recall"].read_text(encoding="utf-8").splitlines()
    suite.write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    target = record_blind("holdout-free-recall", suite, tmp_path / "fresh-blind.json")
    measured = load_blind(target)
    assert measured.cases == 10 and measured.agreement.overall.n == 10
    assert measured.suite_sha256 == hashlib.sha256(suite.read_bytes()).hexdigest()
    with pytest.raises(CalibrationInvalid) as caught:
        record_blind("holdout-free-recall", suite, target)
    assert caught.value.code == "calibration_blind_exists"
    with pytest.raises(CalibrationInvalid, match="not a held-out suite"):
        record_blind("tuning", suite, tmp_path / "other.json")


def test_the_blind_measurement_is_frozen_as_first_taken() -> None:
    """The held-out suite's first measurement (scorer at 0852d00, before anyone working on
    the scorer read the cases) is history: these numbers never change."""
    digest = hashlib.sha256(default_holdout_path().read_bytes()).hexdigest()
    assert BLIND.suite_sha256 == digest and BLIND.cases == 150
    assert BLIND.scorer_commit.startswith("0852d00") and BLIND.suite_commit.startswith("14416ca")
    overall = BLIND.agreement.overall
    assert (overall.n, overall.outcome_agree, overall.binary_agree) == (150, 142, 143)
    per_category = {row.category: (row.outcome_agree, row.n) for row in BLIND.agreement.rows}
    assert per_category == {
        "tool_identifier": (22, 25),
        "active_constraint": (20, 20),
        "superseded_current": (27, 30),
        "commitment_status": (15, 15),
        "artifact_status": (15, 15),
        "next_action": (15, 15),
        "abstention": (14, 15),
        "redaction": (14, 15),
    }
    assert BLIND.agreement.misjudged == (
        "ho-ab-09", "ho-rd-06", "ho-sc-08", "ho-sc-16", "ho-sc-30", "ho-ti-08", "ho-ti-10",
        "ho-ti-17",
    )  # fmt: skip


# ------------------------------------------------------------------ (d) docs/validity.md


def test_the_validity_doc_shows_every_suite_and_the_blind_figures() -> None:
    doc = default_doc_path().read_text(encoding="utf-8")
    for entry in RECORD.suites:
        assert render_table(entry.agreement) in doc
        assert f"`{entry.suite}`, {entry.cases} cases" in doc
    assert render_table(BLIND.agreement) in doc
    assert render_table(BLIND_FREE_RECALL.agreement) in doc
    assert "**142/150 (94.7%) outcome agreement**" in doc and "`0852d00`" in doc
    assert "**146/175 (83.4%) outcome agreement**" in doc and "`09a6e07`" in doc
    assert "withdrawn" in doc and "122/153" in doc
    assert "no longer blind" in doc and "fresh set" in doc
    assert "python3 -m continuity.probes.validity --record" in doc


def test_record_writes_the_record_and_the_doc_and_never_the_blind_figure(tmp_path: Path) -> None:
    suite = tmp_path / "suite.jsonl"
    lines = default_cases_path().read_text(encoding="utf-8").splitlines()
    suite.write_text("\n".join(lines[:40]) + "\n", encoding="utf-8")
    blind_before = {name: default_blind_path(name).read_bytes() for name in HELD_OUT}
    suites = {"tuning": suite, "holdout": default_holdout_path()}
    result = record(suites, tmp_path / "record.json", tmp_path / "validity.md")
    assert {name: default_blind_path(name).read_bytes() for name in HELD_OUT} == blind_before
    assert [e.name for e in result.suites] == ["tuning", "holdout"]
    assert result.suite("tuning").cases == 40 and result.suite("holdout").cases == 150
    assert load_record(tmp_path / "record.json") == result
    doc = (tmp_path / "validity.md").read_text(encoding="utf-8")
    for entry in result.suites:
        assert render_table(entry.agreement) in doc
        for case_id in entry.agreement.misjudged:
            assert f"| {case_id} |" in doc
    assert render_table(BLIND.agreement) in doc
    stored = json.loads((tmp_path / "record.json").read_text())
    for entry in stored["suites"]:
        assert entry["agreement"]["misjudged"] == sorted(entry["agreement"]["misjudged"])


def test_record_refuses_a_holdout_the_blind_figure_was_not_taken_on(tmp_path: Path) -> None:
    suite = tmp_path / "holdout.jsonl"
    lines = default_holdout_path().read_text(encoding="utf-8").splitlines()
    suite.write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")
    with pytest.raises(CalibrationInvalid, match="blind measurement"):
        record({"holdout": suite}, tmp_path / "r.json", tmp_path / "v.md")
    with pytest.raises(CalibrationInvalid, match="unknown suite"):
        record({"extra": suite}, tmp_path / "r.json", tmp_path / "v.md")
    fresh = {"holdout-free-recall": default_suites()["holdout-free-recall"]}
    with pytest.raises(CalibrationInvalid, match="no blind measurement yet"):
        missing = {"holdout-free-recall": tmp_path / "no-blind.json"}
        record(fresh, tmp_path / "r.json", tmp_path / "v.md", missing)
    assert not (tmp_path / "r.json").exists()


# ------------------------------------------------------------------ agreement arithmetic

SMALL = [c for c in CASES if c.category == "redaction"][:4] + [
    c for c in CASES if c.category == "abstention"
][:2]


def test_agreement_counts_outcomes_and_the_binary_call() -> None:
    verdicts = {case.id: case.verdict for case in SMALL}
    first, second, third = SMALL[0], SMALL[1], SMALL[4]
    # a different wrong outcome: binary agreement holds only if both are wrong
    verdicts[first.id] = "fabricated" if first.verdict != "fabricated" else "stale"
    verdicts[second.id] = "leaked" if second.verdict == "correct" else "correct"
    del verdicts[third.id]
    result = agreement(SMALL, verdicts, grader="test")
    rows = {row.category: row for row in result.rows}
    assert [row.category for row in result.rows] == ["abstention", "redaction"]
    assert rows["redaction"].n == 4 and rows["redaction"].outcome_agree == 2
    first_binary = (first.verdict == "correct") == (verdicts[first.id] == "correct")
    assert rows["redaction"].binary_agree == 3 + first_binary - 1
    assert rows["abstention"].n == 1 and rows["abstention"].missing == 1
    assert result.overall.n == 5 and result.overall.missing == 1
    assert result.misjudged == tuple(sorted({first.id, second.id}))
    assert "no verdict" in render_table(result)


def test_a_pass_fail_grader_reports_no_outcome_agreement() -> None:
    verdicts = {c.id: "correct" if c.verdict == "correct" else "incorrect" for c in SMALL}
    result = agreement(SMALL, verdicts, outcomes=False)
    assert result.overall.outcome_agree is None and result.overall.outcome_rate is None
    assert result.overall.binary_agree == len(SMALL) and result.misjudged == ()
    assert "| - |" in render_table(result)
    with pytest.raises(CalibrationInvalid) as info:
        agreement(SMALL, verdicts)  # "incorrect" is not an outcome
    assert info.value.code == "calibration_verdict_invalid"


def test_an_empty_agreement_is_well_formed() -> None:
    result = agreement([], {})
    assert isinstance(result, Agreement) and result.rows == () and result.overall.n == 0


# ------------------------------------------------------------------ (e) the loader's errors

GOOD = default_cases_path().read_text(encoding="utf-8").splitlines()[0]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "malformed"),
        (GOOD.replace('"verdict": "correct"', '"verdict": "right"'), "malformed"),
        (
            GOOD.replace(
                '"category": "tool_identifier", "class"', '"category": "redaction", "class"'
            ),
            "expectation",
        ),
        (GOOD.replace('"answer": {', '"answer": {"extra": 1, '), "malformed"),
        (GOOD, "repeats line 1"),
    ],
    ids=["not-json", "unknown-verdict", "category-mismatch", "bad-expectation", "duplicate-id"],
)
def test_a_malformed_line_is_a_located_typed_error(tmp_path: Path, bad: str, message: str) -> None:
    assert bad != GOOD or message.startswith("repeats")
    suite = tmp_path / "suite.jsonl"
    suite.write_text(f"{GOOD}\n\n{bad}\n", encoding="utf-8")
    with pytest.raises(CalibrationInvalid) as info:
        load_cases(suite)
    assert info.value.code == "calibration_case_invalid"
    assert info.value.location == f"{suite}:3"
    assert message in info.value.message


def test_an_empty_suite_is_an_error(tmp_path: Path) -> None:
    suite = tmp_path / "empty.jsonl"
    suite.write_text("\n", encoding="utf-8")
    with pytest.raises(CalibrationInvalid, match="empty"):
        load_cases(suite)


def test_the_default_record_path_is_beside_the_suite() -> None:
    assert default_record_path().parent == default_cases_path().parent
