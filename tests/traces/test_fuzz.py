"""Fuzzing trace loading: mutated originals never escape as anything but a coded error.

Each example takes a real original fixture (fixtures/original/*.json) and applies one
mutation: a deleted key, a wrong type, truncation, deep nesting, a huge string, odd
Unicode (lone surrogates escaped in JSON, control and bidi characters, raw invalid
UTF-8), NaN or Infinity, a duplicate id or JSON key, whitespace after an id, or
reordered turns, sessions or probes. Every outcome must be a valid `Trace` with safe ids
or a `ContinuityError` whose code is in the catalogue and which has a location.

Through `load_trace` the default run is 1,000 examples (fixed seed). Through the
``traces --file`` command, in process (doit's real command line parser and the real task,
through the front door `continuity.__main__.main`, so no interpreter start per case), 40
by default and 1,000 under ``slow``; through the real ``doit traces --file`` command in a
subprocess (and ``python -m continuity.traces check``) a sample of 5 (10 under ``slow``).
Each: a coded line, no traceback, and no store or output write on refusal.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from continuity.__main__ import main as front_door
from continuity.errors import ContinuityError, TraceInvalid
from continuity.errors.catalogue import ENTRIES
from continuity.graph import DEP_FILE_NAME
from continuity.traces.schema import ID_PATTERN, TRACE_ID_PATTERN, TRACE_MAX_BYTES, Trace
from continuity.traces.validate import load_trace
from tests.conftest import ORIGINALS, REPO
from tests.graph.test_dodo import doit_command

FILES = sorted(p.name for p in ORIGINALS.glob("*.json"))
Path_ = tuple[str | int, ...]
Doc = Any

MUTATIONS = (
    "delete_key",
    "wrong_type",
    "truncate",
    "deep_nesting",
    "huge_string",
    "odd_unicode",
    "invalid_utf8",
    "nan_infinity",
    "duplicate_id",
    "duplicate_json_key",
    "id_whitespace",
    "reorder",
)
# Mutations that can never leave a valid trace, with the code their refusal must have.
MUST_FAIL = {
    "truncate": "trace_malformed",
    "deep_nesting": "trace_malformed",
    "invalid_utf8": "trace_malformed",
    "nan_infinity": "trace_malformed",
    "id_whitespace": "trace_malformed",
}
ODD = (
    "\ud800",  # lone high surrogate: json.dumps writes it as the escape \ud800
    "\udfff",  # lone low surrogate
    "\ud83d",  # the first half of an emoji
    "\x00",
    "\u202e",  # right-to-left override
    "\ufeff",
    "\uffff",
    "\u2028",
    "e\u0301",
    "\U0001f600",
    "\n",
    "\r\n",
    "\\",
    '"',
)
ID_FIELDS = ("trace_id", "session_id", "turn_id", "call_id", "probe_id")
_CATALOGUE = frozenset(entry.code for entry in ENTRIES)
_CODE = re.compile(r"[a-z][a-z0-9_]*")


@functools.cache
def _raw(name: str) -> bytes:
    return (ORIGINALS / name).read_bytes()


def _doc(name: str) -> Doc:
    return json.loads(_raw(name))


@functools.cache
def _positions(name: str) -> tuple[tuple[Path_, ...], tuple[Path_, ...], tuple[Path_, ...]]:
    """Paths of every value, of every object, and of every string, in one fixture."""
    values: list[Path_] = []
    objects: list[Path_] = []
    strings: list[Path_] = []

    def walk(node: Any, path: Path_) -> None:
        if isinstance(node, dict):
            objects.append(path)
            children: Any = node.items()
        elif isinstance(node, list):
            children = enumerate(node)
        else:
            if isinstance(node, str):
                strings.append(path)
            return
        for key, child in children:
            values.append((*path, key))
            walk(child, (*path, key))

    walk(_doc(name), ())
    return tuple(values), tuple(objects), tuple(strings)


@functools.cache
def _id_positions(name: str) -> tuple[Path_, ...]:
    values, _, _ = _positions(name)
    return tuple(p for p in values if p and p[-1] in ID_FIELDS)


def _get(doc: Doc, path: Path_) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _set(doc: Doc, path: Path_, value: Any) -> None:
    _get(doc, path[:-1])[path[-1]] = value


def json_path(path: Path_) -> str:
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)


def _dump(doc: Doc) -> bytes:
    # ensure_ascii: lone surrogates become \udXXX escapes; allow_nan: NaN and Infinity.
    return json.dumps(doc, ensure_ascii=True, allow_nan=True).encode()


_SENTINEL = "@@fuzz-sentinel@@"
_ODD_VALUES = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


class Mutated:
    """One mutated fixture: what was done, where, and the bytes."""

    def __init__(self, name: str, mutation: str, data: bytes, where: Path_ | None) -> None:
        self.name = name
        self.mutation = mutation
        self.data = data
        self.where = where

    def __repr__(self) -> str:
        where = json_path(self.where) if self.where is not None else "-"
        return f"Mutated({self.name}, {self.mutation}, at {where}, {len(self.data):,} bytes)"


@st.composite
def mutated_traces(draw: st.DrawFn) -> Mutated:
    name = draw(st.sampled_from(FILES))
    mutation = draw(st.sampled_from(MUTATIONS))
    raw = _raw(name)
    values, objects, strings = _positions(name)
    doc = _doc(name)
    where: Path_ | None = None
    if mutation == "truncate":
        cut = draw(st.integers(min_value=0, max_value=len(raw) - 2))
        return Mutated(name, mutation, raw[:cut], None)
    if mutation == "invalid_utf8":
        at = draw(st.integers(min_value=0, max_value=len(raw)))
        junk = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80", b"\xf8"]))
        return Mutated(name, mutation, raw[:at] + junk + raw[at:], None)
    if mutation == "duplicate_json_key":
        where = draw(st.sampled_from(objects))
        container = _get(doc, where)
        key = draw(st.sampled_from(sorted(container)))
        replacement = draw(_ODD_VALUES | st.just(container[key]))
        # json cannot write a repeated key: put a sentinel key in, then rename it.
        container[_SENTINEL] = replacement
        data = _dump(doc).replace(f'"{_SENTINEL}"'.encode(), json.dumps(key).encode())
        return Mutated(name, mutation, data, where)
    if mutation == "delete_key":
        where = draw(st.sampled_from(objects))
        container = _get(doc, where)
        del container[draw(st.sampled_from(sorted(container)))]
    elif mutation == "wrong_type":
        where = draw(st.sampled_from(values))
        _set(doc, where, draw(_ODD_VALUES))
    elif mutation == "deep_nesting":
        where = draw(st.sampled_from(values))
        depth = draw(st.integers(min_value=33, max_value=3000))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"k": ', "}"), ('[{"k": ', "}]")]))
        _set(doc, where, _SENTINEL)
        deep = opener * depth + "0" + closer * depth
        data = _dump(doc).replace(f'"{_SENTINEL}"'.encode(), deep.encode())
        return Mutated(name, mutation, data, where)
    elif mutation == "huge_string":
        where = draw(st.sampled_from(strings + _id_positions(name)))
        size = draw(st.sampled_from([129, 300, 1025, 5_000, 300_000, TRACE_MAX_BYTES + 1]))
        # Past the size limit one ASCII character: an escaped emoji would be 12 bytes each.
        chars = ["x"] if size > TRACE_MAX_BYTES else ["x", "-", "é", "\U0001f600"]
        char = draw(st.sampled_from(chars))
        _set(doc, where, char * size)
    elif mutation == "odd_unicode":
        where = draw(st.sampled_from(strings + _id_positions(name)))
        odd = draw(st.sampled_from(ODD) | st.text(alphabet=st.characters(), max_size=8))
        old = _get(doc, where)
        spot = draw(st.integers(min_value=0, max_value=len(old)))
        _set(doc, where, old[:spot] + odd + old[spot:])
    elif mutation == "nan_infinity":
        where = draw(st.sampled_from(values))
        _set(doc, where, draw(st.sampled_from([math.nan, math.inf, -math.inf])))
    elif mutation == "duplicate_id":
        ids = _id_positions(name)
        source = draw(st.sampled_from(ids))
        where = draw(st.sampled_from([p for p in ids if p != source]))
        _set(doc, where, _get(doc, source))
    elif mutation == "id_whitespace":
        where = draw(st.sampled_from(_id_positions(name)))
        suffix = draw(st.sampled_from(["\n", "\r\n", " ", "\t", "\x00", "\u2028", "\n\n"]))
        _set(doc, where, _get(doc, where) + suffix)
    else:  # reorder
        target = draw(st.sampled_from(["turns", "sessions", "probes", "move_turn"]))
        if target == "turns":
            index = draw(st.integers(min_value=0, max_value=len(doc["sessions"]) - 1))
            where = ("sessions", index, "turns")
        elif target == "move_turn":
            sessions = doc["sessions"]
            a, b = draw(st.permutations(range(len(sessions))))[:2]
            turn = sessions[a]["turns"].pop(
                draw(st.integers(min_value=0, max_value=len(sessions[a]["turns"]) - 1))
            )
            sessions[b]["turns"].insert(
                draw(st.integers(min_value=0, max_value=len(sessions[b]["turns"]))), turn
            )
            return Mutated(name, mutation, _dump(doc), ("sessions",))
        else:
            where = (target,)
        _set(doc, where, draw(st.permutations(_get(doc, where))))
    return Mutated(name, mutation, _dump(doc), where)


def _check_refusal(case: Mutated, error: ContinuityError) -> None:
    assert _CODE.fullmatch(error.code), case
    assert error.code in _CATALOGUE, f"{error.code} not catalogued"
    assert isinstance(error.location, str) and error.location, case
    if isinstance(error, TraceInvalid):
        for issue in error.issues:
            assert _CODE.fullmatch(issue.code) and issue.location.startswith("$"), issue
            assert issue.code in _CATALOGUE, f"{issue.code} not catalogued"
            assert len(issue.message) < 2_000, "a message echoes an oversized value"
    expected = MUST_FAIL.get(case.mutation)
    if len(case.data) > TRACE_MAX_BYTES:
        expected = "trace_too_large"
    if expected:
        assert error.code == expected, (case, str(error))
    if case.mutation in ("deep_nesting", "id_whitespace") and len(case.data) <= TRACE_MAX_BYTES:
        assert case.where is not None
        first = error.issues[0] if isinstance(error, TraceInvalid) else None
        assert first is not None and first.location.startswith(json_path(case.where)), (
            case,
            str(error),
        )


def _check_accepted(case: Mutated, trace: Trace) -> None:
    assert case.mutation not in MUST_FAIL, f"{case} was accepted"
    assert TRACE_ID_PATTERN.fullmatch(trace.trace_id), case
    for session in trace.sessions:
        assert ID_PATTERN.fullmatch(session.session_id), case
        for turn in session.turns:
            assert ID_PATTERN.fullmatch(turn.turn_id), case
    for probe in trace.probes:
        assert ID_PATTERN.fullmatch(probe.probe_id), case


def _load_outcome(case: Mutated) -> ContinuityError | None:
    """Load through the real entry point; anything but a ContinuityError escapes."""
    try:
        trace = load_trace(case.data, source=case.name)
    except ContinuityError as error:
        _check_refusal(case, error)
        return error
    _check_accepted(case, trace)
    return None


_FAST = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@seed(20271101)
@settings(_FAST, max_examples=1_000)
@given(mutated_traces())
def test_mutated_traces_load_or_fail_with_a_code(case: Mutated) -> None:
    _load_outcome(case)


@pytest.mark.variant
@seed(20271102)
@settings(_FAST, max_examples=3_000)
@given(mutated_traces())
def test_mutated_traces_load_or_fail_with_a_code_full_size(case: Mutated) -> None:
    _load_outcome(case)


# -- through the real commands -------------------------------------------------------------


def _store_tree(root: Path) -> dict[str, bytes]:
    """Every file of the store and its bytes, except doit's own dependency database."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.name.startswith(DEP_FILE_NAME)
    }


