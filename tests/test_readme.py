"""The README a newcomer reads: short, the Quick start as it is, links that resolve, and
no figure or name that drifts from the code without a test noticing.

The full manual lives in docs/ (an mkdocs site); README.md, CHANGELOG.md and
CONTRIBUTING.md link into it by relative path, so the links also work on GitHub.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from continuity.arms import LOOKUP_ONLY, OPT_IN, arm_ids

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
FRONT_FILES = ("README.md", "CHANGELOG.md", "CONTRIBUTING.md")
MAX_LINES = 300

QUICK_START = (
    "python3 -m pip install -e . && python3 -m doit offline_contract\n"
    "python3 -m pip install -e '.[test]' && python3 -m pytest\n"
)

# The documentation site's pages the front files link to (docs/<page>.md).
DOCS_PAGES = (
    "index",
    "getting-started",
    "concepts",
    "traces",
    "scoring",
    "reports",
    "real-models",
    "outside-agents",
    "ci-gating",
    "holdouts",
    "lookup",
    "comparisons",
    "spend",
    "failure",
    "store",
    "scale-out",
    "ledger",
    "qualification",
    "cli",
    "architecture",
    "performance",
    "errors",
    "validity",
    "locomo",
)

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _text(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8")


def _prose(text: str) -> str:
    """The text outside fenced code blocks (code shows files as they are)."""
    return _FENCE.sub("", text)


def _section(text: str, heading: str) -> str:
    """The body of the level-2 section ``## heading``, up to the next level-2 heading."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no section '## {heading}'"
    return match.group(1)


def _relative_links(name: str) -> list[str]:
    """Every link target in a front file that is not a URL or a bare anchor."""
    targets = [m.group(1) for m in _LINK.finditer(_prose(_text(name)))]
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t) and t[:1] != "#"]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def _anchors(text: str) -> set[str]:
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", _prose(text), re.M)}


def test_the_readme_has_at_most_300_lines() -> None:
    assert len(_text("README.md").splitlines()) <= MAX_LINES


def test_the_quick_start_is_the_two_command_lines_in_one_fenced_block() -> None:
    blocks = _FENCE.findall(_section(_text("README.md"), "Quick start"))
    assert blocks == [QUICK_START]


def test_the_readme_sections_come_in_the_newcomers_order() -> None:
    headings = re.findall(r"^## (.+)$", _prose(_text("README.md")), re.M)
    assert headings == [
        "Quick start",
        "Measure a real model",
        "Measure your own agent",
        "Compare and gate in CI",
        "Glossary",
        "Limitations",
        "Links",
    ]


def test_the_glossary_defines_every_term() -> None:
    glossary = _section(_text("README.md"), "Glossary")
    defined = set(re.findall(r"^- \*\*(\w+)\*\*:", glossary, re.M))
    wanted = {"Trace", "Probe", "Arm", "Boundary", "Unit", "Run", "Plan", "Availability"}
    assert wanted <= defined, sorted(wanted - defined)


def test_the_arm_table_lists_every_runnable_arm() -> None:
    """The README's arm table names exactly the arms a plan can select: the default
    ones, the opt-in ones and the lookup-only ones (`doit arms` shows the rest)."""
    glossary = _section(_text("README.md"), "Glossary")
    listed = re.findall(r"^\| `([^`]+)` \|", glossary, re.M)
    assert len(listed) == len(set(listed))
    assert set(listed) == set(arm_ids()) | OPT_IN | LOOKUP_ONLY


def test_the_readme_shows_the_minimal_manifest_as_it_is() -> None:
    manifest = _text("examples/agents/minimal/agent.toml")
    assert f"```toml\n{manifest}```" in _text("README.md")


def test_the_screenshot_is_there_and_small() -> None:
    assert "](docs/img/report.png)" in _text("README.md")
    assert (REPO / "docs" / "img" / "report.png").stat().st_size < 400 * 1024


@pytest.mark.parametrize("name", FRONT_FILES)
def test_no_issue_numbers_seed_references_or_history(name: str) -> None:
    prose = _prose(_text(name))
    for pattern in (r"\bissues? \d+", r"\bseed \d{3}\b", r"\bspend controller I"):
        assert not re.search(pattern, prose, re.I), (name, pattern)


def test_the_readme_uses_no_undefined_internal_names() -> None:
    prose = _prose(_text("README.md"))
    for name in ("soul", "R0", "Rpack", "zygote"):
        assert not re.search(rf"\b{name}\b", prose), name


@pytest.mark.parametrize("name", FRONT_FILES)
def test_relative_links_outside_the_docs_pages_resolve_inside_the_repository(
    name: str,
) -> None:
    for target in _relative_links(name):
        path, _, anchor = target.partition("#")
        resolved = (REPO / path).resolve()
        assert resolved.is_relative_to(REPO), (name, target)
        if resolved.parent == REPO / "docs" and resolved.suffix == ".md":
            continue  # a page of the docs site: the next test
        assert resolved.exists(), (name, target)
        if anchor and resolved.name in FRONT_FILES:
            assert anchor in _anchors(resolved.read_text(encoding="utf-8")), (name, target)


@pytest.mark.parametrize("name", FRONT_FILES)
def test_links_into_the_docs_site_name_its_pages_and_the_pages_exist(name: str) -> None:
    """Links to docs/<page>.md: the page is one of the site's and exists."""
    for target in _relative_links(name):
        path = target.partition("#")[0]
        resolved = (REPO / path).resolve()
        if resolved.parent == REPO / "docs" and resolved.suffix == ".md":
            assert resolved.stem in DOCS_PAGES, (name, target)
            assert resolved.exists(), (name, target)


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {
        Path(t.partition("#")[0]).stem
        for t in _relative_links("README.md")
        if t.startswith("docs/") and t.partition("#")[0].endswith(".md")
    }
    assert linked == set(DOCS_PAGES)


def test_the_contract_time_the_readme_gives_is_the_one_measured() -> None:
    """docs/performance.md records the contract's median (benchmarks/bench_contract.py);
    the Quick start's figure is within 5 s of it."""
    performance = _text("docs/performance.md")
    measured = re.findall(
        r"`doit offline_contract` from an empty store, median of \d+ \| .*?\*\*([\d.]+) s\*\*",
        performance,
    )
    said = re.findall(r"About (\d+) s on two idle cores", _text("README.md"))
    assert measured and len(said) == 1, (measured, said)
    assert abs(int(said[0]) - float(measured[-1])) <= 5, (said, measured)
