"""Every dispatch on an expectation's category goes through `by_category`: each
dispatcher has a handler for every category it covers, and a category without one
fails loudly instead of falling through to a default."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import get_args

import msgspec
import pytest

import continuity
from continuity.traces.categories import (
    EXPECTATION_TYPES,
    by_category,
    by_category_of,
    unhandled_categories,
)
from continuity.traces.schema import (
    ALL_CATEGORIES,
    Expectation,
    Fact,
    RedactionExpectation,
)

_PACKAGE = Path(continuity.__file__).parent


def _dispatching_modules() -> list[str]:
    """Every module of the package that defines a category dispatcher."""
    found = []
    for path in sorted(_PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "@by_category" in text and path.name != "categories.py":
            parts = path.relative_to(_PACKAGE.parent).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_the_dispatching_modules_are_found() -> None:
    modules = _dispatching_modules()
    for expected in (
        "continuity.probes.judge",
        "continuity.probes.scoring",
        "continuity.probes.availability",
        "continuity.report.drilldown",
        "continuity.traces.distractors",
    ):
        assert expected in modules


def test_every_dispatcher_handles_every_category() -> None:
    for module in _dispatching_modules():
        importlib.import_module(module)
    # (this module's own dispatchers below are incomplete on purpose)
    assert [gap for gap in unhandled_categories() if gap.startswith("continuity.")] == []


def test_the_categories_are_the_expectation_union() -> None:
    assert get_args(Expectation) == EXPECTATION_TYPES
    tags = [str(kind.__struct_config__.tag) for kind in EXPECTATION_TYPES]
    assert sorted(tags) == sorted(ALL_CATEGORIES)


class _NewExpectation(msgspec.Struct, frozen=True, tag="new_category", tag_field="category"):
    answer: Fact


def test_a_category_without_a_handler_fails_loudly() -> None:
    @by_category
    def describe(expectation: Expectation) -> str:
        raise NotImplementedError

    @describe.register(RedactionExpectation)
    def _redaction(expectation: RedactionExpectation) -> str:
        return "secret"

    secret = RedactionExpectation(secret=Fact("s3cr3t", ("t1",)))
    assert describe(secret) == "secret"
    new = _NewExpectation(answer=Fact("x", ("t1",)))
    with pytest.raises(TypeError, match=r"describe has no handler for the _NewExpectation"):
        describe(new)
    # ... and the exhaustiveness check names every category it lacks.
    gaps = [gap for gap in unhandled_categories() if ".describe:" in gap]
    assert len(gaps) == len(EXPECTATION_TYPES) - 1
    assert not any(gap.endswith("RedactionExpectation") for gap in gaps)


def test_a_narrowed_dispatcher_is_checked_over_its_own_categories() -> None:
    @by_category_of((RedactionExpectation,))
    def secret_of(expectation: Expectation) -> str:
        raise NotImplementedError

    assert [gap for gap in unhandled_categories() if ".secret_of:" in gap] == [
        f"{__name__}.test_a_narrowed_dispatcher_is_checked_over_its_own_categories."
        "<locals>.secret_of: RedactionExpectation"
    ]

    @secret_of.register(RedactionExpectation)
    def _secret(expectation: RedactionExpectation) -> str:
        return expectation.secret.value

    assert not [gap for gap in unhandled_categories() if ".secret_of:" in gap]