def _run(args: list[str], store: Path, out: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CONTINUITY_STORE": str(store),
        "CONTINUITY_OUT": str(out),
    }
    return subprocess.run(
        args, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )


_CODED_LINE = re.compile(r"^(?:also )?([a-z][a-z0-9_]*): .* \(at [^\n]+\)$", re.MULTILINE)


# One ``traces --file PATH`` call: (exit status, stdout + stderr).
Runner = Callable[[Path, Path, Path], tuple[int, str]]


def _subprocess_runner(path: Path, store: Path, out: Path) -> tuple[int, str]:
    result = _run(doit_command("traces", "--file", str(path)), store, out)
    return result.returncode, result.stdout + result.stderr


def _in_process_runner(path: Path, store: Path, out: Path) -> tuple[int, str]:
    """The front door's `main` in this process: doit's command line parser, the checked
    loader, the real ``traces`` task. doit changes the directory and ``sys.path`` when it
    loads ``dodo.py``, and importing ``dodo.py`` installs the interrupt handlers: all
    restored after the call. doit's reporter writes to the ``sys.stdout`` of its import
    time unless ``-o FILE`` (doit's own option) says otherwise."""
    report = store.parent / "doit-output.txt"  # never beside the trace (a fixture)
    args = ["-o", str(report), "traces", "--file", str(path), "--store", str(store)]
    args += ["--out", str(out)]
    captured = io.StringIO()
    cwd, sys_path, hook = os.getcwd(), sys.path[:], sys.excepthook
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            status = front_door(args)
    finally:
        os.chdir(cwd)
        sys.path[:] = sys_path
        sys.excepthook = hook
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    reported = report.read_text() if report.exists() else ""
    report.unlink(missing_ok=True)
    return status, reported + captured.getvalue()


