"""Every numeric and path option is refused with one coded line before any work.

In process: the checking types (`rules.params`) through doit's own parser, the API-level
checks (`parse_seeds`, `build_plan`, `collect_garbage`, `check_cost_limit`, the store and
output roots, `lookup_budget`'s arguments) and the argv front door (`continuity.argv`).
Through the real doit command line: a generated table of malformed values for every
task, each call bounded; a sample runs by default, the whole table under ``slow``.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from doit.cmdparse import CmdOption, CmdParse, CmdParseError

from continuity.argv import argv_problem, environment_problem, front_door, selection_problem
from continuity.commands.lookup_sizing import LookupBudgetRequest, legacy_arguments
from continuity.commands.units_request import UnitsRequest, parse_repeats
from continuity.errors import UsageError
from continuity.outputs import check_new_directory, usable_directory, usable_out_path
from continuity.plan.estimate import check_cost_limit
from continuity.plan.limits import MAX_REPEATS
from continuity.plan.plan import build_plan
from continuity.store import Store, collect_garbage
from continuity.traces.keys import MAX_SEEDS, parse_seeds
from rules.aggregate import task_aggregate, task_score
from rules.calibrate import task_calibrate
from rules.checkpoints import task_checkpoints
from rules.contract import task_offline_contract
from rules.estimate import task_estimate
from rules.lookup import task_lookup_budget
from rules.params import (
    DirOption,
    FloatOption,
    IntOption,
    NewDirOption,
    SeedsOption,
    TaskSpec,
)
from rules.plan import task_dry_run, task_plan
from rules.store import task_gc, task_verify
from rules.traces import task_traces
from rules.units import task_units
from tests.conftest import REPO

TASKS: dict[str, Callable[[], TaskSpec]] = {
    "aggregate": task_aggregate,
    "calibrate": task_calibrate,
    "checkpoints": task_checkpoints,
    "dry_run": task_dry_run,
    "estimate": task_estimate,
    "gc": task_gc,
    "lookup_budget": task_lookup_budget,
    "offline_contract": task_offline_contract,
    "plan": task_plan,
    "score": task_score,
    "traces": task_traces,
    "units": task_units,
    "verify": task_verify,
}
CODED = re.compile(r"^[a-z][a-z0-9_]*(:[A-Za-z0-9_.-]+)?: .+ \(at .+\)$")


def coded_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if CODED.match(line.strip())]


def refuse(kind: Any, value: str) -> UsageError:
    """The UsageError a checking type's refusal carries (parsed back from its line)."""
    with pytest.raises(ValueError) as err:
        kind(value)
    (line,) = str(err.value).splitlines()
    assert CODED.match(line), line
    code, rest = line.split(": ", 1)
    message, location = rest.rsplit(" (at ", 1)
    return UsageError(message, code=code, location=location[:-1])


# -- seeds and repeats: arithmetic before any list ----------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "1-99999999999",
        "1-999999999999",
        "0-" + "9" * 30,
        "9" * 5000,
        "9-1",
        "1-2,3-1",
        "x",
        "1--2",
        "\u0661\u0662",  # Arabic-Indic digits: int() would accept them
        "1-600",
        "1-300,301-600",
        ",",
        "1" * 5000 + "-2",
    ],
)
def test_seed_ranges_are_refused_before_any_list_is_built(text: str) -> None:
    started = time.perf_counter()
    with pytest.raises(UsageError) as err:
        parse_seeds(text)
    assert (err.value.code, err.value.location) == ("seeds_invalid", "--seeds")
    assert time.perf_counter() - started < 0.5


def test_seed_count_limit_is_exact() -> None:
    assert len(parse_seeds(f"1-{MAX_SEEDS}")) == MAX_SEEDS
    with pytest.raises(UsageError):
        parse_seeds(f"1-{MAX_SEEDS + 1}")
    assert parse_seeds("101-103,107") == (101, 102, 103, 107)


