"""The documentation site: docs/cli.md is the CLI reference rendered, byte for byte;
every page the nav of mkdocs.yml names exists; and ``mkdocs build --strict`` (a dead link,
a missing anchor or a missing nav page fails it) succeeds.

After changing a task's help, regenerate the page with
``python3 -m continuity.commands.reference > docs/cli.md``. Without mkdocs the build test
skips, except under CI (where .ci/run installs the ``docs`` extra): there it fails.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.commands import reference
from continuity.commands.reference import REGENERATE, render_markdown, task_names

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
CONFIG = REPO / "mkdocs.yml"
CLI_PAGE = DOCS / "cli.md"


def test_the_cli_page_is_the_rendered_help() -> None:
    assert CLI_PAGE.read_bytes().decode("utf-8") == render_markdown(), f"run: {REGENERATE}"


def test_the_module_prints_the_page(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(reference, "render_markdown", lambda: "# CLI reference\n")
    reference.main()
    assert capsys.readouterr().out == "# CLI reference\n"


def test_every_task_has_a_section_in_the_order_doit_lists_them() -> None:
    page = CLI_PAGE.read_text(encoding="utf-8")
    listing = page.split("```text\n", 1)[1].split("```", 1)[0]
    names = task_names(listing)
    assert "units" in names and "offline_contract" in names
    headings = re.findall(r"^## `([a-z_]+)`$", page, flags=re.MULTILINE)
    assert headings == names


def test_task_names_skip_headings_and_indented_lines() -> None:
    listing = "Everyday tasks:\nunits     Run units.\n  --suite  a suite\n\naggregate  Agg.\n"
    assert task_names(listing) == ["units", "aggregate"]


def _nav_pages() -> list[str]:
    nav = CONFIG.read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    return re.findall(r"^\s*- (?:[^:\n]+: )?(\S+\.md)\s*$", nav, flags=re.MULTILINE)


def test_every_page_the_nav_names_exists() -> None:
    pages = _nav_pages()
    assert "index.md" in pages and "cli.md" in pages and "errors.md" in pages
    assert len(pages) == len(set(pages)), pages
    missing = [page for page in pages if not (DOCS / page).is_file()]
    assert not missing, missing


def test_every_markdown_page_is_in_the_nav() -> None:
    on_disk = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(_nav_pages()) == on_disk


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        if "CI" in os.environ:
            pytest.fail("mkdocs is missing under CI: .ci/run installs the docs extra")
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]'); CI installs it")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "index.html").is_file()
    assert (tmp_path / "cli" / "index.html").is_file()


# An issue number ("issue 14", "issues 22-28") or a seed's line numbers mean nothing to a
# reader of the documentation; the project's history is in CHANGELOG.md and git. (The
# front files, README.md and the rest, have their own test: tests/test_readme.py.)
_INTERNAL = re.compile(r"\bissues? #?\d+|\bseed (?:line|lines) \d+|\b0{2}[04]_[0-9a-f]{16}\b", re.I)


def test_user_docs_name_no_issue_numbers_or_seed_lines() -> None:
    pages = sorted(DOCS.rglob("*.md"))
    found = [
        f"{page.relative_to(REPO)}:{number}: {line.strip()}"
        for page in pages
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if _INTERNAL.search(line)
    ]
    assert not found, found
