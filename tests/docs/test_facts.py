"""Facts the docs state about the code, read from the code: the next drift fails here."""

from __future__ import annotations

import re
from pathlib import Path

from continuity.roles.register import budget_path
from continuity.spend.contract import SEND_HEADERS

DOCS = Path(__file__).resolve().parents[2] / "docs"
NUMBERS = {"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13}


def _flat(page: str) -> str:
    return " ".join((DOCS / page).read_text(encoding="utf-8").split())


def test_the_registration_page_names_the_budget_a_registration_binds() -> None:
    text = _flat("comparisons.md")
    bound = re.search(r"the frozen budget[^;]*?\(`(fixtures/lookup/[^`]+)`", text)
    assert bound is not None, "comparisons.md no longer says which budget is bound"
    assert bound.group(1) == budget_path()


def test_the_spend_page_lists_the_headers_the_send_allows() -> None:
    text = _flat("spend.md")
    found = re.search(r"every header name against the (\w+) allowed \(([^;]*);", text)
    assert found is not None, "spend.md no longer lists the allowed headers"
    count, listing = found.groups()
    named = set(re.findall(r"`([a-z-]+)`", listing))
    assert named == set(SEND_HEADERS)
    assert NUMBERS[count] == len(SEND_HEADERS)