@pytest.mark.parametrize("text", ["1-999999999", "0", "101", "2-1", "x", "1-99999999999"])
def test_repeat_selection_is_checked(text: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_repeats(UnitsRequest(repeat=text))
    assert (err.value.code, err.value.location) == ("repeat_unknown", "--repeat")
    assert refuse(SeedsOption("--repeat", code="repeat_unknown", maximum=MAX_REPEATS), text).code
    assert parse_repeats(UnitsRequest(repeat="1-2")) == [1, 2]


# -- the checking types ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["0", "-1", "101", "1000000000", "abc", "1.5", "nan", "9" * 5000, "1e3", "\u0661"]
)
def test_repeats_are_one_to_the_maximum(value: str) -> None:
    error = refuse(IntOption("--repeats", 1, MAX_REPEATS, code="plan_invalid"), value)
    assert (error.code, error.location) == ("plan_invalid", "--repeats")


def test_repeats_in_range_pass_and_build_plan_has_the_same_bounds() -> None:
    assert IntOption("--repeats", 1, MAX_REPEATS)(" 100 ") == 100
    for repeats in (0, MAX_REPEATS + 1, 10**9):
        with pytest.raises(UsageError) as err:
            build_plan(repeats=repeats)
        assert (err.value.code, err.value.location) == ("plan_invalid", "--repeats")
    with pytest.raises(UsageError) as err:
        build_plan(probe_limit=0)
    assert (err.value.code, err.value.location) == ("plan_invalid", "--probe-limit")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "abc", "1e999", "NaN"])
def test_cost_limit_is_finite_and_positive(value: str) -> None:
    error = refuse(
        FloatOption("--cost-limit", 0.0, inclusive=False, code="cost_limit_invalid"), value
    )
    assert (error.code, error.location) == ("cost_limit_invalid", "--cost-limit")


@pytest.mark.parametrize("limit", [math.nan, math.inf, 0.0, -1.0])
def test_check_cost_limit_refuses_a_limit_that_disables_the_guard(limit: float) -> None:
    with pytest.raises(UsageError) as err:
        check_cost_limit(None, limit)  # type: ignore[arg-type]  # refused before it is read
    assert err.value.code == "cost_limit_invalid"


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "-0.001", "x"])
def test_grace_is_finite_and_not_negative(value: str) -> None:
    error = refuse(FloatOption("--grace", 0.0, inclusive=True), value)
    assert (error.code, error.location) == ("option_invalid", "--grace")
    assert FloatOption("--grace", 0.0, inclusive=True)("0") == 0.0


@pytest.mark.parametrize(
    ("grace", "keep", "location"),
    [
        (math.nan, 20, "--grace"),
        (-1.0, 20, "--grace"),
        (math.inf, 20, "--grace"),
        (1.0, -1, "--keep-plans"),
    ],
)
def test_collect_garbage_refuses_before_reading(
    store: Store, grace: float, keep: int, location: str
) -> None:
    young = store.put_blob(b"fresh from a concurrent build")
    with pytest.raises(UsageError) as err:
        collect_garbage(store, keep_plans=keep, grace_seconds=grace)
    assert (err.value.code, err.value.location) == ("option_invalid", location)
    assert store.has_object(young.digest)


def test_probe_limit_zero_is_refused_not_unlimited() -> None:
    error = refuse(IntOption("--probe-limit", 1, 10_000, code="plan_invalid"), "0")
    assert (error.code, error.location) == ("plan_invalid", "--probe-limit")


# -- store and output roots -----------------------------------------------------------------


def bad_directories(tmp_path: Path) -> list[str]:
    afile = tmp_path / "afile"
    afile.write_text("x")
    return ["/proc/nope", "/dev/null/x", str(afile), str(afile / "under"), "a\x00b"]


