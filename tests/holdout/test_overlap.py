"""`check_overlap`: planted overlaps of each kind are found, common values are not
compared, ids compare whole, and the report is content-free."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from continuity.errors import HoldoutError
from continuity.holdout import References, check_overlap, project_references, validate_source
from continuity.holdout.overlap import distinctive, read_report, write_report
from continuity.holdout.references import Reference, decoded_texts, module_literals
from continuity.holdout.schema import OverlapReport
from continuity.holdout.tokens import id_key, tokens, trigrams
from continuity.traces.schema import FreeRecallExpectation, Probe, Trace
from tests.conftest import REPO
from tests.holdout.toy import FAMILIES, write_source

PLAIN = References((Reference("prompt/plain", (("$", "Answer plainly, in one line."),)),))


def refs(*texts: str) -> References:
    return PLAIN.extended(Reference("planted", tuple((f"$[{i}]", t) for i, t in enumerate(texts))))


def report_for(
    tmp_path: Path, references: References, edit: Callable[[str, Trace], Trace] | None = None
) -> OverlapReport:
    return check_overlap(validate_source(write_source(tmp_path / "src", edit=edit)), references)


def found(report: OverlapReport) -> list[tuple[str, str, str]]:
    return [(o.kind, o.family_id, o.location) for o in report.overlaps]


def test_a_clean_source_has_no_overlap(tmp_path: Path) -> None:
    report = report_for(tmp_path, PLAIN)
    assert report.overlaps == ()
    assert report.counts.families == 6 and report.counts.values == 12
    # "the glimmerfern" is distinctive (a rare word); "marmalade zeppelin" too
    assert report.counts.distinctive_values == 12
    # family ids and the g7x-N turn ids hold a digit; s1, p1, p2 are too short
    assert (report.counts.ids, report.counts.distinctive_ids) == (36, 18)


def test_a_planted_value_is_found(tmp_path: Path) -> None:
    report = report_for(tmp_path, refs("Remember: The Glimmerfern needs rain."))
    assert found(report) == [("value", "toy-north-1", "$.probes[0].expectation.answer")]
    overlap = report.overlaps[0]
    assert (overlap.reference, overlap.reference_at, overlap.hits, overlap.tokens) == (
        "planted",
        "$[0]",
        1,
        2,
    )
    assert overlap.term_sha256 == hashlib.sha256(b"the glimmerfern").hexdigest()


def test_a_value_is_found_only_whole(tmp_path: Path) -> None:
    # a value's tokens must all be there, adjacent and in order, as whole tokens
    report = report_for(tmp_path, refs("glimmerferns", "the glimmer fern", "glimmerfern the"))
    assert report.overlaps == ()


def test_an_abstention_term_is_a_value(tmp_path: Path) -> None:
    report = report_for(tmp_path, refs("a MARMALADE-zeppelin"))
    assert {(o.kind, o.location) for o in report.overlaps} == {
        ("value", "$.probes[1].expectation.never_mentioned[0]")
    }
    assert len(report.overlaps) == 6  # every family asks it


def test_a_planted_id_is_found(tmp_path: Path) -> None:
    report = report_for(tmp_path, refs("Filed under toy-south-3.", "(see G7X-2)"))
    assert ("id", "toy-south-3", "$.trace_id") in found(report)
    turn = [o for o in report.overlaps if o.location == "$.sessions[0].turns[1].turn_id"]
    assert len(turn) == 6 and {o.reference_at for o in turn} == {"$[1]"}
    assert len(report.overlaps) == 7


def test_ids_compare_whole(tmp_path: Path) -> None:
    # D1:10 is not d1-10: an id is its own characters, not its words
    report = report_for(tmp_path, refs("toy-north-12", "g7x:1", "g7x-1x", "xg7x-1", "toy north 1"))
    assert report.overlaps == ()
    assert id_key("D1:10") == "d1:10" != id_key("d1-10")
    assert id_key("end.") == "end" and id_key("two words") is None


def test_a_planted_phrase_is_found(tmp_path: Path) -> None:
    # the probe's content words are "plant zorvik want watered"
    report = report_for(tmp_path, refs("That plant, of Zorvik: we want it!"))
    assert found(report) == [("phrase", "toy-north-1", "$.probes[0].text")]
    assert report.overlaps[0].term_sha256 == hashlib.sha256(b"plant zorvik want").hexdigest()


def _answer(value: str) -> Callable[[str, Trace], Trace]:
    def edit(family_id: str, trace: Trace) -> Trace:
        if family_id != "toy-north-2":
            return trace
        probe = trace.probes[0]
        assert isinstance(probe.expectation, FreeRecallExpectation)
        expectation = msgspec.structs.replace(probe.expectation, answer=value)
        changed: Probe = msgspec.structs.replace(probe, expectation=expectation)
        return msgspec.structs.replace(trace, probes=(changed, *trace.probes[1:]))

    return edit


@pytest.mark.parametrize(
    "value", ["3", "12", "2019", "$12.50", "the cat", "Tuesday", "a big house"]
)
def test_common_values_are_not_compared(tmp_path: Path, value: str) -> None:
    report = report_for(tmp_path, refs(f"it was {value} after all"), edit=_answer(value))
    assert report.overlaps == ()
    assert report.counts.distinctive_values == 11


@pytest.mark.parametrize("value", ["4821", "ORD-4821", "$4,821.50", "7 May 1673", "a quokka"])
def test_distinctive_values_are_compared(tmp_path: Path, value: str) -> None:
    report = report_for(tmp_path, refs(f"note: {value}."), edit=_answer(value))
    # "7 May 1673" is three content words as well: a phrase overlap beside the value
    assert ("value", "toy-north-2", "$.probes[0].expectation.answer") in found(report)
    assert set(found(report)) <= {
        ("value", "toy-north-2", "$.probes[0].expectation.answer"),
        ("phrase", "toy-north-2", "$.probes[0].expectation.answer"),
    }


def test_the_distinctive_rule() -> None:
    assert not distinctive(tokens("3")) and not distinctive(tokens("1 am"))
    # a common number is a common word: a year, a time, a round amount
    assert not distinctive(tokens("12 am")) and not distinctive(tokens("2022"))
    assert not distinctive(tokens("$12.50")) and not distinctive(tokens("7 May 2031"))
    assert distinctive(tokens("4821")) and distinctive(tokens("1673"))
    # letters and digits together are a code, however short each part
    assert distinctive(tokens("D1:10")) and distinctive(tokens("TN2 4LH"))
    # an id is matched only whole, so a digit is enough there
    assert distinctive(tokens("toy-north-1"), ident=True) and not distinctive(tokens("toy-north-1"))
    assert not distinctive(tokens("the big red house"))
    assert distinctive(tokens("quokka")) and not distinctive(tokens("cat"))


def test_trigrams_drop_stopwords_first() -> None:
    assert list(trigrams(tokens("What did you do with the red, red kite?"))) == [
        ("red", "red", "kite")
    ]
    assert list(trigrams(tokens("I don't know"))) == []


def test_the_report_is_written_content_free_and_overlaps_fail(tmp_path: Path) -> None:
    report = report_for(tmp_path, refs("The glimmerfern.", "Which plant did Zorvik want"))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(HoldoutError) as err:
        write_report(report, out, "toy")
    assert (err.value.code, err.value.location) == (
        "holdout_overlap_found",
        str(out / "overlap.json"),
    )
    written = (out / "overlap.json").read_text() + (out / "overlap.md").read_text()
    for _, _, plant, friend in FAMILIES:
        assert plant not in written.casefold() and friend.casefold() not in written.casefold()
    assert "marmalade" not in written and "watered" not in written
    assert read_report(out / "overlap.json") == report
    assert json.loads((out / "overlap.json").read_bytes())["counts"]["by_kind"] == {
        "value": 1,
        "id": 0,
        "phrase": 1,
    }


def test_a_clean_report_is_written_and_returned(tmp_path: Path) -> None:
    report = report_for(tmp_path, PLAIN)
    path = write_report(report, tmp_path, "toy")
    assert path == tmp_path / "overlap.json"
    assert "No overlap" in (tmp_path / "overlap.md").read_text()


@pytest.mark.parametrize("content", [b"{}", b"not json", b'{"schema": "other"}'])
def test_an_unreadable_report_is_invalid(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "overlap.json"
    path.write_bytes(content)
    with pytest.raises(HoldoutError) as err:
        read_report(path)
    assert (err.value.code, err.value.location) == ("holdout_overlap_invalid", str(path))


def test_the_references_digest_follows_the_texts_not_their_places() -> None:
    moved = References((Reference("prompt/plain", (("line 99", "Answer plainly, in one line."),)),))
    assert moved.digest == PLAIN.digest
    assert refs("x").digest != PLAIN.digest != refs("y").digest
    renamed = References((Reference("prompt/other", PLAIN.items[0].texts),))
    assert renamed.digest != PLAIN.digest


@pytest.fixture(scope="module")
def project() -> References:
    return project_references()


def test_the_project_references_are_all_there(project: References) -> None:
    names = [r.name for r in project.items]
    prefixes = {name.split("/")[0] for name in names}
    assert prefixes == {
        "original",
        "hard",
        "hard-distractors",
        "vocabulary",
        "prompt",
        "soul",
        "calibration",
        "scorer",
    }
    assert sum(n.startswith("hard/") for n in names) == 8
    assert sum(n.startswith("hard-distractors/") for n in names) == 8
    assert sum(n.startswith("original/") for n in names) == len(
        list((REPO / "fixtures" / "original").glob("*.json"))
    )
    assert "prompt/probe-instruction" in names and "prompt/pack-retrieval-guidance" in names
    assert "vocabulary/continuity/traces/scenarios.py" in names
    assert "scorer/continuity/probes/free_recall.py" in names
    assert any(n.startswith("scorer/tests/probes/") for n in names)
    assert any(n.startswith("vocabulary/continuity/traces/generator/") for n in names)
    assert {r.name: len(r.texts) for r in project.items}["soul/continuity-soul-v1.md"] > 1
    assert len(project.digest) == 64 and len(project.named()) == len(names)


def test_a_clean_source_passes_the_project_references(tmp_path: Path, project: References) -> None:
    assert report_for(tmp_path, project).overlaps == ()


def _original_value() -> str:
    """A tool identifier from the original suite."""
    data = json.loads((REPO / "fixtures" / "original" / "brightline-return.json").read_bytes())
    for probe in data["probes"]:
        if probe["expectation"]["category"] == "tool_identifier":
            return str(probe["expectation"]["answer"]["value"])
    raise AssertionError("no tool identifier in the original trace")


def _generator_phrase() -> str:
    """A generator literal with at least three adjacent content words."""
    for _, text in module_literals(REPO / "continuity" / "traces" / "scenarios.py"):
        if next(trigrams(tokens(text)), None) is not None:
            return text
    raise AssertionError("no phrase in the scenarios")


def test_overlaps_with_the_project_references_are_found(
    tmp_path: Path, project: References
) -> None:
    value, phrase = _original_value(), _generator_phrase()

    def edit(family_id: str, trace: Trace) -> Trace:
        if family_id == "toy-south-2":
            return _answer(value)("toy-north-2", trace)
        if family_id == "toy-north-3":
            probe = msgspec.structs.replace(trace.probes[1], text=f"Do you recall this: {phrase}?")
            return msgspec.structs.replace(trace, probes=(trace.probes[0], probe))
        return trace

    report = report_for(tmp_path, project, edit=edit)
    kinds = {(o.kind, o.family_id, o.reference.split("/")[0]) for o in report.overlaps}
    assert ("value", "toy-south-2", "original") in kinds
    assert ("phrase", "toy-north-3", "vocabulary") in kinds
    assert {o.family_id for o in report.overlaps} == {"toy-south-2", "toy-north-3"}


def test_a_reference_that_is_not_json_is_compared_as_text() -> None:
    assert list(decoded_texts(b'{"a": ["x", {"b": "y"}]}', "line 2:$")) == [
        ("line 2:$.a[0]", "x"),
        ("line 2:$.a[1].b", "y"),
    ]
    assert list(decoded_texts(b'{"half": "writ', "line 3:$")) == [("line 3:$", '{"half": "writ')]