def _through_doit(case: Mutated, tmp_path: Path, store: Path, out: Path, runner: Runner) -> None:
    expected = _load_outcome(case)
    path = tmp_path / "mutated.json"
    path.write_bytes(case.data)
    before, out_before = _store_tree(store), _store_tree(out)
    status, output = runner(path, store, out)
    assert "Traceback" not in output, (case, output[-3000:])
    if expected is None:
        assert status == 0, (case, output[-3000:])
        return
    assert status != 0, case
    codes = _CODED_LINE.findall(output)
    assert codes and codes[0] == expected.code, (case, output[-3000:])
    assert _store_tree(store) == before, f"{case} wrote to the store"
    assert _store_tree(out) == out_before, f"{case} wrote an output"


def _doit_sample(tmp_path: Path, cases: list[Mutated], runner: Runner = _subprocess_runner) -> None:
    store, out = tmp_path / "store", tmp_path / "out"
    # A store with content, so "no writes" compares something real.
    status, output = runner(ORIGINALS / FILES[0], store, out)
    assert status == 0, output
    for index, case in enumerate(cases):
        folder = tmp_path / f"case-{index}"
        folder.mkdir()
        _through_doit(case, folder, store, out, runner)


def _check_command(tmp_path: Path, cases: list[Mutated]) -> None:
    """All cases through one `python -m continuity.traces check` call."""
    files = []
    for index, case in enumerate(cases):
        path = tmp_path / f"check-{index}.json"
        path.write_bytes(case.data)
        files.append(str(path))
    command = [sys.executable, "-m", "continuity.traces", "check", *files]
    result = _run(command, tmp_path / "store", tmp_path / "out")
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-3000:]
    for file, case in zip(files, cases, strict=True):
        lines = [line for line in result.stdout.splitlines() if line.startswith(f"{file}: ")]
        expected = _load_outcome(case)
        assert lines, case
        if expected is None:
            assert lines[0].startswith(f"{file}: ok ("), case
        else:
            assert lines[0].startswith(f"{file}: {expected.code}: "), (case, lines[0][:300])
    failed = any(_load_outcome(case) is not None for case in cases)
    assert result.returncode == (1 if failed else 0)


