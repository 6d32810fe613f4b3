"""Selecting qualification cases, failing closed.

`select_cases` takes exactly one selector:

- ``group``: every case of that group (the only way, besides ``case``/``id``, to reach
  an explicit-only group);
- ``case``: the one case of that name; ``id``: the one case of that full id;
- ``suite`` / ``all``: every case of the suite / catalogue **outside** the explicit-only
  groups (`continuity.qualify.cases.EXPLICIT_ONLY`).

It refuses, with a code and before anything runs:

- ``qualify_selector_invalid``: no selector, or two at once (`check_request` also
  refuses ``--list`` beside a selector other than ``--group``, which filters the
  listing, and ``--report`` beside anything: a command never quietly drops an option);
- ``qualify_selection_empty``: the selector matches nothing;
- ``qualify_plans_mixed``: the cases come from two plans;
- ``qualify_unregistered``: the plan's registration (``fixtures/qualify/<plan>.json``)
  is missing, unreadable, names another plan or lists a case twice;
- ``case_mismatch``: the registration's cases are not exactly the catalogue's cases of
  that plan (one missing, one extra).

A selection keeps its plan's own denominator: only all N registered cases make a "full"
verdict; fewer is "partial n/N".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from continuity.errors import UsageError
from continuity.inputs import REGISTRATION_MAX_BYTES, read_user_bytes
from continuity.qualify.cases import CATALOGUE, EXPLICIT_ONLY, REGISTRATIONS, SUITE, Case

__all__ = [
    "Registration",
    "Selection",
    "check_request",
    "listing",
    "read_registration",
    "select_cases",
]


class Registration(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    plan: str
    cases: list[str]


@dataclass(frozen=True)
class Selection:
    plan: str
    cases: tuple[Case, ...]
    registered: int  # the plan's denominator N

    @property
    def scope(self) -> str:
        """``full`` for every registered case, else ``partial n/N``."""
        n = len(self.cases)
        return "full" if n == self.registered else f"partial {n}/{self.registered}"


def read_registration(
    plan: str, folder: Path = REGISTRATIONS, catalogue: Sequence[Case] = CATALOGUE
) -> Registration:
    """The plan's registration, checked complete against the catalogue.

    Raises:
        UsageError: ``qualify_unregistered``, ``case_mismatch``.
        InputError: ``input_not_a_file``, ``input_too_large`` (`read_user_bytes`).
    """
    path = folder / f"{plan}.json"
    try:
        data = read_user_bytes(path, limit=REGISTRATION_MAX_BYTES, what="the registration")
        found = msgspec.json.decode(data, type=Registration)
    except (OSError, msgspec.MsgspecError) as exc:
        raise UsageError(
            f"plan {plan} has no readable registration ({exc})",
            code="qualify_unregistered",
            location=str(path),
        ) from None
    if found.plan != plan or len(set(found.cases)) != len(found.cases):
        raise UsageError(
            "the registration names another plan or lists a case twice",
            code="qualify_unregistered",
            location=str(path),
        )
    planned = {c.id for c in catalogue if c.plan == plan}
    if set(found.cases) != planned:
        missing = sorted(planned - set(found.cases)) or sorted(set(found.cases) - planned)
        raise UsageError(
            f"the registration's cases are not the plan's (first: {missing[0]})",
            code="case_mismatch",
            location=str(path),
        )
    return found


def _given(
    *, group: str | None, case: str | None, case_id: str | None, suite: str | None, every: bool
) -> list[str]:
    """The selectors given, by their option names."""
    named = (
        ("--group", group),
        ("--case", case),
        ("--id", case_id),
        ("--suite", suite),
        ("--all", every or None),
    )
    return [name for name, value in named if value]


def check_request(
    *,
    listing: bool = False,
    report: bool = False,
    group: str | None = None,
    case: str | None = None,
    case_id: str | None = None,
    suite: str | None = None,
    every: bool = False,
) -> None:
    """Refuse a ``doit qualify`` that asks for two things at once (module doc), before
    anything is read or run.

    Raises:
        UsageError: ``qualify_selector_invalid``, located at the options given together.
    """
    given = _given(group=group, case=case, case_id=case_id, suite=suite, every=every)
    if report and (listing or given):
        together = ["--report", *(["--list"] if listing else []), *given]
        raise UsageError(
            "--report summarises every attempt; give it alone",
            code="qualify_selector_invalid",
            location=",".join(together),
        )
    others = [name for name in given if name != "--group"]
    if listing and others:
        raise UsageError(
            "--list lists the catalogue (with --group, that group's); it takes no "
            f"{' or '.join(others)}",
            code="qualify_selector_invalid",
            location=",".join(["--list", *given]),
        )
    if len(given) > 1:
        raise UsageError(
            "give exactly one of --group, --case, --id, --suite, --all",
            code="qualify_selector_invalid",
            location=",".join(given),
        )


def _matching(
    catalogue: Sequence[Case],
    *,
    group: str | None,
    case: str | None,
    case_id: str | None,
    suite: str | None,
    every: bool,
) -> tuple[list[Case], str]:
    given = _given(group=group, case=case, case_id=case_id, suite=suite, every=every)
    if len(given) != 1:
        raise UsageError(
            "give exactly one of --group, --case, --id, --suite, --all",
            code="qualify_selector_invalid",
            location=",".join(given) or "selector",
        )
    where = given[0]
    if group:
        return [c for c in catalogue if c.group == group], where
    if case:
        return [c for c in catalogue if c.name == case], where
    if case_id:
        return [c for c in catalogue if c.id == case_id], where
    broad = [c for c in catalogue if c.group not in EXPLICIT_ONLY]
    if suite:
        return [c for c in broad if suite == SUITE], where
    return broad, where


def select_cases(
    *,
    group: str | None = None,
    case: str | None = None,
    case_id: str | None = None,
    suite: str | None = None,
    every: bool = False,
    registrations: Path = REGISTRATIONS,
    catalogue: Sequence[Case] = CATALOGUE,
) -> Selection:
    """The selection (module doc).

    Raises:
        UsageError: ``qualify_selector_invalid``, ``qualify_selection_empty``,
            ``qualify_plans_mixed``, ``qualify_unregistered``, ``case_mismatch``.
    """
    cases, where = _matching(
        catalogue, group=group, case=case, case_id=case_id, suite=suite, every=every
    )
    if not cases:
        hint = " (explicit-only groups are chosen by name)" if suite or every else ""
        raise UsageError(
            f"the selector matches no case{hint}", code="qualify_selection_empty", location=where
        )
    plans = sorted({c.plan for c in cases})
    if len(plans) > 1:
        raise UsageError(
            f"the selection mixes plans {', '.join(plans)}: select from one",
            code="qualify_plans_mixed",
            location=where,
        )
    registration = read_registration(plans[0], registrations, catalogue)
    return Selection(plan=plans[0], cases=tuple(cases), registered=len(registration.cases))


def listing(cases: Sequence[Case]) -> list[str]:
    """One line per case: its id, its plan, whether it is explicit-only, what it does."""
    return [
        f"{c.id}  [{c.plan}{', explicit-only' if c.group in EXPLICIT_ONLY else ''}]  "
        f"{c.description}"
        for c in cases
    ]
