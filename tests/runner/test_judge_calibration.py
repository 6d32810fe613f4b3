"""`doit calibrate`: a judge over the labelled calibration suite, offline and real."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import CalibrationInvalid, UsageError
from continuity.probes.calibration import (
    CATEGORIES,
    default_cases_path,
    load_cases,
    scorer_verdicts,
)
from continuity.probes.judge import JudgeCase, JudgeVerdict, ProviderJudge, ScriptedJudge
from continuity.probes.validity import HELD_OUT, default_suites
from continuity.runner.judge_calibration import (
    JudgeChoice,
    calibrate_judge,
    judge_for,
    unresolved_line,
)
from continuity.servers.wire import serve_in_thread
from tests.graph.test_dodo import doit
from tests.runner.test_real import UNSURE
from tests.runner.test_real_judge import JudgingWire


def test_offline_calibrate_prints_every_suite_held_out_first(tmp_path: Path) -> None:
    """By default every suite of docs/validity.md is graded: the held-out suites first,
    the tuning suite last and marked an upper bound."""
    result = doit(tmp_path, "calibrate")
    out = result.stdout
    suites = default_suites()
    heads = [line for line in out.splitlines() if line.startswith("judge scripted-judge on ")]
    assert [h.split()[3] for h in heads] == [*HELD_OUT, "tuning"]
    for name, head in zip([*HELD_OUT, "tuning"], heads, strict=True):
        assert f"{len(load_cases(suites[name]))} labelled cases" in head
        assert ("held out" in head) == (name != "tuning")
        assert ("an upper bound" in head) == (name == "tuning")
    present = {case.category for case in load_cases()}
    tuning = out[out.index(heads[-1]) :]
    for category in CATEGORIES:
        assert (f"| {category} | " in tuning) == (category in present)
    assert out.count("| **overall** | ") == len(heads)
    last = out.strip().splitlines()[-1]
    md = tmp_path / "out" / "calibration" / "judge-scripted-judge.md"
    assert last == f"calibrate: judge agreement written to {md} (and judge-scripted-judge.json)"
    document = json.loads(md.with_suffix(".json").read_text())
    assert document["schema"] == "continuity-judge-calibration-v3"
    for entry in document["suites"]:
        n = len(load_cases(suites[entry["name"]]))
        assert entry["cases"] == n == len(entry["verdicts"]) == entry["agreement"]["overall"]["n"]
    text = md.read_text()
    assert "offline stand-in" in text and text.index("## holdout") < text.index("## tuning")


def test_calibrate_with_cases_grades_that_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(
        "".join(line + "\n" for line in default_cases_path().read_text().splitlines()[:5])
    )
    result = doit(tmp_path, "calibrate", "--cases", str(path))
    heads = [line for line in result.stdout.splitlines() if line.startswith("judge ")]
    assert len(heads) == 1 and "5 labelled cases; given with --cases" in heads[0]


def test_agreement_counts_what_the_judge_said(tmp_path: Path) -> None:
    cases = load_cases()[:40]
    result = calibrate_judge(ScriptedJudge(), cases, "suite")
    by_id = {v.probe_id: v for v in result.verdicts}
    agree = sum(by_id[c.id].outcome == c.verdict for c in cases)
    assert result.agreement.overall.outcome_agree == agree
    assert result.agreement.overall.n == 40


class _Unreadable:
    """A judge whose every other reply carries no verdict."""

    name = "half-unreadable"

    def verdicts(self, cases: Sequence[JudgeCase]) -> list[JudgeVerdict]:
        return [
            JudgeVerdict(c.probe_id, False, self.name, "unreadable", "")
            if i % 2
            else JudgeVerdict(c.probe_id, True, self.name, "correct", "")
            for i, c in enumerate(cases)
        ]


def test_an_unreadable_reply_stays_in_n_as_a_failure_of_the_judge() -> None:
    cases = load_cases()[:20]
    result = calibrate_judge(_Unreadable(), cases, "suite")
    overall = result.agreement.overall
    assert (overall.n, overall.missing, overall.unresolved) == (20, 0, 10)
    labelled_correct = sum(c.verdict == "correct" for c in cases[::2])
    assert overall.binary_agree == labelled_correct  # only the readable half can agree


def test_calibrate_reports_the_scorers_unresolved_cases_and_the_judge_on_them(
    tmp_path: Path,
) -> None:
    cases = load_cases()
    scorer = scorer_verdicts(cases)
    left = sorted(c.id for c in cases if scorer[c.id] == "unresolved")
    assert left, "the tuning suite holds answers the scorer leaves unresolved"
    result = calibrate_judge(ScriptedJudge(), cases, "suite")
    assert sorted(result.scorer_unresolved) == left
    part = result.unresolved_agreement
    assert part is not None and part.overall.n == len(left)
    assert result.scorer_coverage == 1 - len(left) / len(cases)
    by_id = {v.probe_id: v for v in result.verdicts}
    chosen = [c for c in cases if c.id in left]
    assert part.overall.binary_agree == sum(
        by_id[c.id].passed == (c.verdict == "correct") for c in chosen
    )
    line = unresolved_line(result)
    assert f"leaves {len(left)} of {len(cases)} cases unresolved" in line
    printed = doit(tmp_path, "calibrate").stdout
    assert printed.count("cases unresolved (coverage ") == len([*HELD_OUT, "tuning"])


class _CountingJudge(ScriptedJudge):
    """The scripted judge, remembering which cases it was asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def verdicts(self, cases: Sequence[JudgeCase]) -> list[JudgeVerdict]:
        self.asked += [case.probe_id for case in cases]
        return super().verdicts(cases)


