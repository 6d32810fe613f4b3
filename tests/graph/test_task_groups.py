"""``doit list`` and ``doit help`` show the tasks in ``dodo.py``'s groups (everyday work
first, comparisons of registered checkouts and the pilots last) with their names
unchanged; every task is in one group. ``doit help NAME`` refuses a name that is no task
or command as ``doit NAME`` does."""

from __future__ import annotations

from pathlib import Path

import dodo
from continuity.argv import grouped_listing
from continuity.commands.reference import task_names
from tests.graph.test_dodo import doit

TASKS = sorted(name.removeprefix("task_") for name in dodo.__all__ if name.startswith("task_"))
HEADINGS = [f"{heading}:" for heading, _ in dodo.TASK_GROUPS]


def test_every_task_is_in_exactly_one_group() -> None:
    grouped = [name for _, names in dodo.TASK_GROUPS for name in names]
    assert sorted(grouped) == TASKS  # none twice, none missing, none that is no task
    assert (
        HEADINGS[0] == "Everyday:" and HEADINGS[-1] == "Advanced: checkout comparisons and pilots:"
    )
    # the offline self-checks sit together, not among the checkout comparisons
    checks = dict(dodo.TASK_GROUPS)["Checks of the benchmark itself"]
    assert set(checks) == {"qualify", "ledger_smoke"}
    assert not any(
        "seed" in heading.lower() for heading in HEADINGS
    )  # a term doit list never defines


def test_doit_list_groups_the_tasks_and_keeps_their_names(tmp_path: Path) -> None:
    listing = doit(tmp_path, "list").stdout
    lines = listing.splitlines()
    assert [line for line in lines if line.endswith(":")] == HEADINGS
    expected = [name for _, names in dodo.TASK_GROUPS for name in names]
    assert task_names(listing) == expected  # the order docs/cli.md follows
    flat = doit(tmp_path, "list", "--sort", "name", "-q").stdout  # an option: doit's own list
    assert [line.split()[0] for line in flat.splitlines()] == TASKS
    everyday = lines[1 : lines.index("")]
    assert [line.split()[0] for line in everyday] == list(dodo.TASK_GROUPS[0][1])
    assert all(len(line.split(None, 1)) == 2 for line in everyday)  # name, then its doc


def test_doit_help_without_a_task_starts_with_the_grouped_list(tmp_path: Path) -> None:
    listing = doit(tmp_path, "list").stdout
    overview = doit(tmp_path, "help").stdout
    assert overview.startswith("doit TASK [options] runs a task; doit help TASK")
    assert listing in overview and "Commands" in overview.split(listing)[1]  # doit's own
    assert doit(tmp_path, "help", "units").stdout.startswith("doit units [options]")


def test_doit_help_of_an_unknown_name_is_refused_as_doit_name_is(tmp_path: Path) -> None:
    helped = doit(tmp_path, "help", "exprt", check=False)
    ran = doit(tmp_path, "exprt", check=False)
    assert (helped.returncode, ran.returncode) == (2, 2) and helped.stdout == ""
    assert helped.stderr.startswith(
        "task_unknown: 'exprt' is no task or command; did you mean export? "
    )
    assert ran.stderr.startswith(
        "task_unknown: 'exprt' is no task, command or target; did you mean export? "
    )
    tail = ran.stderr.split("did you mean export? ", 1)[1]
    assert helped.stderr.split("did you mean export? ", 1)[1] == tail  # same tasks, location
    assert helped.stderr.rstrip().endswith("(at exprt)") and helped.stderr.count("\n") == 1
    # a command is a name help knows: the nearest one is the hint
    assert "did you mean list? " in doit(tmp_path, "help", "lst", check=False).stderr
    assert "Commands" not in helped.stdout + helped.stderr
    commands = doit(tmp_path, "help", "list")  # help on a command and on a task still answer
    assert commands.returncode == 0 and "list tasks from dodo file" in commands.stdout


def test_a_task_no_group_names_is_listed_last_under_other() -> None:
    docs = {"units": "Run units.", "verify": "Check.", "new_task": "New."}
    text = grouped_listing([("Everyday", ["units", "no_such_task"]), ("Store", ["verify"])], docs)
    assert text.splitlines() == [
        "Everyday:", "units      Run units.", "", "Store:", "verify     Check.", "",
        "Other:", "new_task   New.",
    ]  # fmt: skip
