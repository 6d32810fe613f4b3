"""Input limits of trace loading: nesting depth, whole-string id patterns, field lengths
and the file size. Each refusal has its code and path, raises nothing but
`TraceInvalid`, and leaves the store untouched."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import continuity.traces.validate._limits as limits
from continuity.digest import check_digest
from continuity.errors import DigestInvalid, Issue, TraceInvalid, UsageError
from continuity.store import Store
from continuity.traces.generator import generate_trace
from continuity.traces.schema import (
    FIELD_MAX_CHARS,
    ID_MAX_CHARS,
    TRACE_MAX_BYTES,
    TRACE_MAX_DEPTH,
    encode_trace,
)
from continuity.traces.suites import store_trace_file
from continuity.traces.validate import load_trace, read_trace_file
from tests.conftest import ORIGINALS, REPO, store_files

Doc = dict[str, Any]
NAME = "harbor-market-stall.json"


@functools.cache
def _raw() -> bytes:
    return (ORIGINALS / NAME).read_bytes()


def _doc() -> Doc:
    return json.loads(_raw())  # type: ignore[no-any-return]


def _refused(data: bytes) -> Issue:
    """The first issue of the refusal (its location without the source prefix)."""
    with pytest.raises(TraceInvalid) as caught:
        load_trace(data, source=NAME)
    assert caught.value.location == f"{NAME}:{caught.value.issues[0].location}"
    return caught.value.issues[0]


def _first_call(doc: Doc) -> tuple[str, Doc]:
    for s, session in enumerate(doc["sessions"]):
        for t, turn in enumerate(session["turns"]):
            if turn.get("tool_calls"):
                return f"$.sessions[{s}].turns[{t}]", turn
    raise AssertionError("no tool call")


# -- nesting ---------------------------------------------------------------------------


def test_a_thousand_levels_in_two_kilobytes_is_malformed_at_its_path() -> None:
    nested = b"[" * 1000 + b"]" * 1000
    data = b'{"schema_version": 1, "title": ' + nested + b"}"
    assert len(data) < 2100
    error = _refused(data)
    assert error.code == "trace_malformed"
    assert error.location == "$.title" + "[0]" * (TRACE_MAX_DEPTH - 1)
    assert f"deeper than {TRACE_MAX_DEPTH} levels" in error.message


def test_deep_objects_inside_a_real_trace_name_the_argument_path() -> None:
    doc = _doc()
    where, turn = _first_call(doc)
    turn["tool_calls"][0]["arguments"]["query"] = "@@DEEP@@"
    deep = '{"k": ' * 1000 + "0" + "}" * 1000
    data = json.dumps(doc).replace('"@@DEEP@@"', deep).encode()
    error = _refused(data)
    assert error.code == "trace_malformed"
    assert error.location.startswith(f"{where}.tool_calls[0].arguments.query.k.k")


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    doc = _doc()
    doc["sessions"][0]["turns"][0]["text"] += " " + "[{" * 500 + ' "quoted \\" [ ' + "}]" * 5
    trace = load_trace(json.dumps(doc).encode())
    assert trace.trace_id == "harbor-market-stall"


def test_unterminated_deep_input_is_still_a_typed_refusal() -> None:
    error = _refused(b'{"title": "' + b"[" * 5000)
    assert error.code == "trace_malformed"


def test_the_decoder_recursion_backstop_is_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    # With the pre-check disabled, the decoder itself runs out of stack: the boundary
    # still turns that into trace_malformed.
    monkeypatch.setattr(limits, "TRACE_MAX_DEPTH", 10**9)
    error = _refused(b'{"title": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")
    assert error.code == "trace_malformed"
    assert "nesting too deep" in error.message


def test_valid_traces_nest_well_inside_the_limit() -> None:
    for path in sorted(ORIGINALS.glob("*.json")):
        assert limits.nesting_issue(path.read_bytes()) is None
    assert limits.nesting_issue(encode_trace(generate_trace(101))) is None


# -- ids match whole strings -------------------------------------------------------------


def test_a_trace_id_with_a_trailing_newline_is_refused() -> None:
    doc = _doc()
    doc["trace_id"] = "harbor-market-stall\n"
    error = _refused(json.dumps(doc).encode())
    assert (error.code, error.location) == ("trace_malformed", "$.trace_id")


@pytest.mark.parametrize("suffix", ["\n", "\r\n", " ", "\x00", "\u2028", "/x", "\t"])
def test_every_defined_id_must_match_as_a_whole(suffix: str) -> None:
    where, _ = _first_call(_doc())
    cases: list[tuple[Callable[[Doc], Doc], str, str]] = [
        (lambda d: d["sessions"][1], "session_id", "$.sessions[1].session_id"),
        (lambda d: d["sessions"][0]["turns"][2], "turn_id", "$.sessions[0].turns[2].turn_id"),
        (lambda d: d["probes"][3], "probe_id", "$.probes[3].probe_id"),
    ]
    for pick, field, location in cases:
        doc = _doc()
        pick(doc)[field] += suffix
        error = _refused(json.dumps(doc).encode())
        assert (error.code, error.location) == ("trace_malformed", location), field
    doc = _doc()
    _first_call(doc)[1]["tool_calls"][0]["call_id"] += suffix
    error = _refused(json.dumps(doc).encode())
    assert (error.code, error.location) == ("trace_malformed", f"{where}.tool_calls[0].call_id")


def test_an_empty_turn_id_is_malformed() -> None:
    doc = _doc()
    doc["sessions"][0]["turns"][1]["turn_id"] = ""
    error = _refused(json.dumps(doc).encode())
    assert (error.code, error.location) == ("trace_malformed", "$.sessions[0].turns[1].turn_id")


# -- lengths ---------------------------------------------------------------------------


def test_ids_hold_at_most_the_documented_length() -> None:
    doc = _doc()
    doc["sessions"][0]["session_id"] = "s" * ID_MAX_CHARS
    assert load_trace(json.dumps(doc).encode()).sessions[0].session_id == "s" * ID_MAX_CHARS
    doc["sessions"][0]["session_id"] = "s" * (ID_MAX_CHARS + 1)
    error = _refused(json.dumps(doc).encode())
    assert (error.code, error.location) == ("trace_malformed", "$.sessions[0].session_id")


def test_an_eight_megabyte_session_id_is_refused_without_echoing_it() -> None:
    doc = _doc()
    doc["sessions"][0]["session_id"] = "x" * 8_000_000
    with pytest.raises(TraceInvalid) as caught:
        load_trace(json.dumps(doc).encode())
    error = caught.value
    assert (error.code, error.location) == ("trace_malformed", "$.sessions[0].session_id")
    assert len(str(error)) < 400
    assert len(error.issues) == 1


def _long(field: str) -> str:
    return "a" * (FIELD_MAX_CHARS[field] + 1)


def test_every_short_field_has_its_maximum() -> None:
    where, _ = _first_call(_doc())

    def set_call_tool(d: Doc) -> None:
        _first_call(d)[1]["tool_calls"][0]["tool"] = _long("tool")

    def set_argument_name(d: Doc) -> None:
        _first_call(d)[1]["tool_calls"][0]["arguments"][_long("argument_name")] = "x"

    def set_evidence(d: Doc) -> None:
        fact = next(p for p in d["probes"] if "answer" in p["expectation"])
        fact["expectation"]["answer"]["evidence"].append("t" * (ID_MAX_CHARS + 1))

    def set_fact_value(d: Doc) -> None:
        fact = next(p for p in d["probes"] if "answer" in p["expectation"])
        fact["expectation"]["answer"]["value"] = _long("fact_value")

    def set_status(d: Doc) -> None:
        probe = next(p for p in d["probes"] if "status" in p["expectation"])
        probe["expectation"]["status"] = _long("status")

    def set_never(d: Doc) -> None:
        probe = next(p for p in d["probes"] if "never_mentioned" in p["expectation"])
        probe["expectation"]["never_mentioned"].append(_long("never_mentioned"))

    def set_role(d: Doc) -> None:
        d["probes"][0]["design_role"] = _long("design_role")

    cases: list[tuple[Callable[[Doc], None], str]] = [
        (lambda d: d.__setitem__("title", _long("title")), "$.title"),
        (lambda d: d.__setitem__("scenario", _long("scenario")), "$.scenario"),
        (lambda d: d["sessions"][0].__setitem__("date", _long("date")), "$.sessions[0].date"),
        (set_call_tool, f"{where}.tool_calls[0].tool"),
        (set_argument_name, f"{where}.tool_calls[0].arguments"),
        (set_evidence, "$.probes[...].expectation.answer.evidence[...]"),
        (set_fact_value, "$.probes[...].expectation.answer.value"),
        (set_status, "$.probes[...].expectation.status"),
        (set_never, "$.probes[...].expectation.never_mentioned[...]"),
        (set_role, "$.probes[0].design_role"),
    ]
    for mutate, location in cases:
        doc = _doc()
        mutate(doc)
        error = _refused(json.dumps(doc).encode())
        assert error.code == "trace_malformed", location
        assert _shape(error.location) == _shape(location), (error.location, location)
        assert "holds at most" in error.message or "ids are 1-128" in error.message


def _shape(location: str) -> str:
    """A location with its indexes blanked (`[3]` -> `[...]`)."""
    return re.sub(r"\[\d+\]|\[\.\.\.\]", "[...]", location)


@pytest.mark.parametrize("bad", ["c" * (ID_MAX_CHARS + 1), "c1\n", ""])
def test_result_steer_and_evidence_references_match_the_id_pattern(bad: str) -> None:
    doc = _doc()
    for s, session in enumerate(doc["sessions"]):
        for t, turn in enumerate(session["turns"]):
            if turn["kind"] in ("tool_result", "steer"):
                field = "call_id" if turn["kind"] == "tool_result" else "during_call"
                copy = _doc()
                copy["sessions"][s]["turns"][t][field] = bad
                error = _refused(json.dumps(copy).encode())
                where = f"$.sessions[{s}].turns[{t}].{field}"
                assert (error.code, error.location) == ("trace_malformed", where)
    doc = _doc()
    p_index, fact = next(
        (i, p["expectation"]["answer"])
        for i, p in enumerate(doc["probes"])
        if "answer" in p["expectation"]
    )
    fact["evidence"][0] = bad
    error = _refused(json.dumps(doc).encode())
    where = f"$.probes[{p_index}].expectation.answer.evidence[0]"
    assert (error.code, error.location) == ("trace_malformed", where)


# -- file size ---------------------------------------------------------------------------


def test_generated_traces_are_far_below_the_size_limit() -> None:
    # The largest generated trace measured (hard-distractors, seeds 101-124) is ~0.95 MB.
    largest = max(
        len(encode_trace(generate_trace(seed, distractors=d)))
        for seed in (101, 102)
        for d in (False, True)
    )
    assert 800_000 < largest < TRACE_MAX_BYTES // 4


def test_a_trace_over_the_size_limit_is_too_large(store: Store, tmp_path: Path) -> None:
    doc = _doc()
    doc["sessions"][0]["turns"][0]["text"] += "x" * TRACE_MAX_BYTES
    data = json.dumps(doc).encode()
    error = _refused(data)
    assert (error.code, error.location) == ("trace_too_large", "$")
    path = tmp_path / "big.json"
    path.write_bytes(data)
    before = store_files(store)
    with pytest.raises(TraceInvalid) as caught:
        store_trace_file(store, path, out_dir=tmp_path / "out")
    assert caught.value.code == "trace_too_large"
    assert store_files(store) == before
    assert not (tmp_path / "out").exists()


def test_reading_stops_at_the_limit(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.json"
    with sparse.open("wb") as handle:
        handle.truncate(50 * TRACE_MAX_BYTES)  # 400 MiB of holes: never read in full
    with pytest.raises(TraceInvalid) as caught:
        read_trace_file(sparse)
    assert caught.value.code == "trace_too_large"
    assert f"over {TRACE_MAX_BYTES:,} bytes" in caught.value.message
    with pytest.raises(UsageError) as missing:
        read_trace_file(tmp_path / "absent.json")
    assert missing.value.code == "trace_file_unreadable"
    assert read_trace_file(ORIGINALS / NAME) == _raw()


def test_the_check_command_prints_coded_lines(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 1000 + b"]" * 1000)
    newline = tmp_path / "newline.json"
    doc = _doc()
    doc["trace_id"] = "harbor-market-stall\n"
    newline.write_text(json.dumps(doc))
    result = subprocess.run(
        [sys.executable, "-m", "continuity.traces", "check", str(deep), str(newline), "/dev/zero"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{deep}: trace_malformed: nested deeper than")
    assert lines[1] == (
        f"{newline}: trace_malformed: trace ids are 3-96 lowercase letters, digits and "
        "hyphens (at $.trace_id)"
    )
    assert lines[2].startswith("input_not_a_file: ")  # a device is never read
    assert lines[2].endswith("(at /dev/zero)")


def test_digests_and_ref_names_match_whole_strings_too(store: Store) -> None:
    # A stored trace's ref is traces/file/<trace id>; its objects are named by digest.
    with pytest.raises(DigestInvalid) as digest:
        check_digest("a" * 64 + "\n")
    assert digest.value.code == "digest_invalid"
    with pytest.raises(UsageError) as ref:
        store.set_ref("traces/file/harbor-market-stall\n", objects=[], actions=[])
    assert ref.value.code == "ref_name_invalid"
    assert not list(store.refs_dir.rglob("*harbor*"))