def test_store_and_out_must_be_usable_directories(tmp_path: Path) -> None:
    for path in bad_directories(tmp_path):
        with pytest.raises(UsageError) as err:
            Store(path)
        assert err.value.code == "store_path_invalid"
        with pytest.raises(UsageError) as err:
            usable_out_path(path)
        assert err.value.code == "out_path_invalid"
        assert path.split("\x00")[0] in err.value.location or "\x00" in path
        for kind, code in ((DirOption("--store", "store_path_invalid"), "store_path_invalid"),):
            error = refuse(kind, path)
            assert (error.code, error.location) == (code, "--store")
            assert path.split("\x00")[0] in error.message or "\x00" in path
    assert usable_directory(tmp_path / "new" / "dir", code="out_path_invalid").is_dir()


def test_an_unusable_environment_root_is_refused(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    found = environment_problem({"CONTINUITY_STORE": "/dev/null/x"})
    assert found is not None and found.code == "store_path_invalid"
    found = environment_problem({"CONTINUITY_OUT": str(afile)})
    assert found is not None and found.code == "out_path_invalid"
    assert environment_problem({"CONTINUITY_OUT": str(tmp_path / "later")}) is None
    assert not (tmp_path / "later").exists()  # an output root is only checked, not created
    assert environment_problem({"CONTINUITY_STORE": ""}) is None  # empty: the default


# -- lookup_budget: every argument before any replay ----------------------------------------


def test_lookup_budget_checks_its_arguments_first(tmp_path: Path) -> None:
    exists = tmp_path / "exists"
    exists.mkdir()
    cases: list[tuple[dict[str, str], str]] = [
        ({"output": str(tmp_path / "p"), "seeds": "9-1", "suites": "hard"}, "seeds_invalid"),
        ({"output": str(exists)}, "lookup_output_exists"),
        ({"output": "/proc/nope/x"}, "lookup_output_invalid"),
        ({"output": "/dev/null/x"}, "lookup_output_invalid"),
        ({"output": str(tmp_path / "p"), "suites": "hard,nope"}, "suite_unknown"),
        ({"output": str(tmp_path / "p"), "store": "/dev/null/x"}, "store_path_invalid"),
        ({}, "lookup_output_required"),
    ]
    for options, code in cases:
        started = time.perf_counter()
        with pytest.raises(UsageError) as err:
            legacy_arguments(LookupBudgetRequest.of(options))
        assert err.value.code == code, options
        assert time.perf_counter() - started < 2
    assert not (tmp_path / "p").exists()  # the writability check leaves nothing behind
    error = refuse(
        NewDirOption("--output", exists="lookup_output_exists", invalid="lookup_output_invalid"),
        str(exists),
    )
    assert (error.code, error.location) == ("lookup_output_exists", "--output")
    assert (
        check_new_directory(tmp_path / "a" / "b", exists="e", invalid="i") == tmp_path / "a" / "b"
    )
    assert not (tmp_path / "a").exists()


def test_checks_of_new_directories_under_one_missing_parent_do_not_race(tmp_path: Path) -> None:
    """Several checks at once (parallel test workers, two dry runs) under a parent none of
    them finds: each makes and removes its own directory, and one removing the shared
    parent never fails another (it used to: "cannot create it: No such file or
    directory")."""
    parent = tmp_path / "runs"
    errors: list[BaseException] = []

    def check(name: str) -> None:
        try:
            for round_ in range(40):
                check_new_directory(parent / f"{name}-{round_}", exists="e", invalid="i")
        except BaseException as exc:  # collected: a thread's failure fails the test
            errors.append(exc)

    threads = [threading.Thread(target=check, args=(f"t{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert not parent.exists() or not any(parent.iterdir())  # nothing of theirs is left


# -- the argv front door ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "location"),
    [
        (["units", "--suite", ""], "--suite"),
        (["units", "--suite="], "--suite"),
        (["traces", "--seeds", "  "], "--seeds"),
        (["gc", "--grace="], "--grace"),
        (["", "list"], "argument 1"),
        (["plan", "--reader", "a:b", "--judge", ""], "--judge"),
    ],
)
def test_empty_values_are_refused_before_doits_parser(args: list[str], location: str) -> None:
    problem = argv_problem(args)
    assert problem is not None and (problem.code, problem.location) == ("option_empty", location)


def test_front_door_exits_2_only_on_doits_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert argv_problem(["units", "--suite", "hard", "--seeds=101"]) is None
    front_door(["pytest", "-k", ""], environ={})  # not doit: nothing checked
    with pytest.raises(SystemExit) as exit_:
        front_door(["/usr/bin/doit", "units", "--suite", ""], environ={})
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("option_empty: ")


# -- doit's own usage errors, coded (continuity.argv.selection_problem) ----------------------

PARAMS = {name: build()["params"] for name, build in TASKS.items()}
PARAMS["units:sub"] = []  # a subtask: selectable by name, takes no options


@pytest.mark.parametrize(
    ("args", "code", "location", "text"),
    [
        (["units", "--nope"], "option_unknown", "--nope", "units has no option --nope; its "),
        (["units", "--suite", "original", "--nope=2"], "option_unknown", "--nope", "--suite,"),
        (["units", "-z"], "option_unknown", "-z", "units has no option -z"),
        (["units", "--repair"], "option_unknown", "--repair", "--probe-limit"),
        (["units", "--re"], "option_unknown", "--re", "start of more than one option"),
        # getopt would take a unique prefix for the option: never abbreviated
        (["units", "--suit", "hard"], "option_unknown", "--suit", "did you mean --suite?"),
        (["verify", "--rep"], "option_unknown", "--rep", "options are never abbreviated"),
        (["aggregate", "--fail", "60"], "option_unknown", "--fail", "--fail-under?"),
        (["gc", "--dry-run=1"], "option_value_unexpected", "--dry-run", "is a flag"),
        (["verify", "--repair=yes"], "option_value_unexpected", "--repair", "takes no value"),
        (["units", "--suite"], "option_value_missing", "--suite", "--suite of units needs"),
        (["units", "--suite", "original", "gc", "--nope"], "option_unknown", "--nope", "gc has"),
        (["units:sub", "--x"], "option_unknown", "--x", "it takes no options"),
        (["nosuchtask"], "task_unknown", "nosuchtask", "tasks: aggregate, calibrate"),
        (["unit"], "task_unknown", "unit", "did you mean units?"),
        (["gc", "--dry-run", "stray"], "task_unknown", "stray", "'stray' is no task"),
    ],
)
def test_doits_usage_errors_are_coded(args: list[str], code: str, location: str, text: str) -> None:
    problem = selection_problem(args, PARAMS)
    assert problem is not None, args
    assert (problem.code, problem.location) == (code, location)
    assert text in problem.message
    if code == "task_unknown":
        assert "units:sub" not in problem.message  # subtasks are not offered


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["units", "--suite", "original", "--probe-limit", "2"],
        ["units", "--suite=original", "--real", "aggregate", "--run", "r"],
        ["verify", "--repair"],
        ["units", "--trace", "--odd-name"],  # a value that starts with dashes
        ["gc", "--dry-run", "--keep-plans", "3", "verify"],
        ["g*"],  # a pattern: doit expands it
        ["units:sub"],
        ["out/report.json"],  # a target
    ],
)
def test_selections_doit_accepts_pass(args: list[str]) -> None:
    assert selection_problem(args, PARAMS, targets=["out/report.json"]) is None


def doit_cli(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CONTINUITY_STORE": str(tmp_path / "store"),
        "CONTINUITY_OUT": str(tmp_path / "out"),
    }
    env.pop("CI", None)
    return subprocess.run(
        [sys.executable, "-m", "doit", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("units", "--nope"), "option_unknown"),
        (("run", "verify", "--repair=yes"), "option_value_unexpected"),
        (("-n", "2", "gc", "--keep-plans"), "option_value_missing"),
        (("nosuchtask",), "task_unknown"),
    ],
)
def test_doits_usage_errors_are_one_coded_line_through_the_cli(
    tmp_path: Path, args: tuple[str, ...], code: str
) -> None:
    result = doit_cli(tmp_path, *args)
    assert result.returncode == 2, result
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result
    assert result.stderr.startswith(f"{code}: ") and coded_lines(result.stderr), result.stderr
    assert not (tmp_path / "out").exists()  # refused before any work


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (("list",), "verify "),
        (("help", "units"), "--probe-limit"),
        (("--version",), "0."),
        (("-n", "2", "gc", "--dry-run"), "gc would remove"),
        (("gc", "--dry-run", "verify"), "verify report at"),
        (("info", "gc"), "gc"),
        (("forget", "gc"), "forgetting gc"),
        (("clean", "gc"), ""),
    ],
)
def test_doits_own_commands_still_work(tmp_path: Path, args: tuple[str, ...], expect: str) -> None:
    result = doit_cli(tmp_path, *args)
    assert result.returncode in (0, 1) and expect in result.stdout, result  # info: 1 = stale
    assert not coded_lines(result.stderr) and "Traceback" not in result.stderr


