"""Every rejection code: a broken trace is refused with its code and location, and
the store is left exactly as it was."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from continuity.errors import TraceCollision, TraceInvalid, UsageError
from continuity.store import Store
from continuity.traces.generator import generate_trace
from continuity.traces.keys import parse_seeds, suite_specs
from continuity.traces.schema import encode_trace
from continuity.traces.suites import build_suite, store_trace_file
from continuity.traces.validate import load_trace
from tests.conftest import ORIGINALS, store_files

Doc = dict[str, Any]


@functools.cache
def _original_bytes() -> bytes:
    return (ORIGINALS / "brightline-return.json").read_bytes()


@functools.cache
def _hard_bytes() -> bytes:
    return encode_trace(generate_trace(101))


def original() -> Doc:
    return json.loads(_original_bytes())  # type: ignore[no-any-return]


def hard() -> Doc:
    return json.loads(_hard_bytes())  # type: ignore[no-any-return]


def turns(doc: Doc) -> list[tuple[str, Doc]]:
    return [
        (f"$.sessions[{s}].turns[{t}]", turn)
        for s, session in enumerate(doc["sessions"])
        for t, turn in enumerate(session["turns"])
    ]


def probe(doc: Doc, category: str, role: str | None = None) -> tuple[int, Doc]:
    for index, p in enumerate(doc["probes"]):
        if p["expectation"]["category"] == category and (
            role is None or p.get("design_role") == role
        ):
            return index, p
    raise AssertionError(category)


def first(doc: Doc, kind: str) -> tuple[str, Doc]:
    return next((path, t) for path, t in turns(doc) if t["kind"] == kind)


def _encode(doc: Doc) -> bytes:
    return json.dumps(doc).encode()


Mutation = Callable[[Doc], tuple[Doc, str]]


def m_not_fictional(doc: Doc) -> tuple[Doc, str]:
    doc["fictional"] = False
    return doc, "$.fictional"


def m_schema(doc: Doc) -> tuple[Doc, str]:
    doc["schema_version"] = 2
    return doc, "$.schema_version"


def m_wrong_type(doc: Doc) -> tuple[Doc, str]:
    doc["sessions"][0]["turns"][0]["text"] = 5
    return doc, "$.sessions[0].turns[0].text"


def m_unknown_field(doc: Doc) -> tuple[Doc, str]:
    doc["sessions"][0]["turns"][0]["mood"] = "cheerful"
    return doc, "$.sessions[0].turns[0]"


def m_duplicate(doc: Doc) -> tuple[Doc, str]:
    session = doc["sessions"][0]["turns"]
    session[1]["turn_id"] = session[0]["turn_id"]
    return doc, "$.sessions[0].turns[1].turn_id"


def m_date_backwards(doc: Doc) -> tuple[Doc, str]:
    doc["sessions"][1]["date"] = "2020-01-01"
    return doc, "$.sessions[1].date"


def m_reply_then_more(doc: Doc) -> tuple[Doc, str]:
    for s_index, session in enumerate(doc["sessions"]):
        for t_index, turn in enumerate(session["turns"]):
            if turn["kind"] == "assistant" and not turn.get("tool_calls") and t_index > 0:
                extra = {
                    "kind": "assistant",
                    "turn_id": "extra-reply",
                    "text": "And another thing.",
                }
                session["turns"].insert(t_index + 1, extra)
                return doc, f"$.sessions[{s_index}].turns[{t_index + 1}]"
    raise AssertionError


def m_unknown_tool(doc: Doc) -> tuple[Doc, str]:
    for path, turn in turns(doc):
        if turn["kind"] == "assistant" and turn.get("tool_calls"):
            turn["tool_calls"][0]["arguments"]["fax_number"] = "none"
            return doc, f"{path}.tool_calls[0].arguments"
    raise AssertionError


def m_four_days(doc: Doc) -> tuple[Doc, str]:
    doc["sessions"][1]["date"] = doc["sessions"][0]["date"]
    return doc, "$.sessions"


def m_no_steer(doc: Doc) -> tuple[Doc, str]:
    for session in doc["sessions"]:
        session["turns"] = [t for t in session["turns"] if t["kind"] != "steer"]
    return doc, "$.sessions"


def m_category(doc: Doc) -> tuple[Doc, str]:
    index, _ = probe(doc, "next_action")
    doc["probes"][index]["expectation"] = {
        "category": "abstention",
        "never_mentioned": ["hovercraft"],
    }
    return doc, "$.probes"


def m_evidence_unknown(doc: Doc) -> tuple[Doc, str]:
    index, p = probe(doc, "tool_identifier")
    p["expectation"]["answer"]["evidence"][0] = "no-such-turn"
    return doc, f"$.probes[{index}].expectation.answer.evidence[0]"


def m_evidence_mismatch(doc: Doc) -> tuple[Doc, str]:
    index, p = probe(doc, "superseded_current")
    p["expectation"]["current"]["value"] = "a value that occurs nowhere"
    return doc, f"$.probes[{index}].expectation.current.evidence[0]"


def m_identifier_outside(doc: Doc) -> tuple[Doc, str]:
    index, p = probe(doc, "tool_identifier")
    _path, turn = first(doc, "assistant")
    turn["text"] += " Reference: " + p["expectation"]["answer"]["value"]
    return doc, f"$.probes[{index}].expectation.answer.value"


def m_abstention(doc: Doc) -> tuple[Doc, str]:
    index, p = probe(doc, "abstention")
    _path, turn = first(doc, "assistant")
    turn["text"] += " The " + p["expectation"]["never_mentioned"][0] + " is fine."
    return doc, f"$.probes[{index}].expectation.never_mentioned[0]"


def m_leak(doc: Doc) -> tuple[Doc, str]:
    _, p = probe(doc, "tool_identifier")
    index, other = probe(doc, "abstention")
    other["text"] += " (not " + p["expectation"]["answer"]["value"] + ")"
    return doc, f"$.probes[{index}].text"


def m_superseded_order(doc: Doc) -> tuple[Doc, str]:
    index, p = probe(doc, "superseded_current")
    exp = p["expectation"]
    exp["current"], exp["superseded"][0] = exp["superseded"][0], exp["current"]
    return doc, f"$.probes[{index}].expectation.superseded[0]"


def m_hard_secret_outside(doc: Doc) -> tuple[Doc, str]:
    index, p = probe(doc, "redaction")
    _path, turn = first(doc, "owner")
    turn["text"] += " " + p["expectation"]["secret"]["value"]
    return doc, f"$.probes[{index}].expectation.secret.value"


def m_hard_correction(doc: Doc) -> tuple[Doc, str]:
    index, p = probe(doc, "superseded_current", "moved_date")
    p["expectation"]["superseded"] = p["expectation"]["superseded"][:1]
    return doc, f"$.probes[{index}].expectation.superseded"


def m_hard_owner_rules(doc: Doc) -> tuple[Doc, str]:
    index, p = probe(doc, "active_constraint", "owner_rules")
    p["expectation"]["required"] = p["expectation"]["required"][:2]
    return doc, f"$.probes[{index}].expectation"


def m_hard_account_in_projection(doc: Doc) -> tuple[Doc, str]:
    index, p = probe(doc, "tool_identifier", "account_reference")
    _, head = probe(doc, "tool_identifier", "head_identifier")
    p["expectation"]["answer"] = head["expectation"]["answer"]
    head["expectation"]["answer"] = dict(head["expectation"]["answer"])
    return doc, f"$.probes[{index}].expectation.answer"


def m_hard_vocabulary(doc: Doc) -> tuple[Doc, str]:
    path, turn = [(p, t) for p, t in turns(doc) if t["kind"] == "tool_result"][-1]
    text = turn["output"]
    turn["output"] = text[:-20] + " the wife said " + text[-5:]
    assert len(turn["output"]) == len(text)
    return doc, path


def m_hard_size(doc: Doc) -> tuple[Doc, str]:
    path, turn = [(p, t) for p, t in turns(doc) if t["kind"] == "tool_result"][-2]
    turn["output"] = turn["output"][:4000]
    return doc, f"{path}.output"


CASES: list[tuple[str, Callable[[], Doc], Mutation]] = [
    ("trace_not_fictional", original, m_not_fictional),
    ("trace_schema_unsupported", original, m_schema),
    ("trace_malformed", original, m_wrong_type),
    ("trace_malformed", original, m_unknown_field),
    ("duplicate_id", original, m_duplicate),
    ("sequence_invalid", original, m_date_backwards),
    ("sequence_invalid", original, m_reply_then_more),
    ("tool_call_invalid", original, m_unknown_tool),
    ("shape_out_of_range", original, m_four_days),
    ("steer_missing", original, m_no_steer),
    ("category_missing", original, m_category),
    ("evidence_unknown", original, m_evidence_unknown),
    ("evidence_mismatch", original, m_evidence_mismatch),
    ("identifier_outside_tool_output", original, m_identifier_outside),
    ("abstention_term_present", original, m_abstention),
    ("probe_leaks_answer", original, m_leak),
    ("placement_invalid", original, m_superseded_order),
    ("secret_outside_tool_output", hard, m_hard_secret_outside),
    ("correction_missing", hard, m_hard_correction),
    ("owner_rules_missing", hard, m_hard_owner_rules),
    ("placement_invalid", hard, m_hard_account_in_projection),
    ("vocabulary_not_neutral", hard, m_hard_vocabulary),
    ("shape_out_of_range", hard, m_hard_size),
]


@pytest.mark.parametrize(
    ("code", "base", "mutate"), CASES, ids=[f"{c}-{m.__name__}" for c, _, m in CASES]
)
def test_rejection_code_location_and_untouched_store(
    code: str, base: Callable[[], Doc], mutate: Mutation, store: Store, tmp_path: Path
) -> None:
    load_trace(_encode(base()))  # the unmutated base is valid
    doc, location = mutate(copy.deepcopy(base()))
    path = tmp_path / "broken.json"
    path.write_bytes(_encode(doc))
    before = store_files(store)
    with pytest.raises(TraceInvalid) as err:
        store_trace_file(store, path, out_dir=tmp_path / "out")
    assert store_files(store) == before
    assert not (tmp_path / "out").exists()
    matching = [i for i in err.value.issues if i.code == code]
    assert matching, f"expected {code}, got {[str(i) for i in err.value.issues]}"
    assert location in [i.location for i in matching], [str(i) for i in matching]
    assert err.value.location.startswith(str(path))
    assert str(err.value).startswith(f"{err.value.code}: ")


def test_invalid_json_is_malformed_at_the_root(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "torn.json"
    path.write_bytes(_original_bytes()[:5000])
    before = store_files(store)
    with pytest.raises(TraceInvalid) as err:
        store_trace_file(store, path)
    assert (err.value.code, err.value.issues[0].location) == ("trace_malformed", "$")
    assert store_files(store) == before


def test_unreadable_file_is_a_usage_error(store: Store, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        store_trace_file(store, tmp_path / "missing.json")
    assert err.value.code == "trace_file_unreadable"


def test_unknown_suite_and_bad_seeds(store: Store) -> None:
    with pytest.raises(UsageError) as err:
        suite_specs("enormous")
    assert (err.value.code, err.value.location) == ("suite_unknown", "--suite")
    for bad in ("x", "105-101", "1-100000", "101-", "10 1"):
        with pytest.raises(UsageError) as err:
            parse_seeds(bad)
        assert (err.value.code, err.value.location) == ("seeds_invalid", "--seeds")
    with pytest.raises(UsageError) as err:
        suite_specs("original", (101,))
    assert err.value.code == "seeds_invalid"
    assert parse_seeds("101-103,107") == (101, 102, 103, 107)
    assert parse_seeds(None) == tuple(range(101, 109))


def test_original_suite_with_a_broken_fixture_stores_nothing_of_it(
    store: Store, tmp_path: Path
) -> None:
    fixtures = tmp_path / "fixtures"
    (fixtures / "original").mkdir(parents=True)
    (fixtures / "original" / "a.json").write_bytes(_original_bytes())
    doc, _ = m_not_fictional(original())
    (fixtures / "original" / "b.json").write_bytes(_encode(doc))
    with pytest.raises(TraceInvalid) as err:
        build_suite(store, "original", fixtures=fixtures, out_dir=tmp_path / "out")
    assert err.value.code == "trace_not_fictional"
    assert "b.json" in err.value.location
    assert store.list_refs() == []  # no suite ref for a suite that failed


def test_two_traces_sharing_identifiers_collide(store: Store, tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    (fixtures / "original").mkdir(parents=True)
    (fixtures / "original" / "a.json").write_bytes(_original_bytes())
    doc = original()
    doc["trace_id"] = "brightline-copy"
    (fixtures / "original" / "b.json").write_bytes(_encode(doc))
    with pytest.raises(TraceCollision) as err:
        build_suite(store, "original", fixtures=fixtures, out_dir=tmp_path / "out")
    assert err.value.code == "trace_value_collision"
    # Each trace is a valid artifact on its own and stays cached; the suite is not: no
    # suite ref, no plan, no manifest.
    assert store.list_refs() == []
    assert not (tmp_path / "out" / "traces" / "original").exists()
