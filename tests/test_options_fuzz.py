"""Malformed option values, generated for every option of every task, through the front door.

Each case is one command line, ``<task> ... --option VALUE``, run in process through
`continuity.__main__.main` (the argv checks, doit's real command line parser with the
tasks' checking types, the checked loader), under a wall-clock alarm. The values come
from hypothesis (fixed seed): empty and blank values (every option), a value given to a
flag, a value missing at the end, an option the task does not take, and for numeric,
seed and path options numbers out of range (negative, huge, overflowing), non-integers,
nan and infinities, reversed and overflowing ranges, non-ASCII digits and odd Unicode,
and unusable paths (``/proc/...``, ``/dev/null/...``, an existing file). Every one must be
refused before any work: no traceback, exactly one coded line ``code: message (at
--option)`` whose code is in the catalogue, nothing written under ``$CONTINUITY_OUT``.

Values only a task's action can judge (an unknown suite, arm or provider) start the task,
so they run through the real command line in a subprocess in ``tests/test_options.py``.
The tasks and their options are read from ``dodo.py``, so a new task or option is fuzzed
without a change here. 60 examples by default, 300 under ``slow``; plus a fixed table
of every option of every task: one malformed value each by default, one of every form
under ``slow``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.__main__ import main
from continuity.errors.catalogue import ENTRIES
from continuity.traces.keys import MAX_SEEDS
from rules.params import DirOption, FloatOption, IntOption, NewDirOption, SeedsOption

CATALOGUE = frozenset(entry.code for entry in ENTRIES)
CODED = re.compile(r"^([a-z][a-z0-9_]*)(?::[A-Za-z0-9_.-]+)?: .+ \(at (.+)\)$")
BOUND_SECONDS = 20.0
BLANKS = " \t\n\r\x0b\x0c\u00a0\u2003\u3000"
# Unicode without NUL and surrogates (neither can be a command-line argument).
ODD = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")


@contextlib.contextmanager
def _restored_process_state() -> Iterator[None]:
    """doit changes the directory and ``sys.path`` when it loads ``dodo.py``; importing
    ``dodo.py`` installs the interrupt handlers. Both undone afterwards."""
    cwd, sys_path, hook = os.getcwd(), sys.path[:], sys.excepthook
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.path[:] = sys_path
        sys.excepthook = hook
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def _tasks() -> dict[str, list[dict[str, Any]]]:
    """Every task of ``dodo.py`` and its option dicts."""
    with _restored_process_state():
        dodo = importlib.import_module("dodo")
    return {
        name.removeprefix("task_"): [dict(p) for p in getattr(dodo, name)().get("params", [])]
        for name in sorted(dir(dodo))
        if name.startswith("task_")
    }


TASKS = _tasks()
OPTIONS = [(task, param) for task, params in TASKS.items() for param in params]


class Hang(BaseException):
    """The call ran past `BOUND_SECONDS` (a BaseException: doit catches Exception)."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang(f"no answer within {BOUND_SECONDS} s")


