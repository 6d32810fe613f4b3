"""docs/errors.md is the error catalogue rendered, byte for byte.

After editing `continuity/errors/catalogue`, regenerate the page with
``python3 -m continuity.errors.catalogue > docs/errors.md``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from continuity.errors.catalogue import ENTRIES, Entry, class_tree, render_markdown

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "errors.md"
REGENERATE = "python3 -m continuity.errors.catalogue > docs/errors.md"


def test_the_page_is_the_rendered_catalogue() -> None:
    assert PAGE.read_bytes().decode("utf-8") == render_markdown(), f"run: {REGENERATE}"


def test_the_module_prints_the_page() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "continuity.errors.catalogue"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    assert printed.decode("utf-8") == render_markdown()


def test_every_class_has_a_section_and_every_code_a_row() -> None:
    page = render_markdown()
    for _depth, cls in class_tree():
        assert f"\n## `{cls.__name__}`\n" in page, cls
    for entry in ENTRIES:
        assert f"| `{entry.code}{entry.suffix}` | {entry.meaning}" in page, entry.code


def test_a_section_follows_the_tree_and_marks_its_notes() -> None:
    entries = (
        Entry("usage_error", "UsageError", "the default", "continuity.errors.types"),
        Entry("a_code", "UsageError", "one thing", "continuity.argv", suffix=":<id>"),
        Entry("b_code", "ArmError", "another", "continuity.arms", kind="reported"),
        Entry("c_code", "ArmError", "a third", "continuity.arms", also=("UsageError",)),
    )
    page = render_markdown(entries)
    assert "  - [`UsageError`](#usageerror) (2 codes)\n" in page
    assert "    - [`LookupError_`](#lookuperror_) (0 codes)\n" in page
    assert "| `usage_error` | the default *(default code)* |" in page
    assert "| `a_code:<id>` | one thing | `continuity.argv` |" in page
    assert "| `b_code` | another *(reported, never raised)* |" in page
    assert "| `c_code` | a third *(also carried by `UsageError`)* |" in page
    assert page.index("## `UsageError`") < page.index("## `LookupError_`")
    assert page.index("## `LookupError_`") < page.index("## `ArmError`")
    assert page.endswith("|\n") and not page.endswith("\n\n")
