"""``doit qualify`` refuses two selectors at once, and ``--list`` or ``--report`` beside
a selector they would quietly drop, with ``qualify_selector_invalid`` before anything
is read or run (issue 36, item 9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from continuity.errors import UsageError
from continuity.qualify.select import check_request
from tests.graph.test_dodo import doit


@pytest.mark.parametrize(
    ("request_", "location"),
    [
        ({"listing": True, "case": "kill-runner", "every": True}, "--list,--case,--all"),
        ({"listing": True, "case": "kill-runner"}, "--list,--case"),
        ({"listing": True, "suite": "continuity"}, "--list,--suite"),
        ({"listing": True, "group": "slow", "case_id": "x"}, "--list,--group,--id"),
        ({"case": "kill-runner", "every": True}, "--case,--all"),
        ({"group": "slow", "suite": "continuity"}, "--group,--suite"),
        ({"report": True, "listing": True}, "--report,--list"),
        ({"report": True, "group": "slow"}, "--report,--group"),
    ],
)
def test_two_things_at_once_are_refused(request_: dict[str, Any], location: str) -> None:
    with pytest.raises(UsageError) as caught:
        check_request(**request_)
    assert (caught.value.code, caught.value.location) == ("qualify_selector_invalid", location)


@pytest.mark.parametrize(
    "request_",
    [
        {},
        {"listing": True},
        {"listing": True, "group": "reliability"},  # --group filters the listing
        {"report": True},
        {"case": "kill-runner"},
        {"every": True},
    ],
)
def test_one_thing_at_a_time_passes(request_: dict[str, Any]) -> None:
    check_request(**request_)


def test_doit_qualify_refuses_a_listing_with_two_selectors(tmp_path: Path) -> None:
    result = doit(tmp_path, "qualify", "--case", "kill-runner", "--list", "--all", check=False)
    text = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in text
    assert "qualify_selector_invalid:" in text and "(at --list,--case,--all)" in text
    assert not (tmp_path / "out" / "qualify").exists()  # nothing ran