def test_a_real_run_refused_for_its_out_leaves_no_directory_in_the_checkout(
    tmp_path: Path,
) -> None:
    credentials = tmp_path / "credentials.json"
    credentials.write_text("{}")
    plan = ("--suite", "original", "--provider", "openai-chat", "--credentials", str(credentials))
    dry = doit_cli(tmp_path, "dry_run", *plan)
    assert dry.returncode == 0, dry
    (digest,) = re.findall(r"confirmation digest: ([0-9a-f]{64})", dry.stdout)
    inside = REPO / f".refused-out-{os.getpid()}-{time.monotonic_ns()}"
    try:
        real = doit_cli(
            tmp_path,
            "units",
            "--real",
            *plan,
            "--confirm-plan",
            digest,
            "--out",
            str(inside / "run"),
        )
        assert real.returncode != 0
        assert "output_inside_checkout: " in real.stdout + real.stderr, real
        assert not inside.exists()  # checked at parse time and by the guard, never created
    finally:
        shutil.rmtree(inside, ignore_errors=True)


def test_doits_own_command_options_are_still_doits(tmp_path: Path) -> None:
    result = doit_cli(tmp_path, "forget", "--nope")  # a command's options: doit's parser
    assert result.returncode == 3 and "Error parsing Command" in result.stderr


