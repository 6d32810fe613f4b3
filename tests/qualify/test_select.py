"""Selecting qualification cases: explicit-only groups, fail-closed selection and
registration, and each plan's own denominator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuity.errors import UsageError
from continuity.qualify.cases import CATALOGUE, Case
from continuity.qualify.select import read_registration, select_cases


def _case(name: str, group: str, plan: str) -> Case:
    return Case(name=name, group=group, plan=plan, description=name, fault="f", assertions=())


# a fictional catalogue: one explicit-only group, two broad groups in two plans
CASES = (
    _case("a", "reliability", "plan-r"),
    _case("b", "reliability", "plan-r"),
    _case("c", "ci", "plan-ci"),
    _case("d", "nightly", "plan-n"),
)


def _register(folder: Path, plan: str, cases: list[str]) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"{plan}.json").write_text(json.dumps({"plan": plan, "cases": cases}))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    _register(tmp_path, "plan-r", ["continuity.reliability.a", "continuity.reliability.b"])
    _register(tmp_path, "plan-ci", ["continuity.ci.c"])
    _register(tmp_path, "plan-n", ["continuity.nightly.d"])
    return tmp_path


def _select(folder: Path, **selector: object) -> object:
    return select_cases(registrations=folder, catalogue=CASES, **selector)  # type: ignore[arg-type]


def _refused(folder: Path, **selector: object) -> UsageError:
    with pytest.raises(UsageError) as caught:
        _select(folder, **selector)
    return caught.value


def test_explicit_only_groups_are_reached_by_name_case_or_id_only(folder: Path) -> None:
    full = select_cases(registrations=folder, catalogue=CASES, group="reliability")
    assert [c.name for c in full.cases] == ["a", "b"] and full.scope == "full"
    one = select_cases(registrations=folder, catalogue=CASES, case="a")
    assert one.scope == "partial 1/2"  # its plan keeps its own denominator
    by_id = select_cases(registrations=folder, catalogue=CASES, case_id="continuity.reliability.b")
    assert [c.name for c in by_id.cases] == ["b"] and by_id.scope == "partial 1/2"


def test_broad_selectors_never_pick_an_explicit_only_group(folder: Path) -> None:
    # --all and --suite see the two broad groups, which are two plans: refused
    assert _refused(folder, every=True).code == "qualify_plans_mixed"
    assert _refused(folder, suite="continuity").code == "qualify_plans_mixed"
    only_ci = (_case("a", "reliability", "plan-r"), _case("c", "ci", "plan-ci"))
    chosen = select_cases(registrations=folder, catalogue=only_ci, every=True)
    assert [c.name for c in chosen.cases] == ["c"]  # never "a"


def test_the_shipped_catalogue_runs_nothing_under_all(folder: Path) -> None:
    with pytest.raises(UsageError) as caught:
        select_cases(every=True)  # every shipped group is explicit-only
    assert caught.value.code == "qualify_selection_empty"
    shipped = select_cases(group="reliability")
    assert shipped.scope == "full" and {c.plan for c in shipped.cases} == {
        c.plan for c in CATALOGUE if c.group == "reliability"
    }


@pytest.mark.parametrize(
    ("selector", "code"),
    [
        ({"group": "nothing"}, "qualify_selection_empty"),
        ({"case": "z"}, "qualify_selection_empty"),
        ({"suite": "another-suite"}, "qualify_selection_empty"),
        ({}, "qualify_selector_invalid"),
        ({"group": "reliability", "case": "a"}, "qualify_selector_invalid"),
    ],
)
def test_a_selection_that_matches_nothing_or_is_ambiguous_fails_closed(
    folder: Path, selector: dict[str, object], code: str
) -> None:
    assert _refused(folder, **selector).code == code


@pytest.mark.parametrize(
    ("cases", "plan", "code"),
    [
        (None, "plan-r", "qualify_unregistered"),  # no registration file
        (["continuity.reliability.a"], "plan-r", "case_mismatch"),  # partial
        (
            ["continuity.reliability.a", "continuity.reliability.a"],
            "plan-r",
            "qualify_unregistered",
        ),
        (
            ["continuity.reliability.a", "continuity.reliability.b", "continuity.ci.c"],
            "plan-r",
            "case_mismatch",
        ),
        (
            ["continuity.reliability.a", "continuity.reliability.b"],
            "plan-x",
            "qualify_unregistered",
        ),
    ],
)
def test_an_incomplete_or_wrong_registration_fails_before_anything_runs(
    tmp_path: Path, cases: list[str] | None, plan: str, code: str
) -> None:
    if cases is not None:
        (tmp_path / "plan-r.json").write_text(json.dumps({"plan": plan, "cases": cases}))
    with pytest.raises(UsageError) as caught:
        read_registration("plan-r", tmp_path, CASES)
    assert caught.value.code == code
    with pytest.raises(UsageError):
        select_cases(registrations=tmp_path, catalogue=CASES, group="reliability")


def test_the_shipped_registrations_are_complete() -> None:
    for plan in sorted({c.plan for c in CATALOGUE}):
        found = read_registration(plan)
        assert sorted(found.cases) == sorted(c.id for c in CATALOGUE if c.plan == plan)