@settings(deadline=None, database=None, max_examples=1, suppress_health_check=list(HealthCheck))
@seed(20271103)
@given(data=st.data())
def test_mutated_traces_through_doit_and_check(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    cases = data.draw(st.lists(mutated_traces(), min_size=5, max_size=5))
    tmp_path = tmp_path_factory.mktemp("fuzz-doit")
    _doit_sample(tmp_path, cases)
    _check_command(tmp_path, cases)


@pytest.mark.variant
@settings(deadline=None, database=None, max_examples=1, suppress_health_check=list(HealthCheck))
@seed(20271104)
@given(data=st.data())
def test_mutated_traces_through_doit_and_check_full_size(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    cases = data.draw(st.lists(mutated_traces(), min_size=10, max_size=10))
    tmp_path = tmp_path_factory.mktemp("fuzz-doit-full")
    _doit_sample(tmp_path, cases)
    _check_command(tmp_path, cases)


@settings(deadline=None, database=None, max_examples=1, suppress_health_check=list(HealthCheck))
@seed(20271105)
@given(data=st.data())
def test_mutated_traces_through_traces_file_in_process(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    cases = data.draw(st.lists(mutated_traces(), min_size=40, max_size=40))
    _doit_sample(tmp_path_factory.mktemp("fuzz-front-door"), cases, _in_process_runner)


@pytest.mark.variant
@settings(deadline=None, database=None, max_examples=1, suppress_health_check=list(HealthCheck))
@seed(20271106)
@given(data=st.data())
def test_mutated_traces_through_traces_file_in_process_full_size(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    cases = data.draw(st.lists(mutated_traces(), min_size=1_000, max_size=1_000))
    _doit_sample(tmp_path_factory.mktemp("fuzz-front-door-full"), cases, _in_process_runner)