# -- every task's checking types, through doit's own parser (in process) ---------------------

_BAD_INT = ["0", "-1", "-99999999999999999999", "abc", "1.5", "nan", "inf", "9" * 40, "0x10", "1e3"]
_BAD_FLOAT = ["nan", "inf", "-inf", "-1", "abc", "1e999", "NaN", "--1", "0x1p", "-nan"]
_BAD_SEEDS = ["9-1", "1-99999999999", "1-" + "9" * 40, "x", "1,,2", "-5", "1-2-3", "\u0663"]


def _bad_dirs(tmp: Path) -> list[str]:
    afile = tmp / "afile"
    return ["/proc/nope", "/dev/null/x", str(afile), str(afile / "x")]


def parse_cases(tmp: Path) -> Iterator[tuple[str, str, str]]:
    """(task, option, value): every checking-type option of every task, bad values."""
    for task, build in sorted(TASKS.items()):
        for spec in build()["params"]:
            kind, option = spec["type"], "--" + spec["long"]
            if isinstance(kind, IntOption):
                values = [v for v in _BAD_INT if v != "0" or kind.minimum > 0]
                values += [str(kind.maximum + 1), str(kind.minimum - 1)]
            elif isinstance(kind, FloatOption):
                values = _BAD_FLOAT
            elif isinstance(kind, SeedsOption):
                values = _BAD_SEEDS
            elif isinstance(kind, DirOption):
                values = _bad_dirs(tmp)
            elif isinstance(kind, NewDirOption):
                values = [str(tmp), "/proc/nope/x", "/dev/null/x"]
            else:
                continue
            for value in values:
                yield task, option, value