def run_front_door(args: list[str]) -> tuple[int, str, float]:
    """`main(args)` in this process, bounded: (exit status, stdout + stderr, seconds)."""
    assert threading.current_thread() is threading.main_thread()  # the alarm needs it
    captured = io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, BOUND_SECONDS)
    start = time.monotonic()
    try:
        with (
            _restored_process_state(),
            contextlib.redirect_stdout(captured),
            contextlib.redirect_stderr(captured),
        ):
            status = main(args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return status, captured.getvalue(), time.monotonic() - start


def assert_refused(args: list[str], option: str) -> None:
    out = Path(os.environ["CONTINUITY_OUT"])
    status, output, seconds = run_front_door(args)
    assert seconds < BOUND_SECONDS
    assert "Traceback" not in output, (args, output)
    assert status == 2, (args, status, output)
    coded = [m for m in map(CODED.match, output.splitlines()) if m]
    assert len(coded) == 1, (args, output)
    code, location = coded[0].group(1), coded[0].group(2)
    assert code in CATALOGUE, f"{code} is not in the catalogue"
    assert location == option, (args, output)
    assert len(output.splitlines()) == 1, (args, output)  # the line is all there is
    assert not out.exists(), f"{args} created the output directory"


# -- malformed values by kind ------------------------------------------------------------------


def _blank() -> st.SearchStrategy[str]:
    return st.text(alphabet=BLANKS, max_size=4)


def _int_values(kind: IntOption) -> st.SearchStrategy[str]:
    below = st.integers(min_value=-(10**40), max_value=kind.minimum - 1).map(str)
    above = st.integers(min_value=kind.maximum + 1, max_value=10**40).map(str)
    fractions = st.floats(allow_nan=True, allow_infinity=True).map(repr)  # "5.0", "nan"
    words = st.text(ODD, min_size=1, max_size=8).map(lambda t: "x" + t)
    spellings = st.sampled_from(["0x10", "1e3", "1_0", "\u0663", "\uff15", "--1", "1-2", "inf"])
    return st.one_of(below, above, fractions, words, spellings)


def _float_values(kind: FloatOption) -> st.SearchStrategy[str]:
    not_finite = st.sampled_from(["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e999"])
    below = (
        st.floats(max_value=kind.minimum, allow_nan=False, allow_infinity=False)
        .filter(lambda v: v < kind.minimum or not kind.inclusive)
        .map(repr)
    )
    words = st.text(ODD, min_size=1, max_size=8).map(lambda t: "x" + t)
    return st.one_of(not_finite, below, words, st.sampled_from(["0x1p", "1,5", "--1"]))


def _seeds_values(kind: SeedsOption) -> st.SearchStrategy[str]:
    limit = kind.maximum or MAX_SEEDS
    reversed_range = st.tuples(st.integers(2, 10**6), st.integers(1, 10**6)).filter(
        lambda ab: ab[0] > ab[1]
    )
    reversed_text = reversed_range.map(lambda ab: f"{ab[0]}-{ab[1]}")
    overflowing = st.integers(min_value=limit + 1, max_value=10**40).map(lambda n: f"1-{n}")
    junk = st.sampled_from(["x", "1,,2", "-5", "1-2-3", "\u0663", "1-", ",", "1.5", "nan"])
    words = st.text(ODD, min_size=1, max_size=8).map(lambda t: "x" + t)
    return st.one_of(reversed_text, overflowing, junk, words)


def _path_values(kind: DirOption | NewDirOption, afile: Path) -> st.SearchStrategy[str]:
    name = st.text(alphabet="abcdefghij-_", min_size=1, max_size=8).map(lambda t: "nope-" + t)
    unusable = st.one_of(
        name.map(lambda n: f"/proc/{n}"),
        name.map(lambda n: f"/proc/{n}/x"),
        name.map(lambda n: f"/dev/null/{n}"),
        st.just(str(afile)),
        name.map(lambda n: str(afile / n)),
    )
    if isinstance(kind, NewDirOption):
        return unusable | st.just(str(afile.parent))  # exists already
    return unusable


def _typed_values(kind: object, afile: Path) -> st.SearchStrategy[str] | None:
    if isinstance(kind, IntOption):
        return _int_values(kind)
    if isinstance(kind, FloatOption):
        return _float_values(kind)
    if isinstance(kind, SeedsOption):
        return _seeds_values(kind)
    if isinstance(kind, DirOption | NewDirOption):
        return _path_values(kind, afile)
    return None


def _forms(task: str, param: dict[str, Any], afile: Path) -> list[st.SearchStrategy[list[str]]]:
    """The malformed command lines for one option (its ``--long`` is the location)."""
    option = "--" + param["long"]
    forms: list[st.SearchStrategy[list[str]]] = [
        _blank().map(lambda v: [task, option, v]),
        _blank().map(lambda v: [task, f"{option}={v}"]),
    ]
    if param["type"] is bool:
        value = st.text(ODD, min_size=1, max_size=8).filter(lambda v: bool(v.strip()))
        forms.append(value.map(lambda v: [task, f"{option}={v}"]))
    else:
        forms.append(st.just([task, option]))  # the value is missing
    typed = _typed_values(param["type"], afile)
    if typed is not None:
        forms.append(typed.map(lambda v: [task, option, v]))
        forms.append(typed.map(lambda v: [task, f"{option}={v}"]))
    return forms


Case = tuple[list[str], str]


@st.composite
def malformed(draw: st.DrawFn, afile: Path) -> Case:
    task, param = draw(st.sampled_from(OPTIONS))
    if draw(st.integers(0, 9)) == 0:  # an option the task does not take
        name = draw(st.text(alphabet="abcdefghij-", min_size=1, max_size=10))
        option = f"--no-such-{name}"
        return [task, option], option
    args = draw(st.one_of(*_forms(task, param, afile)))
    return args, "--" + param["long"]


@pytest.fixture(scope="module")
def afile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An existing file (unusable as a directory); its folder exists."""
    path = tmp_path_factory.mktemp("options-fuzz") / "afile"
    path.write_text("x")
    return path


def _fuzz(afile: Path, examples: int) -> Callable[[], None]:
    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(malformed(afile))
    def check(case: Case) -> None:
        args, option = case
        assert_refused(args, option)

    return check


def test_malformed_options_are_one_coded_line(afile: Path) -> None:
    _fuzz(afile, 60)()


@pytest.mark.variant
def test_malformed_options_are_one_coded_line_full_size(afile: Path) -> None:
    _fuzz(afile, 300)()


def _table(afile: Path, every_form: bool) -> None:
    """One example of every form (or, by default, of the last: the typed value, else the
    missing one) for every option of every task: hypothesis' simplest example of each
    strategy, so the table is fixed."""
    seen: set[tuple[str, str]] = set()
    for task, param in OPTIONS:
        forms = _forms(task, param, afile)
        for form in forms if every_form else forms[-1:]:
            assert_refused(_first(form), "--" + param["long"])
            seen.add((task, param["long"]))
    assert seen == {(task, param["long"]) for task, param in OPTIONS}
    assert {"units", "gc", "lookup_budget", "verify", "plan"} <= set(TASKS)
    assert len(OPTIONS) >= 100


def test_every_option_of_every_task_refuses_a_malformed_value(afile: Path) -> None:
    _table(afile, every_form=False)


@pytest.mark.variant
def test_every_option_of_every_task_refuses_each_kind_of_malformed_value(afile: Path) -> None:
    _table(afile, every_form=True)


def _first(strategy: st.SearchStrategy[list[str]]) -> list[str]:
    """The simplest example of `strategy` (hypothesis shrinks towards it): deterministic."""
    found: list[list[str]] = []

    @settings(max_examples=1, derandomize=True, database=None, deadline=None)
    @given(strategy)
    def take(args: list[str]) -> None:
        found.append(args)

    take()
    return found[0]


def test_the_guard_catches_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    """The alarm really bounds a call (a command that never returns)."""
    monkeypatch.setattr(sys.modules[__name__], "BOUND_SECONDS", 0.2)

    def never(argv: list[str]) -> int:
        while True:
            time.sleep(0.01)

    monkeypatch.setattr(sys.modules[__name__], "main", never)
    with pytest.raises(Hang):
        run_front_door(["units"])