def test_unresolved_only_asks_the_judge_about_those_cases_alone(tmp_path: Path) -> None:
    cases = load_cases(default_suites()["holdout-v4"])
    scorer = scorer_verdicts(cases)
    left = [c.id for c in cases if scorer[c.id] == "unresolved"]
    judge = _CountingJudge()
    result = calibrate_judge(judge, cases, "suite", unresolved_only=True)
    assert judge.asked == left and [v.probe_id for v in result.verdicts] == left
    assert result.cases == len(cases) and result.scorer_unresolved == left
    assert result.agreement.overall.n == len(left) and result.unresolved_only
    assert result.unresolved_agreement == result.agreement
    printed = doit(tmp_path, "calibrate", "--unresolved-only").stdout
    for name in (*HELD_OUT, "tuning"):
        head = next(
            line
            for line in printed.splitlines()
            if line.startswith(f"judge scripted-judge on {name} ")
        )
        assert "; judged: the " in head and " the scorer leaves unresolved)" in head
    written = json.loads(
        (tmp_path / "out" / "calibration" / "judge-scripted-judge.json").read_text()
    )
    for entry in written["suites"]:
        assert entry["unresolved_only"] and len(entry["verdicts"]) == len(
            entry["scorer_unresolved"]
        )
    md = (tmp_path / "out" / "calibration" / "judge-scripted-judge.md").read_text()
    assert md.count("| **overall** | ") == len([*HELD_OUT, "tuning"])  # one table a suite


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"provider": "gemini"}, "plan_invalid"),
        ({"provider": "scripted", "base_url": "http://127.0.0.1:1/v1"}, "plan_invalid"),
        ({"max_output_tokens": 64}, "plan_invalid"),
        ({"judge_model": "no-provider-part"}, "plan_invalid"),
        ({"judge_model": "openai-codex:"}, "plan_invalid"),
        ({"judge_model": " :gpt"}, "plan_invalid"),
        ({"provider": "openai-chat"}, "credentials_required"),
        (
            {"provider": "anthropic", "credentials": "/nonexistent/creds.json"},
            "credentials_missing",
        ),
    ],
    ids=[
        "unknown-provider",
        "base-url-offline",
        "output-cap-offline",
        "bad-model",
        "empty-model-name",
        "empty-provider-part",
        "no-credentials",
        "no-file",
    ],
)
def test_bad_options_are_refused_with_their_code(
    options: dict[str, Any], code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(UsageError) as err:
        judge_for(JudgeChoice(**options), str(tmp_path / "store"), tmp_path / "out")
    assert err.value.code == code


def test_a_real_judge_is_refused_under_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    credentials = tmp_path / "creds.json"
    credentials.write_text('{"api_key": "x"}')
    monkeypatch.setenv("CI", "")
    with pytest.raises(UsageError) as err:
        judge_for(
            JudgeChoice(provider="openai-chat", credentials=str(credentials)),
            str(tmp_path / "store"),
            tmp_path / "out",
        )
    assert err.value.code == "real_refused_ci"
    result = doit(
        tmp_path, "calibrate", "--provider", "openai-chat", "--credentials", "/x", check=False
    )
    assert result.returncode != 0 and "real_refused_ci: " in result.stdout + result.stderr
    monkeypatch.delenv("CI")
    result = doit(tmp_path, "calibrate", "--provider", "openai-chat", check=False)
    assert result.returncode != 0 and "credentials_required: " in result.stdout + result.stderr
    result = doit(tmp_path, "calibrate", "--provider", "gemini", check=False)
    assert result.returncode != 0 and "plan_invalid: " in result.stdout + result.stderr
    assert not (tmp_path / "out" / "calibration").exists()


def test_a_real_judge_grades_the_suite_against_the_loopback_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    credentials = tmp_path / "creds.json"
    credentials.write_text('{"api_key": "sk-loopback"}')
    cases = load_cases()[:6]
    app = JudgingWire()
    with serve_in_thread(app) as url:
        choice = JudgeChoice(
            provider="openai-chat",
            base_url=url + "/v1",
            credentials=str(credentials),
            judge_model="openai:judge-model",
        )
        judge = judge_for(choice, str(tmp_path / "store"), tmp_path / "out")
        assert isinstance(judge, ProviderJudge)
        result = calibrate_judge(judge, cases, "suite")
        again = calibrate_judge(judge_for(choice, str(tmp_path / "store"), tmp_path), cases)
        assert app.count() == len(cases)  # the rerun came from the call cache
    # Each verdict is the server's reply, parsed (it fails only the loopback model's own
    # unsure answer, which no calibration case holds).
    expected = ["fabricated" if UNSURE in c.answer else "correct" for c in cases]
    assert [v.outcome for v in result.verdicts] == expected
    assert all(v.reason.startswith("loopback verdict") for v in result.verdicts)
    assert result.agreement.overall.n == len(cases)
    assert again.verdicts == result.verdicts


def test_a_loopback_judge_without_credentials_sends_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``--credentials`` for a server on this machine means no key, not the working
    directory taken for a credentials file (`doit calibrate` against llama.cpp)."""
    monkeypatch.delenv("CI", raising=False)
    choice = JudgeChoice(provider="openai-chat", base_url="http://127.0.0.1:9/v1")
    judge = judge_for(choice, str(tmp_path / "store"), tmp_path / "out")
    assert isinstance(judge, ProviderJudge) and judge.spec.credentials_path == ""
    assert judge.spec.max_output_tokens == 4096  # the real runs' default cap
    capped = judge_for(
        msgspec.structs.replace(choice, max_output_tokens=96), str(tmp_path), tmp_path / "out"
    )
    assert isinstance(capped, ProviderJudge) and capped.spec.max_output_tokens == 96


def test_calibrates_output_cap_is_a_checked_whole_number(tmp_path: Path) -> None:
    for bad in ("0", "many", "-3"):
        result = doit(tmp_path, "calibrate", "--max-output-tokens", bad, check=False)
        assert result.returncode != 0
        assert "plan_invalid: " in result.stdout + result.stderr
        assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("kind", ["directory", "missing"])
def test_an_unreadable_suite_path_is_a_typed_error(tmp_path: Path, kind: str) -> None:
    """A directory (say ``fixtures/calibration/``) or a missing file is refused with
    ``calibration_suite_unreadable`` at the path, by the loader and by `doit calibrate`,
    never as a raw traceback, and nothing is written."""
    path = tmp_path / "suites" if kind == "directory" else tmp_path / "absent.jsonl"
    if kind == "directory":
        path.mkdir()
    with pytest.raises(CalibrationInvalid) as err:
        load_cases(path)
    assert (err.value.code, err.value.location) == ("calibration_suite_unreadable", str(path))
    result = doit(tmp_path, "calibrate", "--cases", str(path), check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "calibration_suite_unreadable: " in output and f"(at {path})" in output
    assert "Traceback" not in output and "IsADirectoryError" not in output
    assert not (tmp_path / "out" / "calibration").exists()


def test_the_help_names_the_real_default_suite(tmp_path: Path) -> None:
    text = doit(tmp_path, "help", "calibrate").stdout
    default = "fixtures/calibration/answers-v1.jsonl"
    assert default in " ".join(text.split())
    assert default_cases_path().as_posix().endswith(default)  # what the loader reads
