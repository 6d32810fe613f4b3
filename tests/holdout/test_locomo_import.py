"""``doit import_locomo``: the real LoCoMo archive (counts against the published
dataset, determinism, no leaks, values and evidence verbatim) and invented archives (the
mapping, both layouts, every refusal)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import TraceInvalid, UsageError
from continuity.holdout import HoldoutManifest, HoldoutSource, StatisticalSpec, validate_source
from continuity.holdout.locomo_import import import_locomo
from continuity.traces.locomo import read_zip
from continuity.traces.schema import (
    AbstentionExpectation,
    FreeRecallExpectation,
    OwnerMessage,
    ToolResult,
    Trace,
    iter_turns,
)
from continuity.traces.validate import load_trace
from tests.holdout.locomo_zip import REPO, locomo_zip, sample, write_zip

# The published dataset: 10 conversations, 1,986 questions by LoCoMo category.
PUBLISHED = {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}


def _traces(folder: Path) -> dict[str, Trace]:
    return {p.stem: load_trace(p.read_bytes()) for p in sorted((folder / "traces").glob("*.json"))}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("locomo") / "source"
    import_locomo(locomo_zip(), output)
    return output


def _raw_questions() -> list[tuple[str, dict[str, Any]]]:
    return [(c.sample_id, q) for c in read_zip(locomo_zip()) for q in c.qa]


def test_counts_match_the_published_dataset(imported: Path) -> None:
    report = json.loads((imported / "import-report.json").read_text())
    assert len(report["conversations"]) == 10
    assert report["questions"] == 1986
    by_category = Counter(q["category"] for _, q in _raw_questions())
    assert dict(by_category) == PUBLISHED
    assert report["questions_by_category"] == {
        "1 multi-hop": 282, "2 temporal": 321, "3 open-domain": 96, "4 single-hop": 841,
        "5 adversarial": 446,
    }  # fmt: skip
    traces = _traces(imported)
    probes = [p for t in traces.values() for p in t.probes]
    dropped = report["dropped"]
    assert len(probes) + len(dropped) == 1986 == report["probes"] + len(dropped)
    kinds = Counter(p.category for p in probes)
    assert kinds == {"free_recall": 1523, "abstention": 446}
    assert report["dropped_by_reason"] == {
        "answer_in_question": 8, "evidence_missing": 4, "evidence_unresolved": 5,
    }  # fmt: skip
    assert set(report["reasons"]) >= set(report["dropped_by_reason"])


def test_the_import_is_byte_identical_on_rerun(imported: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    result = import_locomo(locomo_zip(), again)
    first = {p.relative_to(imported): p.read_bytes() for p in imported.rglob("*") if p.is_file()}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file()}
    assert first == second and len(first) == 13
    assert result.manifest_sha256 == hashlib.sha256(first[Path("manifest.json")]).hexdigest()


def test_no_answer_leaks_into_a_probe_text(imported: Path) -> None:
    for trace in _traces(imported).values():
        for probe in trace.probes:
            exp = probe.expectation
            values = [exp.answer] if isinstance(exp, FreeRecallExpectation) else []
            for value in values:
                words = re.findall(r"\w+", value.lower())
                pattern = r"\b" + r"\W+".join(map(re.escape, words)) + r"\b"
                assert not re.search(pattern, probe.text.lower()), (trace.trace_id, probe)


def test_values_and_evidence_survive_verbatim(imported: Path) -> None:
    raw = {(f"locomo-{sid.removeprefix('conv-')}", i): q for sid, qs in _by_sample() for i, q in qs}
    for trace in _traces(imported).values():
        turn_ids = {turn.turn_id for _, _, turn in iter_turns(trace)}
        for probe in trace.probes:
            question = raw[(trace.trace_id, int(probe.probe_id[1:]))]
            assert probe.text == question["question"]
            exp = probe.expectation
            if isinstance(exp, FreeRecallExpectation):
                assert exp.answer == str(question["answer"])
                assert exp.source_category == question["category"]
                assert set(exp.evidence) <= turn_ids
                ids = [e for item in question["evidence"] for e in re.split(r"[;,\s]+", item)]
                assert list(exp.evidence) == list(dict.fromkeys(e for e in ids if e))
            else:
                assert isinstance(exp, AbstentionExpectation)
                assert exp.decoys == (str(question["adversarial_answer"]),)


def _by_sample() -> list[tuple[str, list[tuple[int, dict[str, Any]]]]]:
    return [(c.sample_id, list(enumerate(c.qa))) for c in read_zip(locomo_zip())]


def test_every_utterance_arrives_once_and_sessions_keep_their_dates(imported: Path) -> None:
    for conversation in read_zip(locomo_zip()):
        trace = _traces(imported)[f"locomo-{conversation.sample_id}"]
        texts = {
            turn.turn_id: turn.output if isinstance(turn, ToolResult) else turn.text
            for _, _, turn in iter_turns(trace)
        }
        owner = conversation.conversation["speaker_a"]
        for key, turns in conversation.conversation.items():
            if not re.fullmatch(r"session_\d+", key) or not turns:
                continue
            for turn in turns:
                said = texts[turn["dia_id"]]
                line = f"{turn['speaker']}: {turn['text']}"
                dated = f"({conversation.conversation[key + '_date_time']})\n{line}"
                assert said.startswith((line, dated)), (turn["dia_id"], said[:80])
                kind = OwnerMessage if turn["speaker"] == owner else ToolResult
                turn_of = next(t for _, _, t in iter_turns(trace) if t.turn_id == turn["dia_id"])
                assert isinstance(turn_of, kind)
        assert len(trace.sessions) == sum(
            1 for k, v in conversation.conversation.items() if re.fullmatch(r"session_\d+", k) and v
        )


def test_the_source_validates_with_two_groups_of_five(imported: Path) -> None:
    manifest_bytes = (imported / "manifest.json").read_bytes()
    manifest = msgspec.json.decode(manifest_bytes, type=HoldoutManifest)
    spec = msgspec.json.decode(
        (imported / "statistical-spec.json").read_bytes(), type=StatisticalSpec
    )
    assert [g.name for g in spec.groups] == ["shorter", "longer"]
    assert spec.selection.algorithm == "seeded-sha256-rank-v1" and spec.selection.per_group == 2
    assert Counter(f.group for f in manifest.families) == {"shorter": 5, "longer": 5}
    source = HoldoutSource(
        imported / "manifest.json",
        hashlib.sha256(manifest_bytes).hexdigest(),
        imported / "statistical-spec.json",
    )
    validated = validate_source(source)
    assert len(validated.families) == 10 and validated.probes == 1969


# -- invented archives: the mapping, both layouts, refusals --------------------------------


def test_the_mapping_on_an_invented_conversation(tmp_path: Path) -> None:
    archive = write_zip(tmp_path / "l.zip", {"data/locomo10.json": [sample()]})
    result = import_locomo(archive, tmp_path / "out")
    trace = _traces(tmp_path / "out")["locomo-7"]
    turns = [turn for _, _, turn in iter_turns(trace)]
    assert isinstance(turns[0], OwnerMessage)
    assert turns[0].text == "(3:10 pm on 4 March, 2023)\nQuenby: I took up glassblowing last week!"
    results = [t for t in turns if isinstance(t, ToolResult)]
    assert [r.turn_id for r in results] == ["D1:2", "D1:3", "D2:1"]
    assert (
        results[1].output
        == "Ferrant: He hides my socks. [shares a photo: a ferret in a sock drawer]"
    )
    assert all(r.tool == "chat_history" and r.tool_kind == "chat" for r in results)
    # session 2 opens with B: a fixed owner line first, then B's turn through the tool
    second = trace.sessions[1]
    assert second.date == "2023-03-11" and second.session_id == "S2"
    assert isinstance(second.turns[0], OwnerMessage)
    assert second.turns[0].text == "(9:05 am on 11 March, 2023)\nOpen my chat with Ferrant."
    assert len(trace.sessions) == 2  # the empty session 3 is not a session
    kept = {p.probe_id: p for p in trace.probes}
    assert set(kept) == {"q000", "q001", "q002"}  # q003 unresolved, q004 leaks, q005 no evidence
    reasons = {(d.question, d.reason) for d in result.report.dropped}
    assert reasons == {
        (3, "evidence_unresolved"),
        (4, "answer_in_question"),
        (5, "evidence_missing"),
    }
    assert kept["q002"].expectation == AbstentionExpectation(never_mentioned=(), decoys=("Bix",))


def test_both_layouts_give_the_same_trace(tmp_path: Path) -> None:
    listed = write_zip(tmp_path / "a.zip", {"locomo10.json": [sample()]})
    one = sample()
    per_file = write_zip(
        tmp_path / "b.zip", {"locomo10_v2/7.json": {**one["conversation"], "qa": one["qa"]}}
    )
    import_locomo(listed, tmp_path / "a")
    import_locomo(per_file, tmp_path / "b")
    assert (tmp_path / "a/traces/locomo-7.json").read_bytes() == (
        tmp_path / "b/traces/locomo-7.json"
    ).read_bytes()


@pytest.mark.parametrize(
    ("members", "code"),
    [
        ({"x.json": b"{not json"}, "locomo_format_invalid"),
        ({"x.json": [{"sample_id": "conv-1"}]}, "locomo_format_invalid"),
        ({"x.json": [sample(qa=[{"question": "q"}]) | {"qa": "nope"}]}, "locomo_format_invalid"),
        ({"x.json": [sample(), sample()]}, "locomo_format_invalid"),
        ({"x.json": 7}, "locomo_format_invalid"),
        ({"notes.txt": b"hello"}, "locomo_format_invalid"),
    ],
)
def test_a_malformed_archive_is_refused_and_nothing_is_written(
    tmp_path: Path, members: dict[str, Any], code: str
) -> None:
    archive = write_zip(tmp_path / "bad.zip", members)
    with pytest.raises(UsageError) as caught:
        import_locomo(archive, tmp_path / "out")
    assert caught.value.code == code
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == [archive]


def test_an_unreadable_archive_and_an_existing_output_are_refused(tmp_path: Path) -> None:
    (tmp_path / "not.zip").write_bytes(b"plain text")
    with pytest.raises(UsageError) as caught:
        import_locomo(tmp_path / "not.zip", tmp_path / "out")
    assert caught.value.code == "locomo_zip_unreadable"
    with pytest.raises(UsageError) as caught:
        import_locomo(tmp_path / "missing.zip", tmp_path / "out")
    assert caught.value.code == "locomo_zip_unreadable"
    archive = write_zip(tmp_path / "l.zip", {"locomo10.json": [sample()]})
    (tmp_path / "exists").mkdir()
    with pytest.raises(UsageError) as caught:
        import_locomo(archive, tmp_path / "exists")
    assert caught.value.code == "locomo_output_exists"


def test_a_speaker_outside_the_pair_is_refused(tmp_path: Path) -> None:
    bad = sample()
    bad["conversation"]["session_1"][0]["speaker"] = "Someone Else"
    archive = write_zip(tmp_path / "l.zip", {"locomo10.json": [bad]})
    with pytest.raises(UsageError) as caught:
        import_locomo(archive, tmp_path / "out")
    assert caught.value.code == "locomo_format_invalid"
    assert "session_1[0]" in (caught.value.location or "")


def test_a_trace_that_fails_validation_writes_nothing(tmp_path: Path) -> None:
    bad = sample()
    bad["conversation"]["session_1"][1]["dia_id"] = "D1:1"  # a duplicate turn id
    archive = write_zip(tmp_path / "l.zip", {"locomo10.json": [bad]})
    with pytest.raises(TraceInvalid):
        import_locomo(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_doit_task_imports_and_refuses_with_codes(tmp_path: Path) -> None:
    archive = write_zip(tmp_path / "l.zip", {"locomo10.json": [sample()]})

    def doit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), "import_locomo", *args],
            capture_output=True, text=True, cwd=REPO, check=False,
        )  # fmt: skip

    done = doit("--zip", str(archive), "--output", str(tmp_path / "src"))
    assert done.returncode == 0, done.stderr
    assert "1 conversations, 6 questions read, 3 probes" in done.stdout
    assert f"source in {tmp_path / 'src'}" in done.stdout
    again = doit("--zip", str(archive), "--output", str(tmp_path / "src"))
    assert again.returncode != 0 and "locomo_output_exists" in again.stdout + again.stderr
    missing = doit("--output", str(tmp_path / "other"))
    assert missing.returncode != 0 and "option_value_missing" in missing.stdout + missing.stderr
    assert zipfile.is_zipfile(archive)


def test_an_output_that_cannot_be_written_is_refused(tmp_path: Path) -> None:
    archive = write_zip(tmp_path / "l.zip", {"locomo10.json": [sample()]})
    (tmp_path / "a-file").write_text("not a directory")
    with pytest.raises(UsageError) as caught:
        import_locomo(archive, tmp_path / "a-file" / "source")
    assert caught.value.code == "locomo_output_invalid"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "l.zip"]