def test_every_checking_option_refuses_with_a_coded_line_in_doits_parser(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    cases = list(parse_cases(tmp_path))
    assert len(cases) >= 200
    options_seen = set()
    for task, option, value in cases:
        params = [CmdOption(dict(spec)) for spec in TASKS[task]()["params"]]
        with pytest.raises(CmdParseError) as err:
            CmdParse(params).parse([option, value])
        lines = coded_lines(str(err.value))
        assert lines and lines[0].endswith(f"(at {option})"), (task, option, value, str(err.value))
        options_seen.add((task, option))
    # Every numeric and path option of every task is covered.
    assert {
        "--repeats",
        "--probe-limit",
        "--cost-limit",
        "--grace",
        "--keep-plans",
        "--store",
        "--out",
        "--seeds",
        "--repeat",
        "--jobs",
        "--output",
    } <= {o for _, o in options_seen}


# -- the real doit command line ---------------------------------------------------------------


# doit's own usage errors (continuity.argv.selection_problem), for every task.
USAGE_CASES: list[tuple[str, ...]] = [
    *((task, "--no-such-option") for task in sorted(TASKS)),
    ("units", "-z"),
    ("units", "--suite", "original", "--nope=1"),
    ("verify", "--repair=yes"),
    ("gc", "--dry-run=1"),
    ("aggregate", "--run"),
    ("units", "--suite", "original", "gc", "--nope"),
    ("run", "nosuchtask"),
    ("run", "unit"),
    ("run", "traces", "--suite", "original", "stray"),
]


# Refusals named one by one (beside the generated table): every default run checks them.
NAMED_CASES: list[tuple[str, ...]] = [
    ("traces", "--suite", "tiny"),
    ("units", "--suite", "nope"),
    ("units", "--arms", "no-such-arm"),
    ("plan", "--provider", "carrier-pigeon"),
    ("plan", "--probe-mode", "psychic"),
    ("plan", "--reader", "nocolon"),
    ("plan", "--judge", ":x"),
    ("plan", "--base-url", "http://127.0.0.1:9"),
    ("plan", "--lookup-reader", "alternate"),
    ("aggregate", "--scorer", "nope"),
    ("aggregate", "--run-dir", "/proc/nope"),
    ("score", "--run-dir", "/proc/nope"),
    ("traces", "--file", "/proc/nope"),
    ("traces", "--file", "/dev/null"),
    ("dry_run", "--pricing", "/proc/nope"),
    ("units", "--provider", "anthropic"),
    ("estimate", "--real"),
    ("lookup_budget", "--seeds", "101"),
    ("calibrate", "--cases", "/proc/nope"),
    ("calibrate", "--provider", "carrier-pigeon"),
    ("units", "--policy", "/proc/nope", "--probe-mode", "lookup-allowed-v1"),
]


def cli_cases() -> list[tuple[str, ...]]:
    """(args...) of doit calls that must be refused, generated over every task: up to four
    bad values per checking option and empty values (``--opt ''`` and ``--opt=``) for three
    options of each task; then the named refusals (values only a task's action can refuse)
    and doit's usage errors."""
    cases: list[tuple[str, ...]] = []
    tmp = Path("/tmp/continuity-fuzz-placeholder")  # stands for the test's tmp_path
    by_option: dict[tuple[str, str], list[str]] = {}
    for task, option, value in parse_cases(tmp):
        by_option.setdefault((task, option), []).append(value.replace(str(tmp), "{tmp}"))
    for (task, option), values in by_option.items():
        step = max(1, len(values) // 4)
        cases += [(task, option, value) for value in values[::step][:4]]
    for task, build in sorted(TASKS.items()):
        named = ["--" + spec["long"] for spec in build()["params"] if spec["type"] is not bool]
        for index, option in enumerate(named[:3]):
            cases.append((task, option, "") if index % 2 == 0 else (task, f"{option}="))
    return cases + NAMED_CASES + USAGE_CASES


CLI_CASES = cli_cases()
# The default sample: every fourth call of the table, so every task appears, and every
# named refusal; the rest run as a CI variant.
SAMPLE = CLI_CASES[::4] + [c for c in NAMED_CASES + USAGE_CASES if c not in CLI_CASES[::4]]


def run_refused(tmp_path: Path, args: tuple[str, ...]) -> None:
    (tmp_path / "afile").write_text("x")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = doit_cli(tmp_path, *argv, timeout=20)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, (argv, output)
    assert result.returncode != 0, (argv, output)
    assert coded_lines(output), (argv, output)
    if result.returncode == 2:  # refused before any task ran: the coded line is all
        assert len(output.splitlines()) == 1, (argv, output)


@pytest.mark.parametrize("args", SAMPLE, ids=lambda c: " ".join(c)[:60])
def test_cli_refuses_malformed_options_sample(tmp_path: Path, args: tuple[str, ...]) -> None:
    run_refused(tmp_path, args)


@pytest.mark.variant  # the rest of the table: CI runs it (-m variant)
@pytest.mark.parametrize(
    "args", [c for c in CLI_CASES if c not in SAMPLE], ids=lambda c: " ".join(c)[:60]
)
def test_cli_refuses_malformed_options_full(tmp_path: Path, args: tuple[str, ...]) -> None:
    run_refused(tmp_path, args)


def test_cli_table_is_large_enough() -> None:
    assert len(CLI_CASES) >= 200 and 40 <= len(SAMPLE) <= 130
    assert {c[0] for c in SAMPLE if c[0] != "run"} == set(TASKS)
    assert set(USAGE_CASES) <= set(CLI_CASES)


def test_cli_refuses_an_unusable_environment_store(tmp_path: Path) -> None:
    for variable, code in (
        ("CONTINUITY_STORE", "store_path_invalid"),
        ("CONTINUITY_OUT", "out_path_invalid"),
    ):
        env = {**os.environ, variable: "/dev/null/x"}
        result = subprocess.run(
            [sys.executable, "-m", "doit", "plan"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert result.stderr.startswith(f"{code}: "), result.stderr


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_a_tasks_help_flag_prints_its_options_with_defaults_and_exits_0(
    tmp_path: Path, flag: str
) -> None:
    result = doit_cli(tmp_path, "units", "--suite", "hard", flag)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "doit units [options]" and "CmdOption" not in result.stdout
    assert lines[2].startswith("Run probe units")
    suite = next(line for line in lines if line.strip().startswith("--suite=VALUE"))
    choices = "original | hard | hard-distractors | smoke (one short trace) (default: original)"
    assert choices in suite
    assert any(line.split()[0] == "--real" for line in lines if line.strip())  # a flag
    assert not (tmp_path / "store" / "objects").exists()  # nothing ran


def test_help_names_the_task_it_follows(tmp_path: Path) -> None:
    result = doit_cli(tmp_path, "traces", "aggregate", "--help")
    assert result.returncode == 0 and result.stdout.startswith("doit aggregate [options]")
    assert "(default: the most recent run)" in result.stdout


def test_help_prints_the_whole_description_not_doits_first_line(tmp_path: Path) -> None:
    result = doit_cli(tmp_path, "dry_run", "--help")
    assert result.returncode == 0, result.stderr
    description = result.stdout.split("\n\n")[1:3]
    assert description[0].endswith("(no network).")  # a whole first sentence
    assert "exact command that runs the plan" in description[1]  # and what follows it


def test_every_tasks_first_doc_line_is_a_whole_sentence() -> None:
    """doit list shows only a task docstring's first line: it must not stop mid-sentence."""
    import inspect

    import dodo

    for name in dodo.__all__:
        if name.startswith("task_"):
            first = (inspect.getdoc(getattr(dodo, name)) or "").splitlines()[0]
            assert first.endswith((".", ")", ".)")), f"{name}: {first!r}"
